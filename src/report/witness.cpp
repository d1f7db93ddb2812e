#include "report/witness.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/file_write.h"
#include "data/npz.h"
#include "engine/executor.h"
#include "engine/grad_scaler.h"
#include "engine/scaled_step.h"
#include "onnx/import.h"
#include "report/hunt_report.h"
#include "report/run_report.h"
#include "util/input_file.h"
#include "util/sha256.h"

namespace grist {

namespace fs = std::filesystem;

namespace {

nlohmann::json optimizer_json(const OptimizerConfig& c) {
  return {{"kind", std::string(optimizer_kind_name(c.kind))},
          {"framework", c.flavor == Framework::TensorFlow ? "tensorflow" : "pytorch"},
          {"lr", c.lr},
          {"momentum", c.momentum},
          {"nesterov", c.nesterov},
          {"beta1", c.beta1},
          {"beta2", c.beta2},
          {"epsilon", c.epsilon},
          {"decay", c.decay},
          {"centered", c.centered},
          {"initial_accumulator", c.initial_accumulator},
          {"weight_decay", c.weight_decay}};
}

Result<OptimizerConfig> optimizer_from_json(const nlohmann::json& j) {
  auto kind = parse_optimizer_kind(j.at("kind").get<std::string>());
  if (!kind) return kind.error();
  OptimizerConfig c;
  c.kind = *kind;
  c.flavor = j.at("framework").get<std::string>() == "tensorflow" ? Framework::TensorFlow : Framework::PyTorch;
  c.lr = j.at("lr").get<double>();
  c.momentum = j.at("momentum").get<double>();
  c.nesterov = j.at("nesterov").get<bool>();
  c.beta1 = j.at("beta1").get<double>();
  c.beta2 = j.at("beta2").get<double>();
  c.epsilon = j.at("epsilon").get<double>();
  c.decay = j.at("decay").get<double>();
  c.centered = j.at("centered").get<bool>();
  c.initial_accumulator = j.at("initial_accumulator").get<double>();
  c.weight_decay = j.at("weight_decay").get<double>();
  return c;
}

// The optimizer's slots in the archive: optimizer.first:NAME, optimizer.second:NAME, optimizer.mean:NAME.
void add_optimizer_state(NamedTensors& arrays, const std::vector<std::string>& params, const OptimizerState& st) {
  const std::pair<const char*, const std::vector<Tensor>*> slots[] = {
      {"first", &st.first}, {"second", &st.second}, {"mean", &st.mean}};
  for (const auto& [slot, tensors] : slots)
    for (size_t k = 0; k < params.size() && k < tensors->size(); ++k)
      if ((*tensors)[k].defined()) arrays.emplace_back(fmt::format("optimizer.{}:{}", slot, params[k]), (*tensors)[k]);
}

// The sidecar: how to reproduce the finding, and what it is.
nlohmann::json witness_json(const HazardOutcome& o, const Manifest& manifest, const std::string& model_path,
                            const std::string& hash, const fs::path& npz_path, const fs::path& json_path) {
  const SearchConfig& c = manifest.search;
  nlohmann::json j;
  j["grist_witness"] = 1;
  j["model"] = fs::absolute(model_path).string();
  j["model_sha256"] = hash;
  j["npz"] = npz_path.filename().string();
  j["hazard"] = {{"id", o.site.id}, {"node", o.site.node_name}, {"op", o.site.op_type},
                 {"condition", o.site.condition}, {"objective", std::string(objective_name(o.site.objective))}};
  j["producer"] = to_json(o.event);
  j["pass"] = std::string(pass_name(o.pass));
  j["class"] = std::string(finding_class_name(o.finding_class));
  j["iteration"] = o.iterations;
  j["seconds"] = o.seconds;
  j["strategy"] = o.strategy;
  j["dropout"] = o.witness.dropout;
  j["ftz"] = manifest.ftz;
  j["precision"] = std::string(precision_name(manifest.precision));
  j["loss"] = manifest.loss;
  j["seed"] = c.seed;
  j["rng_state"] = o.witness.rng_state;
  j["config"] = {{"time_limit", c.time_limit}, {"change", c.change},       {"decay", c.decay},
                 {"decay_steps", c.decay_steps}, {"decay_rate", c.decay_rate}, {"switch_data", c.switch_data},
                 {"drop_rate", c.drop_rate},   {"switch_every", c.switch_every}, {"manifest", manifest.path},
                 {"weight_change", c.weight_change}, {"weights_after", c.weights_after},
                 // The rule the data inputs were stepped by (the faithful loop takes the sign step whatever
                 // was asked): the same witness data is reached differently under another, so a rerun needs it.
                 // None when the variant draws its inputs (original, random).
                 {"step", steps_inputs(c.variant)
                              ? nlohmann::json(step_rule_name(c.faithful ? StepRule::Sign : c.step))
                              : nlohmann::json()}};
  j["weights_from_iteration"] = o.weights_from;
  if (o.weights_race) j["weights_race"] = true;    // the twin of SearchConfig::race_weights found it
  if (o.training_race) j["training_race"] = true;  // the twin of SearchConfig::race_training found it
  j["training_from_iteration"] = o.training_from;
  if (!o.witness.trained.empty()) j["trained"] = o.witness.trained;
  if (!o.witness.training.empty()) {
    nlohmann::json rng = nlohmann::json::array();
    for (const auto& step : o.witness.training) rng.push_back(step.rng_state);
    j["training"] = {{"steps", o.witness.training.size()},
                     {"optimizer", optimizer_json(manifest.train.optimizer)},
                     {"optimizer_steps", o.witness.optimizer ? o.witness.optimizer->steps : 0},
                     {"dropout", manifest.train.dropout},
                     {"rng_states", rng}};
  }
  if (o.witness.scaler)
    j["loss_scaler"] = {{"scale", o.witness.scaler->scale}, {"growth_tracker", o.witness.scaler->growth_tracker},
                        {"skipped_steps", o.witness.scaler->skipped_steps}};
  if (!o.weight_moves.empty()) {
    nlohmann::json moves = nlohmann::json::array();
    for (const auto& m : o.weight_moves) moves.push_back(to_json(m));
    j["weight_moves"] = moves;
  }
  j["replay"] = fmt::format("grist replay {}", json_path.string());
  return j;
}

}  // namespace

Status prepare_witness_folder(const std::string& out_dir) {
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    GRIST_CHECK(fs::is_directory(out_dir, ec), "{}: exists and is not a folder; witnesses need a folder (--out)",
                out_dir);
  } else {
    fs::create_directories(out_dir, ec);
    GRIST_CHECK(!ec, "{}: cannot create the witness folder: {}", out_dir, ec.message());
  }
  // Writable? A probe file, created and removed: access(2) says yes to root on a read-only mount.
  const std::string probe = (fs::path(out_dir) / fmt::format(".grist-probe-{}", ::getpid())).string();
  auto st = write_new_file(probe, "");
  GRIST_CHECK(st, "{}: cannot write witnesses there: {}", out_dir, st.message());
  fs::remove(probe, ec);
  return Status::ok();
}

