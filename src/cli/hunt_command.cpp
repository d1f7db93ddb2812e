// `grist hunt`: the GRIST search over every hazard of a model; `grist replay`: re-run a saved witness.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "cli/commands.h"
#include "cli/durations.h"
#include "cli/hunt_progress.h"
#include "cli/interrupt.h"
#include "config/manifest.h"
#include "data/dataset.h"
#include "onnx/import.h"
#include "ops/registry.h"
#include "data/file_write.h"
#include "report/dot.h"
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
  std::string time_limit;       // a bare number is minutes, as in GRIST's experiments.conf
  int64_t max_iterations = -1;
  std::string variant, switch_score, step;
  bool faithful = false;
  double change = -1;
  int64_t seed = -1;
  int64_t batch = -1;
  bool ftz = false;
  std::string precision;  // empty: the manifest's
  std::string out = "grist-witnesses";
  bool no_witness = false;
  bool no_scan = false;
  bool timings = false;
  double step_weights = -1;
  double weights_after = -1;
  bool stall_rule = false;
  bool craft_early = false;
  bool no_race_weights = false;
  bool no_race_training = false;
  bool inputs_only = false;
  std::string reach;
  bool json = false;
  bool quiet = false;
  std::string dot;
  // The options whose values need checking once they were given at all.
  CLI::Option *max_iterations_opt = nullptr, *change_opt = nullptr, *seed_opt = nullptr, *batch_opt = nullptr;
};

// Values no search can run with: one line, exit 2, before anything is read.
Status check_flags(const HuntFlags& f) {
  GRIST_CHECK(f.max_iterations_opt->count() == 0 || f.max_iterations >= 0, "--max-iterations {}: must not be negative",
              f.max_iterations);
  GRIST_CHECK(f.change_opt->count() == 0 || (std::isfinite(f.change) && f.change > 0),
              "--change {}: the step must be a positive number", f.change);
  GRIST_CHECK(f.seed_opt->count() == 0 || f.seed >= 0, "--seed {}: must not be negative", f.seed);
  GRIST_CHECK(f.batch_opt->count() == 0 || f.batch > 0, "--batch {}: must be at least 1", f.batch);
  return Status::ok();
}

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
  if (!f.time_limit.empty()) {
    auto seconds = parse_duration(f.time_limit, TimeUnit::Minutes, "--time-limit");
    if (!seconds) return seconds.error();
    c.time_limit = *seconds / 60;
  }
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
  // A join rule or clock given here replaces the manifest's ([search] stall_rule, craft_early).
  if (f.weights_after >= 0 || f.step_weights >= 0) c.stall_rule = false;
  if (f.stall_rule) {
    if (f.weights_after >= 0 || f.step_weights >= 0)
      return make_error("--stall-rule and --weights-after/--step-weights: a clock or the stall rule, not both");
    c.stall_rule = true;
    c.craft_early = false;
  }
  if (f.no_race_weights) c.race_weights = false;
  if (f.no_race_training) c.race_training = false;
  if (f.craft_early) {
    if (f.stall_rule) return make_error("--craft-early and --stall-rule: one rule for when crafted training joins");
    c.craft_early = true;
    c.stall_rule = false;
  }
  // How far the search may go beyond the inputs: crafted training batches (training-reached findings), then
  // the weights themselves (weights-perturbed ones).
  const std::string reach = f.inputs_only ? "inputs" : f.reach;
  if (reach == "inputs" || reach == "training") c.weight_change = 0;
  if (reach == "inputs") c.training_share = 0;
  if (f.seed >= 0) c.seed = static_cast<uint64_t>(f.seed);
  if (f.faithful) {
    c.faithful = true;
    c.weight_change = 0;
    c.training_share = 0;
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
  if (!f.step.empty()) {
    auto s = parse_step_rule(f.step);
    if (!s) return make_error("--step: {}", s.message());
    c.step = *s;
  }
  if (!f.target.empty()) m.target = f.target;
  if (f.ftz) m.ftz = true;
  if (!f.precision.empty()) {
    auto p = parse_precision(f.precision);
    if (!p) return make_error("--precision: {}", p.message());
    m.precision = *p;
  }
  if (f.batch > 0) m.batch_size = f.batch;
  return m;
}

