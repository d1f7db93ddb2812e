// `grist scan MODEL.onnx`: the static interval pass — proves hazardous ops safe or shows the range that
// can break them, before anything runs. Exit 1 when some hazard may fail, 0 when all are proved safe.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/scan.h"
#include "cli/assume.h"
#include "cli/commands.h"
#include "config/manifest.h"
#include "onnx/import.h"
#include "report/scan_report.h"

namespace grist::cli {

namespace {

struct ScanFlags {
  std::string model;
  std::string manifest;
  std::string sarif;
  bool json = false;
  int64_t batch = 0;
  std::vector<std::string> assume;  // NAME=LO,HI
};

int run_scan(const ScanFlags& f) {
  std::optional<Manifest> manifest;
  std::string model = f.model;
  if (!f.manifest.empty()) {
    auto m = read_manifest(f.manifest);
    if (!m) return fail(m.message());
    manifest = std::move(m).value();
    if (model.empty()) model = manifest->model;
  }
  if (model.empty()) return fail("scan needs MODEL.onnx or --manifest");
  auto graph = import_onnx_file(model);
  if (!graph) return fail(graph.message());
  ScanOptions o;
  o.manifest = manifest ? &*manifest : nullptr;
  o.batch = f.batch;
  for (const std::string& a : f.assume) {
    auto parsed = parse_assumption(a);
    if (!parsed) return fail(parsed.message());
    o.assumed[parsed->first] = parsed->second;
  }
  auto report = scan(*graph, o);
  if (!report) return fail(fmt::format("{}: {}", model, report.message()));
  if (!f.sarif.empty()) {
    std::ofstream out(f.sarif);
    if (!out) return fail(fmt::format("{}: cannot write", f.sarif));
    out << to_sarif(*report, model).dump(2) << "\n";
    if (!out) return fail(fmt::format("{}: write failed", f.sarif));
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
  cmd->add_option("model", flags->model, "the ONNX model (default: the manifest's)");
  cmd->add_option("--manifest", flags->manifest, "input ranges, trained weights and batch size (TOML)");
  cmd->add_flag("--json", flags->json, "print JSON instead of text");
  cmd->add_option("--sarif", flags->sarif, "also write SARIF 2.1.0 to FILE");
  cmd->add_option("--batch", flags->batch, "size of symbolic dimensions (default: the manifest's, else 1)");
  cmd->add_option("--assume", flags->assume,
                  "NAME=LO,HI: the range of graph input or weight NAME, replacing the manifest's and the defaults "
                  "(repeatable; a weight so named moves within it)");
  cmd->callback([flags, &action] { action = [flags] { return run_scan(*flags); }; });
}

}  // namespace grist::cli