Result<WitnessFiles> write_witness(const std::string& out_dir, const std::string& model_path,
                                   const Manifest& manifest, const HazardOutcome& o) {
  GRIST_TRY(prepare_witness_folder(out_dir));
  NamedTensors arrays;
  for (const auto& [name, t] : o.witness.inputs) arrays.emplace_back("input:" + name, t);
  for (const auto& [name, t] : o.witness.weights) arrays.emplace_back("weight:" + name, t);
  for (size_t k = 0; k < o.witness.training.size(); ++k)
    for (const auto& [name, t] : o.witness.training[k].batch) arrays.emplace_back(fmt::format("step.{}:{}", k, name), t);
  if (o.witness.optimizer) add_optimizer_state(arrays, o.witness.trained, *o.witness.optimizer);
  auto hash = sha256_file(model_path);
  if (!hash) return hash.error();
  const std::string stem = fs::path(model_path).stem().string();
  // The first free name; each file appears whole (written beside and linked into place) and never replaces
  // one: a second hunt writing into the same folder takes the next name.
  for (int n = 1; n < 10000; ++n) {
    const std::string base = fmt::format("witness-{}-h{}{}", stem, o.site.id, n > 1 ? fmt::format("-{}", n) : "");
    const fs::path json_path = fs::path(out_dir) / (base + ".json"), npz_path = fs::path(out_dir) / (base + ".npz");
    std::error_code ec;
    if (fs::exists(json_path, ec) || fs::exists(npz_path, ec)) continue;
    if (!write_npz(npz_path.string(), arrays)) {
      if (fs::exists(npz_path, ec)) continue;  // taken meanwhile
      return write_npz(npz_path.string(), arrays).error();
    }
    const std::string json = witness_json(o, manifest, model_path, *hash, npz_path, json_path).dump(2) + "\n";
    auto st = write_new_file(json_path.string(), json);
    if (st) return WitnessFiles{npz_path.string(), json_path.string()};
    fs::remove(npz_path, ec);
    if (!fs::exists(json_path, ec)) return st.error();
  }
  return make_error("{}: no free witness name", out_dir);
}

