#include "report/witness.h"

#include <filesystem>
#include <fstream>

#include "data/npz.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "report/run_report.h"
#include "util/sha256.h"

namespace grist {

namespace fs = std::filesystem;

namespace {

Result<TriggerPass> parse_pass(const std::string& s) {
  for (TriggerPass p : {TriggerPass::Monitored, TriggerPass::TrainingForward, TriggerPass::TrainingBackward, TriggerPass::LossBackward,
                        TriggerPass::OptimizerStep})
    if (pass_name(p) == s) return p;
  return make_error("unknown pass '{}'", s);
}

// Creates `path` exclusively so two hunts never write over each other.
bool claim(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "wx");
  if (!f) return false;
  std::fclose(f);
  return true;
}

}  // namespace

Result<WitnessFiles> write_witness(const std::string& out_dir, const std::string& model_path,
                                   const Manifest& manifest, const HazardOutcome& o) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  GRIST_CHECK(!ec, "{}: cannot create the witness folder: {}", out_dir, ec.message());
  const std::string stem = fs::path(model_path).stem().string();
  fs::path json_path, npz_path;
  for (int n = 1;; ++n) {
    std::string base = fmt::format("witness-{}-h{}{}", stem, o.site.id, n > 1 ? fmt::format("-{}", n) : "");
    json_path = fs::path(out_dir) / (base + ".json");
    npz_path = fs::path(out_dir) / (base + ".npz");
    if (!fs::exists(npz_path) && claim(json_path)) break;
    GRIST_CHECK(n < 10000, "{}: no free witness name", out_dir);
  }
  NamedTensors arrays;
  for (const auto& [name, t] : o.witness.inputs) arrays.emplace_back("input:" + name, t);
  for (const auto& [name, t] : o.witness.weights) arrays.emplace_back("weight:" + name, t);
  auto st = write_npz(npz_path.string(), arrays);
  if (!st) {
    fs::remove(json_path, ec);
    return st.error();
  }
  auto hash = sha256_file(model_path);
  if (!hash) return hash.error();

  const SearchConfig& c = manifest.search;
  nlohmann::json j;
  j["grist_witness"] = 1;
  j["model"] = fs::absolute(model_path).string();
  j["model_sha256"] = *hash;
  j["npz"] = npz_path.filename().string();
  j["hazard"] = {{"id", o.site.id}, {"node", o.site.node_name}, {"op", o.site.op_type},
                 {"condition", o.site.condition}, {"objective", std::string(objective_name(o.site.objective))}};
  j["producer"] = to_json(o.event);
  j["pass"] = std::string(pass_name(o.pass));
  j["iteration"] = o.iterations;
  j["seconds"] = o.seconds;
  j["strategy"] = o.strategy;
  j["dropout"] = o.witness.dropout;
  j["ftz"] = manifest.ftz;
  j["loss"] = manifest.loss;
  j["seed"] = c.seed;
  j["rng_state"] = o.witness.rng_state;
  j["config"] = {{"time_limit", c.time_limit}, {"change", c.change},       {"decay", c.decay},
                 {"decay_steps", c.decay_steps}, {"decay_rate", c.decay_rate}, {"switch_data", c.switch_data},
                 {"drop_rate", c.drop_rate},   {"switch_every", c.switch_every}, {"manifest", manifest.path},
                 {"weight_change", c.weight_change}, {"weights_after", c.weights_after}};
  j["weights_from_iteration"] = o.weights_from;
  j["replay"] = fmt::format("grist replay {}", json_path.string());
  std::ofstream f(json_path);
  f << j.dump(2) << "\n";
  GRIST_CHECK(f.good(), "{}: cannot write", json_path.string());
  return WitnessFiles{npz_path.string(), json_path.string()};
}

