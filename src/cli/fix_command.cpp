// `grist fix MODEL.onnx | MANIFEST.toml`: repairs every hazard the scan says may fail (or a witness triggers) with
// the stable form frameworks offer or a guard, proves and tests each repair, finds RANUM's preconditions, and
// writes MODEL.fixed.onnx beside the model (never over an existing file). Exit 0 every hazard fixed (or none to
// fix), 1 some hazard not fixed, 2 error.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/assume.h"
#include "cli/commands.h"
#include "config/manifest.h"
#include "data/dataset.h"
#include "data/file_write.h"
#include "fix/fixer.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "ops/registry.h"
#include "report/fix_report.h"

namespace grist::cli {

namespace {

namespace fs = std::filesystem;

struct FixFlags {
  std::string target;  // MODEL.onnx or MANIFEST.toml
  std::string manifest;
  std::string hazard;
  std::string witness;
  std::string out;
  std::string sarif;
  bool json = false;
  std::vector<std::string> assume;
  double hunt_seconds = 5;
  int64_t max_iterations = 0;
  int64_t train_steps = 50;
  int data_batches = 4;
  int64_t seed = -1;
  int64_t batch = 0;
  bool no_preconditions = false;
  std::string precision;  // empty: the manifest's [numerics] precision, else fp32
};

// The first free name DIR/STEM.fixed.onnx, DIR/STEM.fixed-2.onnx, ...; the file is created exclusively.
Result<std::string> write_fixed(const std::string& dir, const std::string& model, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  GRIST_CHECK(!ec, "{}: cannot create the folder: {}", dir, ec.message());
  const std::string stem = fs::path(model).stem().string();
  for (int n = 1; n < 10000; ++n) {
    const fs::path p = fs::path(dir) / (stem + (n == 1 ? ".fixed" : fmt::format(".fixed-{}", n)) + ".onnx");
    if (fs::exists(p)) continue;
    // Written whole under a temporary name and linked into place only if the name is still free.
    if (auto st = write_new_file(p.string(), bytes); !st) {
      if (fs::exists(p)) continue;  // taken meanwhile
      return st.error();
    }
    return p.string();
  }
  return make_error("{}: no free name for the repaired model", dir);
}

int fix_main(const FixFlags& f) {
  FixOptions o;
  std::string manifest_path = f.manifest;
  const bool target_is_manifest = fs::path(f.target).extension() == ".toml";
  if (manifest_path.empty() && target_is_manifest) manifest_path = f.target;
  if (!manifest_path.empty()) {
    auto m = read_manifest(manifest_path);
    if (!m) return fail(m.message());
    o.manifest = std::move(m).value();
    o.has_manifest = true;
    if (!target_is_manifest) o.manifest.model = f.target;
  } else {
    o.manifest.model = f.target;
  }
  if (!f.precision.empty()) {
    auto p = parse_precision(f.precision);
    if (!p) return fail(fmt::format("--precision: {}", p.message()));
    o.manifest.precision = *p;
  }
  const std::string model = o.manifest.model;
  // Not yet: the repaired model would have to carry the checkpoint's weights, and its checks resume from them.
  if (!o.manifest.train.checkpoint.empty())
    return fail(fmt::format("{}: train.checkpoint is not supported by grist fix yet (grist hunt and scan resume "
                            "from it)", manifest_path));
  // Nor yet: its checks train with one optimizer from the model's own weights.
  if (!o.manifest.train.phases.empty() || o.manifest.train.pretrain_steps > 0)
    return fail(fmt::format("{}: {} is not supported by grist fix yet (grist hunt runs it)", manifest_path,
                            o.manifest.train.phases.empty() ? "train.pretrain_steps" : "train.phases"));
  // Refused before any work: a SARIF file that exists (nothing of the user's is replaced), ops grist cannot run.
  if (!f.sarif.empty() && fs::exists(f.sarif))
    return fail(fmt::format("{}: exists already; not overwriting it", f.sarif));
  auto graph = import_onnx_file(model);
  if (!graph) return fail(graph.message());
  if (auto st = check_ops_supported(*graph); !st) return fail(fmt::format("{}: {}", model, st.message()));
  default_inputs(*graph, o.manifest);
  o.batch = f.batch > 0 ? f.batch : (o.manifest.batch_size > 0 ? o.manifest.batch_size : 1);
  if (f.seed >= 0) o.manifest.search.seed = static_cast<uint64_t>(f.seed);
  o.hazard = f.hazard;
  o.hunt_seconds = f.hunt_seconds;
  o.hunt_iterations = f.max_iterations;
  o.train_steps = f.train_steps;
  o.data_batches = f.data_batches;
  o.preconditions = !f.no_preconditions;
  if (!(o.hunt_seconds > 0)) return fail("--hunt-seconds must be positive");
  for (const std::string& a : f.assume) {
    auto parsed = parse_assumption(a);
    if (!parsed) return fail(parsed.message());
    o.assumed[parsed->first] = parsed->second;
  }
  if (!f.witness.empty()) {
    auto w = read_witness(f.witness);
    if (!w) return fail(w.message());
    auto is_node = [&](const std::string& name) {
      return std::any_of(graph->nodes.begin(), graph->nodes.end(), [&](const Node& n) { return n.name == name; });
    };
    const std::string& named = w->producer.empty() ? w->hazard_node : w->producer;
    if (!is_node(named))
      return fail(fmt::format("{}: its {} '{}' is not a node of {}", f.witness,
                              w->producer.empty() ? "hazard" : "producer", named, model));
    o.witness = std::move(w).value();
  }
  auto result = fix_model(*graph, o);
  if (!result) return fail(fmt::format("{}: {}", model, result.message()));

  FixContext ctx;
  ctx.model = model;
  std::error_code ec;
  ctx.model_bytes = fs::file_size(model, ec);
  if (result->changed) {
    const std::string dir = f.out.empty() ? fs::path(model).parent_path().string() : f.out;
    auto written = write_fixed(dir.empty() ? "." : dir, model, result->fixed_bytes);
    if (!written) return fail(written.message());
    ctx.fixed_path = *written;
  }
  if (!f.sarif.empty())
    if (auto st = write_new_file(f.sarif, to_sarif(*result, ctx).dump(2) + "\n"); !st) return fail(st.message());
  const std::string text = f.json ? to_json(*result, ctx).dump(2) + "\n" : to_text(*result, ctx);
  std::fputs(text.c_str(), stdout);
  for (const auto& h : result->hazards)
    if (!h.fixed()) return kExitNonFinite;
  return kExitClean;
}

}  // namespace

void add_fix_command(CLI::App& app, Action& action) {
  auto f = std::make_shared<FixFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fix",
      "Repair every hazard the interval scan says may fail (or a witness triggers): the numerically stable form "
      "frameworks offer (LogSoftmax, softplus, logsumexp, a max-subtracted softmax, ...) or a guard (an epsilon, a "
      "clamp at the danger threshold), each proved by the scan, hunted again, compared with the original on the "
      "manifest's data and trained; plus RANUM's preconditions (the widest input and weight boxes the scan proves "
      "safe). Writes MODEL.fixed.onnx beside the model, never over an existing file.\n"
      "Exit 0 every hazard fixed, 1 some hazard not fixed, 2 error.");
  cmd->add_option("model", f->target, "the ONNX model, or a manifest (.toml) naming it")->required();
  cmd->add_option("--manifest,-m", f->manifest, "the model's manifest (inputs, data, training; docs/MANIFEST.md)");
  cmd->add_option("--hazard", f->hazard, "repair only this hazard (its number or node name)");
  cmd->add_option("--witness", f->witness,
                  "a witness of `grist hunt` (.json): repair the hazard it triggers and "
                  "check it runs finite on the repaired model");
  cmd->add_option("--out", f->out, "folder for the repaired model (default: the model's own)");
  cmd->add_flag("--json", f->json, "print the report as JSON");
  cmd->add_option("--sarif", f->sarif, "also write SARIF 2.1.0 with `fixes` to FILE (a new file)");
  cmd->add_option("--assume", f->assume, "NAME=LO,HI: the range of input or weight NAME for every proof (repeatable)");
  cmd->add_option("--hunt-seconds", f->hunt_seconds, "the budget of check (b)'s hunt on the repaired model")
      ->capture_default_str();
  cmd->add_option("--max-iterations", f->max_iterations, "check (b): iterations per hazard at most");
  cmd->add_option("--train-steps", f->train_steps, "check (d): steps of the model's own training")
      ->capture_default_str();
  cmd->add_option("--data-batches", f->data_batches, "check (c): batches of the manifest's data compared")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the data, the hunt and the training (default: the manifest's)");
  cmd->add_option("--batch", f->batch, "rows per batch (default: the manifest's, else 1)");
  cmd->add_flag("--no-preconditions", f->no_preconditions, "skip the search for input and weight preconditions");
  cmd->add_option("--precision", f->precision,
                  "fp32, fp16, bf16, amp-fp16 or amp-bf16: repair for, and run every check in, that simulated "
                  "precision (as grist hunt --precision; default: the manifest's [numerics] precision, else fp32); "
                  "adds the half-precision repairs (keep-in-float32, a larger epsilon)");
  cmd->callback([f, &action] { action = [f] { return fix_main(*f); }; });
}

}  // namespace grist::cli
