// `grist hunt`: the GRIST search over every hazard of a model; `grist replay`: re-run a saved witness.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "cli/commands.h"
#include "config/manifest.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "report/hunt_report.h"
#include "report/witness.h"
#include "search/hunt.h"

namespace grist::cli {

namespace {

namespace fs = std::filesystem;

struct HuntFlags {
  std::string target_file;      // MODEL.onnx or MANIFEST.toml
  std::string manifest;
  std::string conf;
  std::string target;
  bool all = false;
  double time_limit = -1;       // minutes
  int64_t max_iterations = -1;
  std::string variant, switch_score;
  bool faithful = false;
  double change = -1;
  int64_t seed = -1;
  int64_t batch = -1;
  bool ftz = false;
  std::string out = "grist-witnesses";
  bool no_witness = false;
  bool no_scan = false;
  double step_weights = -1;
  double weights_after = -1;
  bool inputs_only = false;
  bool json = false;
  bool quiet = false;
};

// Builds the manifest from the files and flags: experiments.conf < manifest < command line.
Result<Manifest> resolve_manifest(const HuntFlags& f) {
  SearchConfig base;
  if (!f.conf.empty()) {
    auto ini = read_ini(f.conf);
    if (!ini) return ini.error();
    GRIST_TRY(apply_experiments_conf(*ini, f.conf, base));
  }
  Manifest m;
  std::string manifest_path = f.manifest;
  if (manifest_path.empty() && fs::path(f.target_file).extension() == ".toml") manifest_path = f.target_file;
  if (!manifest_path.empty()) {
    auto r = read_manifest(manifest_path, base);
    if (!r) return r.error();
    m = std::move(r).value();
    if (fs::path(f.target_file).extension() != ".toml") m.model = f.target_file;
  } else {
    m.model = f.target_file;
    m.search = base;
  }
  SearchConfig& c = m.search;
  if (f.time_limit > 0) c.time_limit = f.time_limit;
  if (f.time_limit == 0) return make_error("--time-limit must be positive (minutes)");
  if (f.max_iterations >= 0) c.max_iterations = f.max_iterations;
  if (f.change > 0) c.change = f.change;
  if (f.step_weights >= 0) {
    c.weight_change = f.step_weights;
    c.weights_after = 0;
  }
  if (f.weights_after >= 0) {  // an explicit fraction, without the 10 s cap
    c.weights_after = f.weights_after;
    c.weights_after_s = std::numeric_limits<double>::infinity();
  }
  if (f.inputs_only) c.weight_change = 0;
  if (f.seed >= 0) c.seed = static_cast<uint64_t>(f.seed);
  if (f.faithful) {
    c.faithful = true;
    c.weight_change = 0;
    c.switch_score = SwitchScore::Fifo;
  }
  if (!f.variant.empty()) {
    auto v = parse_variant(f.variant);
    if (!v) return make_error("--variant: {}", v.message());
    c.variant = *v;
    if (*v == Variant::GristNs) c.switch_data = false;
  }
  if (!f.switch_score.empty()) {
    auto s = parse_switch_score(f.switch_score);
    if (!s) return make_error("--switch-score: {}", s.message());
    c.switch_score = *s;
  }
  if (!f.target.empty()) m.target = f.target;
  if (f.ftz) m.ftz = true;
  if (f.batch > 0) m.batch_size = f.batch;
  return m;
}

// Without a manifest every float input is searched data drawn uniform in [0, 1) and every integer input
// a label drawn in [0, 10).
void default_inputs(const Graph& g, Manifest& m) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (m.inputs.count(v.name)) continue;
    InputSpec in;
    in.name = v.name;
    in.source = "uniform";
    if (is_float(v.dtype) || v.dtype == DType::Undefined) {
      in.role = InputRole::Data;
    } else {
      in.role = InputRole::Label;
      in.uniform_hi = 10;
    }
    m.inputs[v.name] = in;
  }
}

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { clear(); }
  void show(const Progress& p) {
    if (!enabled_) return;
    const double rate = p.elapsed_s > 0 ? static_cast<double>(p.iteration) / p.elapsed_s : 0;
    std::fprintf(stderr, "\r\033[K[%d/%d] %s  iteration %lld  %.0f it/s  objective %.4g  %.0f s left", p.hazard_index,
                 p.hazard_count, p.hazard.c_str(), static_cast<long long>(p.iteration), rate, p.objective,
                 std::max(0.0, p.budget_s - p.elapsed_s));
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

int hunt_main(const HuntFlags& f, std::chrono::steady_clock::time_point process_start) {
  auto manifest = resolve_manifest(f);
  if (!manifest) return fail(manifest.message());
  auto graph = import_onnx_file(manifest->model);
  if (!graph) return fail(graph.message());
  // A model grist cannot run is an error, not "nothing to hunt": its unknown ops (LSTM, say) are no
  // hazard site only because grist does not know them.
  if (auto runnable = Executor::create(*graph); !runnable)
    return fail(fmt::format("{}: {}", manifest->model, runnable.message()));
  default_inputs(*graph, *manifest);

  HuntOptions o;
  o.manifest = *manifest;
  o.batch_size = manifest->batch_size > 0 ? manifest->batch_size : 1;
  o.all = f.all;
  o.use_scan = !f.no_scan;
  o.process_start = process_start;
  ProgressLine line(!f.quiet && !f.json && isatty(fileno(stderr)));
  o.on_progress = [&line](const Progress& p) { line.show(p); };
  auto report = hunt(*graph, o);
  line.clear();
  if (!report) return fail(fmt::format("{}: {}", manifest->model, report.message()));

  HuntContext ctx;
  ctx.model = manifest->model;
  ctx.loss = manifest->loss;
  int triggered = 0;
  for (size_t i = 0; i < report->outcomes.size(); ++i) {
    const HazardOutcome& out = report->outcomes[i];
    if (!out.triggered) continue;
    ++triggered;
    if (f.no_witness) continue;
    auto files = write_witness(f.out, manifest->model, *manifest, out);
    if (!files) return fail(files.message());
    ctx.witnesses[static_cast<int>(i)] = *files;
  }
  if (f.json) {
    std::printf("%s\n", to_json(*graph, *report, ctx).dump(2).c_str());
  } else {
    std::printf("%s", to_text(*graph, *report, ctx).c_str());
  }
  return triggered > 0 ? kExitNonFinite : kExitClean;
}

int replay_main(const std::string& path, bool json) {
  auto r = replay_witness(path);
  if (!r) return fail(r.message());
  if (json) {
    nlohmann::json j{{"reproduced", r->reproduced}, {"expected_node", r->expected_node}, {"message", r->message}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s\n", r->message.c_str());
  }
  return r->reproduced ? kExitNonFinite : kExitClean;
}

}  // namespace

void add_hunt_command(CLI::App& app, Action& action) {
  static const auto process_start = std::chrono::steady_clock::now();
  auto f = std::make_shared<HuntFlags>();
  CLI::App* cmd = app.add_subcommand(
      "hunt",
      "Search for inputs that make the model produce NaN or Inf, the GRIST way: for every hazardous op (log, "
      "division, sqrt, exp, ...) step the data inputs against the gradient of an objective whose minimum is the "
      "failure, while the model's own training runs. Saves a replayable witness per trigger.\n"
      "Exit 0 nothing triggered, 1 triggered, 2 error.");
  cmd->add_option("model", f->target_file, "the ONNX model, or a manifest (.toml) naming it")->required();
  cmd->add_option("--manifest,-m", f->manifest, "the model's manifest (inputs, data, training; docs/MANIFEST.md)");
  cmd->add_option("--conf", f->conf, "a GRIST experiments.conf ([parameter] time_limit, change, switch_data, ...)");
  cmd->add_option("--target", f->target, "hunt only this hazard (node name or hazard number)");
  cmd->add_flag("--all", f->all, "go on after the first trigger and hunt every hazard");
  cmd->add_option("--time-limit", f->time_limit, "the budget in minutes, shared by the hazards (default 30)");
  cmd->add_option("--max-iterations", f->max_iterations, "stop each hazard's search after this many iterations");
  cmd->add_option("--variant", f->variant, "grist (default), grist-ns (no switching), original, random")
      ->check(CLI::IsMember({"grist", "grist-ns", "original", "random"}));
  cmd->add_option("--switch-score", f->switch_score, "score (intended, default) or fifo (as the study shipped)")
      ->check(CLI::IsMember({"score", "fifo"}));
  cmd->add_flag("--faithful", f->faithful,
                "the study's loop exactly: only the loss is checked, FIFO switching, training pass not scanned");
  cmd->add_option("--change", f->change, "epsilon of the sign step (default 0.15)");
  cmd->add_option("--step-weights", f->step_weights,
                  "sign-step the weights by this epsilon against the objective from the first iteration (weights "
                  "as search variables, as RANUM does; the witness then carries the weights it reached). By "
                  "default they join with epsilon 0.01 after a quarter of each hazard's budget, 10 s at most");
  cmd->add_option("--weights-after", f->weights_after,
                  "fraction of each hazard's budget searched with the inputs alone before the weights join "
                  "(default 0.25, and 10 s at most; given here, the fraction alone counts)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--inputs-only", f->inputs_only, "never step the weights: search the data inputs alone, as GRIST");
  cmd->add_option("--seed", f->seed, "seed of every random draw (data order, random inputs, dropout)");
  cmd->add_option("--batch", f->batch, "rows of the persistent batch (default: the manifest's, else 1)");
  cmd->add_flag("--ftz", f->ftz, "flush denormals to zero, as TensorFlow's CPU kernels do");
  cmd->add_option("--out", f->out, "folder for witness files (never overwritten)")->capture_default_str();
  cmd->add_flag("--no-witness", f->no_witness, "do not save witness files");
  cmd->add_flag("--no-scan", f->no_scan,
                "hunt every hazard in execution order, without the interval scan that skips proved-safe ones");
  cmd->add_flag("--json", f->json, "print the report as JSON");
  cmd->add_flag("--quiet,-q", f->quiet, "no progress line");
  cmd->callback([f, &action] { action = [f] { return hunt_main(*f, process_start); }; });
}

void add_replay_command(CLI::App& app, Action& action) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Re-run a witness saved by `grist hunt` (its .json sidecar) on the same model, and say whether the same node "
      "still produces the first NaN/Inf. Exit 1 reproduced, 0 not reproduced, 2 error.");
  cmd->add_option("witness", *path, "the witness's .json file")->required();
  cmd->add_flag("--json", *json, "print the result as JSON");
  cmd->callback([path, json, &action] { action = [path, json] { return replay_main(*path, *json); }; });
}

}  // namespace grist::cli