Result<ReplayResult> replay_witness(const std::string& json_path) {
  nlohmann::json j;
  {
    std::ifstream f(json_path);
    GRIST_CHECK(f.good(), "{}: cannot open file", json_path);
    try {
      f >> j;
    } catch (const std::exception& e) {
      return make_error("{}: not a grist witness (invalid JSON: {})", json_path, e.what());
    }
  }
  GRIST_CHECK(j.is_object() && j.contains("grist_witness") && j.contains("model") && j.contains("npz"),
              "{}: not a grist witness (the sidecar JSON that `grist hunt` writes)", json_path);
  ReplayResult r;
  try {
    const std::string model = j.at("model").get<std::string>();
    const fs::path npz = fs::path(json_path).parent_path() / j.at("npz").get<std::string>();
    r.expected_node = j.at("producer").at("node").get<std::string>();
    auto pass = parse_pass(j.at("pass").get<std::string>());
    if (!pass) return make_error("{}: {}", json_path, pass.message());
    auto hash = sha256_file(model);
    if (!hash) return make_error("{}: the model it was found on is gone: {}", json_path, hash.message());
    GRIST_CHECK(*hash == j.at("model_sha256").get<std::string>(),
                "{}: {} has changed since the witness was saved (SHA-256 differs): replaying on another model "
                "proves nothing", json_path, model);
    if (*pass == TriggerPass::OptimizerStep) {
      r.message = "not replayed: the trigger was an optimizer update, whose internal state (moments, "
                  "accumulators) a witness does not record yet";
      return r;
    }
    auto g = import_onnx_file(model);
    if (!g) return g.error();
    ExecutorOptions eo;
    eo.flush_denormals = j.at("ftz").get<bool>();
    eo.dropout_training = j.at("dropout").get<bool>();
    auto ex = Executor::create(*g, eo);
    if (!ex) return ex.error();
    if (!ex->rng().set_state(j.at("rng_state").get<std::string>()))
      return make_error("{}: the recorded random state is malformed", json_path);
    auto arrays = read_npz(npz.string());
    if (!arrays) return arrays.error();
    for (const auto& [key, t] : *arrays) {
      auto colon = key.find(':');
      GRIST_CHECK(colon != std::string::npos, "{}: unexpected array '{}'", npz.string(), key);
      auto st = ex->set_input(key.substr(colon + 1), t);
      if (!st) return make_error("{}: {}", npz.string(), st.message());
    }
    GRIST_TRY(ex->forward());
    r.event = ex->forward_event();
    if ((*pass == TriggerPass::TrainingBackward || *pass == TriggerPass::LossBackward) && !r.event.found) {
      const std::string loss = j.at("loss").get<std::string>();
      ValueId id = g->find_value(loss);
      GRIST_CHECK(id != kNoValue, "{}: the loss '{}' is not in the model", json_path, loss);
      GRIST_TRY(ex->backward(id));
      r.event = ex->backward_event();
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error("{}: a field is missing or of the wrong type: {}", json_path, e.what());
  }
  r.reproduced = r.event.found && r.event.node_name == r.expected_node;
  if (r.reproduced) {
    r.message = fmt::format("reproduced: {}", r.event.describe());
  } else if (r.event.found) {
    r.message = fmt::format("not reproduced: the first producer is now '{}', the witness recorded '{}'",
                            r.event.node_name, r.expected_node);
  } else {
    r.message = fmt::format("not reproduced: every value is finite now; the witness recorded '{}'", r.expected_node);
  }
  return r;
}

Result<WitnessData> read_witness(const std::string& json_path) {
  nlohmann::json j;
  {
    std::ifstream f(json_path);
    GRIST_CHECK(f.good(), "{}: cannot open file", json_path);
    try {
      f >> j;
    } catch (const std::exception& e) {
      return make_error("{}: not a grist witness (invalid JSON: {})", json_path, e.what());
    }
  }
  GRIST_CHECK(j.is_object() && j.contains("grist_witness") && j.contains("model") && j.contains("npz"),
              "{}: not a grist witness (the sidecar JSON that `grist hunt` writes)", json_path);
  WitnessData w;
  try {
    w.model = j.at("model").get<std::string>();
    w.producer = j.at("producer").at("node").get<std::string>();
    w.hazard_id = j.at("hazard").at("id").get<int>();
    w.hazard_node = j.at("hazard").at("node").get<std::string>();
    auto pass = parse_pass(j.at("pass").get<std::string>());
    if (!pass) return make_error("{}: {}", json_path, pass.message());
    w.pass = *pass;
    w.loss = j.at("loss").get<std::string>();
    w.dropout = j.at("dropout").get<bool>();
    w.ftz = j.at("ftz").get<bool>();
    w.rng_state = j.at("rng_state").get<std::string>();
    const fs::path npz = fs::path(json_path).parent_path() / j.at("npz").get<std::string>();
    auto arrays = read_npz(npz.string());
    if (!arrays) return arrays.error();
    for (auto& [key, t] : *arrays) {
      const auto colon = key.find(':');
      GRIST_CHECK(colon != std::string::npos, "{}: unexpected array '{}'", npz.string(), key);
      auto& to = key.substr(0, colon) == "weight" ? w.weights : w.inputs;
      to.emplace_back(key.substr(colon + 1), std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error("{}: a field is missing or of the wrong type: {}", json_path, e.what());
  }
  return w;
}

Result<NonFiniteEvent> run_witness(const Graph& g, const WitnessData& w) {
  ExecutorOptions eo;
  eo.flush_denormals = w.ftz;
  eo.dropout_training = w.dropout;
  auto ex = Executor::create(g, eo);
  if (!ex) return ex.error();
  if (!ex->rng().set_state(w.rng_state)) return make_error("the witness's recorded random state is malformed");
  for (const auto& [name, t] : w.inputs) GRIST_TRY(ex->set_input(name, t));
  for (const auto& [name, t] : w.weights)
    if (g.find_value(name) != kNoValue) GRIST_TRY(ex->set_input(name, t));
  GRIST_TRY(ex->forward());
  if (ex->forward_event().found) return ex->forward_event();
  if (w.pass == TriggerPass::TrainingBackward || w.pass == TriggerPass::LossBackward) {
    const ValueId loss = g.find_value(w.loss);
    GRIST_CHECK(loss != kNoValue, "the loss '{}' is not in the model", w.loss);
    GRIST_TRY(ex->backward(loss));
    return ex->backward_event();
  }
  return NonFiniteEvent{};
}

}  // namespace grist