int hunt_main(const HuntFlags& f, std::chrono::steady_clock::time_point process_start) {
  if (auto st = check_flags(f); !st) return fail(st.message());
  auto manifest = resolve_manifest(f);
  if (!manifest) return fail(manifest.message());
  const auto import_start = std::chrono::steady_clock::now();
  auto graph = import_onnx_file(manifest->model);
  const double import_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - import_start).count();
  if (!graph) return fail(graph.message());
  if (auto st = check_ops_supported(*graph); !st) return fail(fmt::format("{}: {}", manifest->model, st.message()));
  default_inputs(*graph, *manifest);
  // Where witnesses go is checked now, not after the whole budget.
  if (!f.no_witness)
    if (auto st = prepare_witness_folder(f.out); !st) return fail(st.message());

  HuntOptions o;
  o.manifest = *manifest;
  o.batch_size = manifest->batch_size > 0 ? manifest->batch_size : graph->fixed_batch_size().value_or(1);
  o.all = f.all;
  // The interval scan rounds to the precision's format as the runs do (analysis/format_rounding.h).
  o.use_scan = !f.no_scan;
  o.process_start = process_start;
  const HuntProgress::Mode mode = f.quiet ? HuntProgress::Mode::Off
                                  : isatty(fileno(stderr)) && !f.json ? HuntProgress::Mode::Terminal
                                                                      : HuntProgress::Mode::Log;
  HuntProgress progress(mode);
  o.on_progress = [&progress](const Progress& p) { progress.progress(p); };

  // Every outcome is final when it arrives: its witness is written and its block printed then, so an
  // interruption (Ctrl-C, SIGTERM) or a crash later loses nothing already found.
  HuntContext ctx;
  ctx.model = manifest->model;
  ctx.loss = manifest->loss;
  std::string witness_error;
  int triggered = 0;
  o.on_planned = [&](const HuntReport& r) {
    progress.clear();
    if (f.json) {
      // How the study's program counted iterations (the manifest's [expect]), as `grist bench` reports it.
      const nlohmann::json counting{{"counter_offset", manifest->expect.counter_offset},
                                    {"counter_step", manifest->expect.counter_step}};
      std::printf("%s\n", nlohmann::json{{"event", "hazards"}, {"model", ctx.model}, {"counting", counting},
                                         {"hazards", hazards_json(*graph, r)}}
                              .dump()
                              .c_str());
    } else {
      std::printf("%s", hazards_text(*graph, r, ctx).c_str());
    }
    std::fflush(stdout);
  };
  o.on_outcome = [&](const HuntReport& r, const HazardOutcome& out) {
    progress.clear();
    const WitnessFiles* files = nullptr;
    const int index = static_cast<int>(r.outcomes.size()) - 1;
    if (out.triggered) {
      ++triggered;
      if (!f.no_witness) {
        auto written = write_witness(f.out, manifest->model, *manifest, out);
        if (written) {
          files = &(ctx.witnesses[index] = *written);
        } else if (witness_error.empty()) {
          witness_error = written.message();
        }
      }
    }
    if (f.json) {
      nlohmann::json line = outcome_json(*graph, r, out, ctx, files);
      line["event"] = "outcome";
      if (out.triggered) line["study_count"] = manifest->expect.study_count(out.iterations);
      std::printf("%s\n", line.dump().c_str());
    } else {
      std::printf("%s", outcome_text(*graph, r, out, ctx, files).c_str());
    }
    std::fflush(stdout);
    progress.finding(out);
  };
  InterruptGuard interrupt;
  o.stop_requested = [&witness_error] { return InterruptGuard::requested() || !witness_error.empty(); };
  auto report = hunt(*graph, o);
  progress.clear();
  if (!report) return fail(fmt::format("{}: {}", manifest->model, report.message()));
  if (f.timings) {
    // Where a quick trigger's wall time goes: what the process did before the first iteration, then the searches
    // (which go on past a race's finding until the course's inputs have had their turn).
    const double search_s = report->search_seconds;
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start).count();
    std::fprintf(stderr,
                 "timings: import %.4f s, data %.4f s, interval scan %.4f s, other set-up %.4f s, searches %.4f s; "
                 "%.4f s since the process started\n",
                 import_s, report->data_seconds, report->scan_seconds,
                 std::max(0.0, report->seconds - report->data_seconds - report->scan_seconds - search_s), search_s,
                 total_s);
  }
  if (f.json) {
    nlohmann::json line = summary_json(*report);
    line["event"] = "summary";
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf("%s", summary_text(*report).c_str());
  }
  if (!witness_error.empty()) return fail(witness_error);
  if (!f.dot.empty()) {
    std::vector<DotMark> marks;
    for (const HazardOutcome& out : report->outcomes)
      if (out.triggered && out.event.node >= 0)
        marks.push_back({out.event.node, fmt::format("{}{}\n({})", out.event.in_backward ? "gradient: " : "",
                                                      violated_condition(*report, out),
                                                      finding_class_name(out.finding_class))});
    const ValueId loss = manifest->loss.empty() ? kNoValue : graph->find_value(manifest->loss);
    if (auto st = write_new_file(f.dot, to_dot(*graph, marks, loss)); !st) return fail(st.message());
  }
  return triggered > 0 ? kExitNonFinite : kExitClean;
}

