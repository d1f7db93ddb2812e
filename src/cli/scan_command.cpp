// `grist scan MODEL.onnx`: the static interval pass — proves hazardous ops safe or shows the range that
// can break them, before anything runs. Exit 1 when some hazard may fail, 0 when all are proved safe.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/scan.h"
#include "cli/assume.h"
#include "cli/commands.h"
#include "config/manifest.h"
#include "engine/checkpoint.h"
#include "data/file_write.h"
#include "onnx/import.h"
#include "ops/registry.h"
#include "report/dot.h"
#include "report/scan_report.h"

namespace grist::cli {

namespace {

struct ScanFlags {
  std::string model;
  std::string manifest;
  std::string sarif;
  bool force = false;
  std::string dot;
  bool json = false;
  bool ranum_weights = false;
  int64_t batch = 0;
  std::vector<std::string> assume;  // NAME=LO,HI
  std::string precision;            // empty: the manifest's [numerics] precision, else fp32
};

int run_scan(const ScanFlags& f) {
  // Files written for the user never replace an existing one: refused before any work.
  if (!f.sarif.empty() && !f.force && std::filesystem::exists(f.sarif))
    return fail(fmt::format("{}: exists already; not overwriting it (--force replaces it)", f.sarif));
  std::optional<Manifest> manifest;
  std::string model = f.model;
  std::string manifest_path = f.manifest;
  // A manifest in the model's place, as `grist hunt` takes it.
  if (manifest_path.empty() && model.size() > 5 && model.compare(model.size() - 5, 5, ".toml") == 0) {
    manifest_path = model;
    model.clear();
  }
  if (!manifest_path.empty()) {
    auto m = read_manifest(manifest_path);
    if (!m) return fail(m.message());
    manifest = std::move(m).value();
    if (model.empty()) model = manifest->model;
  }
  if (model.empty()) return fail("scan needs MODEL.onnx or --manifest");
  auto graph = import_onnx_file(model);
  if (!graph) return fail(graph.message());
  if (auto st = check_ops_supported(*graph); !st) return fail(fmt::format("{}: {}", model, st.message()));
  // A program resumed from a checkpoint is scanned at the checkpoint's weights, as the hunt runs it.
  if (manifest)
    if (auto st = use_checkpoint_weights(manifest->train.checkpoint, *graph); !st) return fail(st.message());
  ScanOptions o;
  const Precision manifest_precision = manifest ? manifest->precision : Precision::Fp32;
  const std::string precision = !f.precision.empty() ? f.precision : std::string(precision_name(manifest_precision));
  auto parsed_precision = parse_precision(precision);
  if (!parsed_precision) return fail(fmt::format("--precision: {}", parsed_precision.message()));
  o.precision = *parsed_precision;
  o.manifest = manifest ? &*manifest : nullptr;
  o.batch = f.batch;
  o.ranum_weights = f.ranum_weights;
  for (const std::string& a : f.assume) {
    auto parsed = parse_assumption(a);
    if (!parsed) return fail(parsed.message());
    o.assumed[parsed->first] = parsed->second;
  }
  auto report = scan(*graph, o);
  if (!report) return fail(fmt::format("{}: {}", model, report.message()));
  if (!f.sarif.empty()) {
    // Written whole beside and moved into place: a reader never sees half a report.
    const std::string text = to_sarif(*report, model).dump(2) + "\n";
    if (f.force) std::filesystem::remove(f.sarif);
    if (auto st = write_new_file(f.sarif, text); !st) return fail(st.message());
  }
  if (!f.dot.empty()) {
    std::vector<DotMark> marks;
    for (const HazardVerdict& v : report->verdicts)
      if (v.verdict == Verdict::MayFail)
        marks.push_back({v.site.node, fmt::format("may fail: {} [{:.4g}, {:.4g}] meets {}", v.site.condition,
                                                  v.operand.lo, v.operand.hi, v.danger)});
    const ValueId loss = manifest && !manifest->loss.empty() ? graph->find_value(manifest->loss) : kNoValue;
    if (auto st = write_new_file(f.dot, to_dot(*graph, marks, loss)); !st) return fail(st.message());
  }
  const std::string text = f.json ? to_json(*report, model).dump(2) + "\n" : to_text(*report, model);
  std::fputs(text.c_str(), stdout);
  return report->count(Verdict::MayFail) > 0 ? kExitNonFinite : kExitClean;
}

}  // namespace

void add_scan_command(CLI::App& app, Action& action) {
  auto flags = std::make_shared<ScanFlags>();
  CLI::App* cmd = app.add_subcommand(
      "scan", "Prove hazardous ops safe by interval analysis, or show the input range that can break them");
  cmd->add_option("model", flags->model, "the ONNX model, or a manifest (.toml) naming it");
  cmd->add_option("--manifest", flags->manifest, "input ranges, trained weights and batch size (TOML)");
  cmd->add_flag("--json", flags->json, "print JSON instead of text");
  cmd->add_option("--sarif", flags->sarif, "also write SARIF 2.1.0 to FILE (a new file: never overwritten)");
  cmd->add_flag("--force", flags->force, "let --sarif replace an existing file");
  cmd->add_option("--dot", flags->dot, "write the subgraph leading to each may-fail hazard as Graphviz (a new file)");
  cmd->add_option("--batch", flags->batch, "size of symbolic dimensions (default: the manifest's, else 1)");
  cmd->add_option("--assume", flags->assume,
                  "NAME=LO,HI: the range of graph input or weight NAME, replacing the manifest's and the defaults "
                  "(repeatable; a weight so named moves within it)");
  cmd->add_option("--precision", flags->precision,
                  "fp32|fp16|bf16|amp-fp16|amp-bf16: round the intervals to that format where the run rounds, with "
                  "its own danger zones and half-precision hazards (default: the manifest's [numerics] precision)");
  cmd->add_flag("--ranum-weights", flags->ranum_weights,
                "take every trained weight to stay within RANUM's default range (its initial span widened by "
                "100 %), as RANUM does: a statement for comparison, not what training guarantees");
  cmd->callback([flags, &action] { action = [flags] { return run_scan(*flags); }; });
}

}  // namespace grist::cli