namespace {

// A witness's sidecar JSON, checked to be one: a regular file of bounded size holding grist's keys.
Result<nlohmann::json> read_sidecar(const std::string& json_path) {
  GRIST_TRY(check_input_file(json_path, kMaxTextBytes, "a witness sidecar"));
  std::ifstream f(json_path);
  GRIST_CHECK(f.good(), "{}: cannot open file", json_path);
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    return make_error("{}: not a grist witness (invalid JSON: {})", json_path, e.what());
  }
  GRIST_CHECK(j.is_object() && j.contains("grist_witness") && j.contains("model") && j.contains("npz"),
              "{}: not a grist witness (the sidecar JSON that `grist hunt` writes)", json_path);
  return j;
}

}  // namespace

Result<ReplayResult> replay_witness(const std::string& json_path) {
  auto sidecar = read_sidecar(json_path);
  if (!sidecar) return sidecar.error();
  const nlohmann::json& j = *sidecar;
  ReplayResult r;
  try {
    const std::string model = j.at("model").get<std::string>();
    const fs::path npz = fs::path(json_path).parent_path() / j.at("npz").get<std::string>();
    r.expected_node = j.at("producer").at("node").get<std::string>();
    // Witnesses written before the step rule was recorded, or by a variant that draws its inputs, leave it empty.
    if (j.contains("config") && j.at("config").contains("step") && j.at("config").at("step").is_string())
      r.step = j.at("config").at("step").get<std::string>();
    auto pass = parse_pass_name(j.at("pass").get<std::string>());
    if (!pass) return make_error("{}: {}", json_path, pass.message());
    auto hash = sha256_file(model);
    if (!hash) return make_error("{}: the model it was found on is gone: {}", json_path, hash.message());
    GRIST_CHECK(*hash == j.at("model_sha256").get<std::string>(),
                "{}: {} has changed since the witness was saved (SHA-256 differs): replaying on another model "
                "proves nothing", json_path, model);
    auto g = import_onnx_file(model);
    if (!g) return g.error();
    ExecutorOptions eo;
    eo.flush_denormals = j.at("ftz").get<bool>();
    // Witnesses written before half precision have no "precision": they were found in float32.
    auto precision = parse_precision(j.value("precision", std::string("fp32")));
    if (!precision) return make_error("{}: {}", json_path, precision.message());
    eo.precision = *precision;
    auto ex = Executor::create(*g, eo);
    if (!ex) return ex.error();
    auto arrays = read_npz(npz.string());
    if (!arrays) return arrays.error();
    // input:NAME, weight:NAME; step.K:NAME and optimizer.SLOT:NAME for a training-reached finding.
    std::map<std::string, Tensor> inputs;
    std::vector<std::map<std::string, Tensor>> steps;
    std::map<std::string, std::map<std::string, Tensor>> slots;
    for (auto& [key, t] : *arrays) {
      auto colon = key.find(':');
      GRIST_CHECK(colon != std::string::npos, "{}: unexpected array '{}'", npz.string(), key);
      const std::string kind = key.substr(0, colon), name = key.substr(colon + 1);
      if (kind == "input") {
        inputs[name] = std::move(t);
      } else if (kind == "weight") {
        auto st = ex->set_input(name, t);
        if (!st) return make_error("{}: {}", npz.string(), st.message());
      } else if (kind.rfind("step.", 0) == 0) {
        const size_t k = std::stoul(kind.substr(5));
        GRIST_CHECK(k < 1000000, "{}: unexpected array '{}'", npz.string(), key);
        if (steps.size() <= k) steps.resize(k + 1);
        steps[k][name] = std::move(t);
      } else if (kind.rfind("optimizer.", 0) == 0) {
        slots[kind.substr(10)][name] = std::move(t);
      } else {
        return make_error("{}: unexpected array '{}'", npz.string(), key);
      }
    }
    const std::string loss_name = j.at("loss").get<std::string>();
    const ValueId loss = loss_name.empty() ? kNoValue : g->find_value(loss_name);
    std::optional<Optimizer> opt;
    std::vector<ValueId> params;  // the weights the program trains: its backward's wanted gradients
    // amp-* training: the loss scaler as the hunt had it there; the training passes' backwards are seeded with
    // its scale and their steps go through it (witnesses without one replay unscaled).
    std::optional<GradScaler> scaler;
    if (j.contains("loss_scaler")) {
      const nlohmann::json& s = j.at("loss_scaler");
      scaler.emplace();
      scaler->set_state({s.at("scale").get<float>(), s.at("growth_tracker").get<int64_t>(),
                         s.at("skipped_steps").get<int64_t>()});
    }
    Tensor scale_seed;
    GradScaler* scaling = scaler ? &*scaler : nullptr;
    if (j.contains("trained"))
      for (const auto& name : j.at("trained").get<std::vector<std::string>>()) {
        const ValueId id = g->find_value(name);
        GRIST_CHECK(id != kNoValue, "{}: the trained weight '{}' is not in the model", json_path, name);
        params.push_back(id);
      }
    if (j.contains("training")) {
      // Training-reached: the model's own optimizer, from the recorded state, on the crafted batches.
      const nlohmann::json& t = j.at("training");
      GRIST_CHECK(loss != kNoValue, "{}: the loss '{}' is not in the model", json_path, loss_name);
      auto config = optimizer_from_json(t.at("optimizer"));
      if (!config) return make_error("{}: {}", json_path, config.message());
      OptimizerState state;
      state.steps = t.at("optimizer_steps").get<int64_t>();
      for (ValueId id : params) {
        const std::string& name = g->value(id).name;
        for (auto [slot, into] : {std::pair{"first", &state.first}, {"second", &state.second}, {"mean", &state.mean}}) {
          auto it = slots[slot].find(name);
          into->push_back(it == slots[slot].end() ? Tensor{} : std::move(it->second));
        }
      }
      opt.emplace(*config, params);
      opt->set_state(std::move(state));
      const auto rng = t.at("rng_states").get<std::vector<std::string>>();
      GRIST_CHECK(rng.size() == steps.size() && steps.size() == t.at("steps").get<size_t>(),
                  "{}: the witness lists {} training steps, its archive holds {}", json_path, rng.size(), steps.size());
      ex->options().dropout_training = t.at("dropout").get<bool>();
      for (size_t k = 0; k < steps.size(); ++k) {
        if (!rng[k].empty() && !ex->rng().set_state(rng[k]))
          return make_error("{}: the recorded random state of training step {} is malformed", json_path, k);
        for (const auto& [name, x] : steps[k]) {
          auto st = ex->set_input(name, x);
          if (!st) return make_error("{}: step {}: {}", npz.string(), k, st.message());
        }
        GRIST_TRY(ex->forward());
        GRIST_TRY(training_backward(*ex, loss, params, scaling, scale_seed));
        GRIST_TRY(training_update(*ex, *opt, scaling));
      }
      r.training_steps = static_cast<int64_t>(steps.size());
    } else if (*pass == TriggerPass::OptimizerStep) {
      r.message = "not replayed: the trigger was an optimizer update, whose internal state (moments, "
                  "accumulators) this witness does not record";
      return r;
    }
    for (const auto& [name, x] : inputs) {
      auto st = ex->set_input(name, x);
      if (!st) return make_error("{}: {}", npz.string(), st.message());
    }
    ex->options().dropout_training = j.at("dropout").get<bool>();
    if (!ex->rng().set_state(j.at("rng_state").get<std::string>()))
      return make_error("{}: the recorded random state is malformed", json_path);
    GRIST_TRY(ex->forward());
    r.event = ex->forward_event();
    const bool backward_pass = *pass == TriggerPass::TrainingBackward || *pass == TriggerPass::LossBackward ||
                               *pass == TriggerPass::OptimizerStep;
    if (backward_pass && !r.event.found) {
      GRIST_CHECK(loss != kNoValue, "{}: the loss '{}' is not in the model", json_path, loss_name);
      // The backward of the pass it was found in: towards the trained weights, or (a model that does not
      // train) towards the data inputs.
      std::vector<ValueId> wrt = params;
      if (wrt.empty() && *pass == TriggerPass::LossBackward)
        for (const auto& [name, x] : inputs) wrt.push_back(g->find_value(name));
      if (*pass == TriggerPass::LossBackward) GRIST_TRY(ex->backward(loss, wrt));
      else GRIST_TRY(training_backward(*ex, loss, wrt, scaling, scale_seed));
      r.event = ex->backward_event();
      if (*pass == TriggerPass::OptimizerStep && !r.event.found && opt) {
        GRIST_TRY(training_update(*ex, *opt, scaling));
        for (ValueId id : params)
          if (!all_finite(ex->value(id))) {
            r.event.found = true;
            r.event.node_name = "optimizer";
            r.event.op_type = std::string(optimizer_kind_name(opt->config().kind));
            r.event.value_name = g->value(id).name;
            break;
          }
      }
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
  auto sidecar = read_sidecar(json_path);
  if (!sidecar) return sidecar.error();
  const nlohmann::json& j = *sidecar;
  WitnessData w;
  try {
    w.model = j.at("model").get<std::string>();
    w.producer = j.at("producer").at("node").get<std::string>();
    w.hazard_id = j.at("hazard").at("id").get<int>();
    w.hazard_node = j.at("hazard").at("node").get<std::string>();
    auto pass = parse_pass_name(j.at("pass").get<std::string>());
    if (!pass) return make_error("{}: {}", json_path, pass.message());
    w.pass = *pass;
    w.loss = j.at("loss").get<std::string>();
    w.dropout = j.at("dropout").get<bool>();
    w.ftz = j.at("ftz").get<bool>();
    w.rng_state = j.at("rng_state").get<std::string>();
    auto precision = parse_precision(j.value("precision", std::string("fp32")));
    if (!precision) return make_error("{}: {}", json_path, precision.message());
    w.precision = *precision;
    if (j.contains("loss_scaler")) w.loss_scale = j.at("loss_scaler").at("scale").get<float>();
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
  eo.precision = w.precision;
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
    // Seeded as the trigger's backward was: by GradScaler's scale where the witness carries one.
    std::optional<GradScaler> scaler;
    if (w.loss_scale) {
      scaler.emplace();
      scaler->set_state({*w.loss_scale, 0, 0});
    }
    Tensor seed;
    GRIST_TRY(training_backward(*ex, loss, {}, scaler ? &*scaler : nullptr, seed));
    return ex->backward_event();
  }
  return NonFiniteEvent{};
}

}  // namespace grist