int replay_main(const std::string& path, bool json) {
  auto r = replay_witness(path);
  if (!r) return fail(r.message());
  if (json) {
    nlohmann::json j{{"reproduced", r->reproduced}, {"expected_node", r->expected_node}, {"message", r->message},
                     {"step", r->step.empty() ? nlohmann::json() : nlohmann::json(r->step)},
                     {"training_steps", r->training_steps}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s\n", r->message.c_str());
    std::printf("found with the %s input step%s\n", r->step.empty() ? "(not recorded)" : r->step.c_str(),
                r->training_steps > 0 ? fmt::format(", after {} crafted training steps", r->training_steps).c_str()
                                      : "");
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
  cmd->add_flag("--all", f->all,
                "hunt every hazard: they take turns on one run, each turn going on from the program's training state "
                "(two rounds: the inputs first, then crafted training and the weights)");
  cmd->add_option("--time-limit", f->time_limit,
                  "the budget shared by the hazards: 90s, 1.5m, 2h, or a bare number of minutes as in "
                  "experiments.conf (default 30m)");
  f->max_iterations_opt =
      cmd->add_option("--max-iterations", f->max_iterations, "stop each hazard's search after this many iterations");
  cmd->add_option("--variant", f->variant, "grist (default), grist-ns (no switching), original, random")
      ->check(CLI::IsMember({"grist", "grist-ns", "original", "random"}));
  cmd->add_option("--switch-score", f->switch_score, "score (intended, default) or fifo (as the study shipped)")
      ->check(CLI::IsMember({"score", "fifo"}));
  cmd->add_option("--step", f->step,
                  "how the inputs step against the objective's gradient: sign (the study's, default), adam "
                  "(per-element moments, learning rate epsilon) or line (a backtracking line search along the "
                  "sign); --faithful always takes the sign step")
      ->check(CLI::IsMember({"sign", "adam", "line"}));
  cmd->add_flag("--faithful", f->faithful,
                "the study's loop exactly: only the loss is checked, FIFO switching, training pass not scanned");
  f->change_opt = cmd->add_option("--change", f->change, "epsilon of the sign step (default 0.15)");
  cmd->add_option("--step-weights", f->step_weights,
                  "sign-step the weights by this epsilon against the objective from the first iteration (weights "
                  "as search variables, as RANUM does; the witness then carries the weights it reached). By "
                  "default they join with epsilon 0.01 once the inputs (a quarter of each hazard's budget, 10 s at "
                  "most) and, for a model that trains, crafted training batches (half of what is left, 20 s at "
                  "most) have had their turn (--stall-rule: once they stall), and the weights race steps them from the "
                  "second iteration on a second thread beside that (--no-race-weights)");
  cmd->add_option("--weights-after", f->weights_after,
                  "fraction of each hazard's budget searched with the inputs alone before crafted training and the "
                  "weights join (default 0.25, and 10 s at most; given here, the fraction alone counts)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--stall-rule", f->stall_rule,
                "end each stage (the inputs alone, crafted training, optimizer-sized weight steps) when the search "
                "stalls instead of on its share of the budget: faster where the inputs cannot reach, but a toy whose "
                "own training carries a flat objective to the failure may then be reached by training or weights");
  cmd->add_flag("--no-race-weights", f->no_race_weights,
                "do not race the weights: by default a second search, on a second thread, steps the weights from "
                "the second iteration beside the inputs and the model's training, so that a weights-perturbed "
                "finding comes as soon as the weights alone reach the failure instead of after the clocks; the "
                "inputs and training keep their turn, and an input- or training-reached finding they reach before "
                "their own weights would join is the one reported (docs/RESULTS.md, session 18). With "
                "--max-iterations the race is judged in iterations; --all's shared run and --faithful do not race");
  cmd->add_flag("--no-race-training", f->no_race_training,
                "do not race crafted training: by default, for a model that trains, the second thread then crafts "
                "training batches from the second iteration, so that a training-reached finding comes as soon as "
                "crafted training reaches the failure instead of after the inputs' clock; the inputs keep their "
                "clock, and an input-reached finding they reach is the one reported, however late (docs/RESULTS.md, "
                "session 19)");
  cmd->add_flag("--craft-early", f->craft_early,
                "for a model that trains, crafted training batches join once the inputs' objective stalls (no "
                "progress over the last half of their iterations, after 1 s at the least) instead of on the "
                "inputs' clock, while the weights keep theirs (--weights-after still sets it): what crafting "
                "reaches is training-reached; an attempt that stalls before the clock is undone and tried again "
                "later. Opt-in: 2-10x faster on most zoo subjects that wait for the clock, but a toy whose "
                "objective is flat until its own training fails is then found by crafted training (class 2) "
                "instead of by its own (class 1) (docs/RESULTS.md, session 16)");
  cmd->add_option("--reach", f->reach,
                  "how far the search goes beyond the inputs: inputs (the data alone, as GRIST), training (also "
                  "the model's own optimizer on crafted training batches: findings training can reach), or weights "
                  "(also the weights themselves, the default: findings only a weight perturbation reaches are "
                  "reported as such)")
      ->check(CLI::IsMember({"inputs", "training", "weights"}));
  cmd->add_flag("--inputs-only", f->inputs_only, "the same as --reach inputs: search the data inputs alone, as GRIST");
  f->seed_opt = cmd->add_option("--seed", f->seed, "seed of every random draw (data order, random inputs, dropout)");
  f->batch_opt = cmd->add_option("--batch", f->batch,
                                 "rows of the persistent batch (default: the manifest's, else the model's fixed batch "
                                 "dimension, else 1)");
  cmd->add_flag("--ftz", f->ftz, "flush denormals to zero, as TensorFlow's CPU kernels do");
  cmd->add_option("--precision", f->precision,
                  "simulate 16-bit numerics in a float32 model (as grist run --precision; default: the manifest's "
                  "[numerics] precision, else fp32); the interval scan rounds to its format too")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "amp-fp16", "amp-bf16"}));
  cmd->add_option("--out", f->out, "folder for witness files (never overwritten)")->capture_default_str();
  cmd->add_flag("--no-witness", f->no_witness, "do not save witness files");
  cmd->add_flag("--no-scan", f->no_scan,
                "hunt every hazard in execution order, without the interval scan that skips proved-safe ones");
  cmd->add_flag("--json", f->json, "print the report as JSON");
  cmd->add_flag("--timings", f->timings,
                "print to stderr where the wall time went: importing the model, loading the data, the interval "
                "scan, the rest of the set-up, the searches");
  cmd->add_flag("--quiet,-q", f->quiet, "no progress line");
  cmd->add_option("--dot", f->dot,
                  "write the subgraph from the inputs to each producer and on to the loss as Graphviz (a new file)");
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
