#include "search/benchmark.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "analysis/scan.h"
#include "config/manifest.h"
#include "onnx/import.h"
#include "search/hunt.h"

namespace grist {

namespace fs = std::filesystem;

namespace {

template <class T>
T median_of(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  if (v.size() % 2 == 1) return v[m];
  return static_cast<T>((v[m - 1] + v[m]) / 2);
}

// "2a" < "2b" < "10": by leading number, then by the rest.
bool natural_less(const std::string& a, const std::string& b) {
  auto num = [](const std::string& s) { return std::atoi(s.c_str()); };
  if (num(a) != num(b)) return num(a) < num(b);
  return a < b;
}

}  // namespace

double SubjectResult::mean_seconds() const {
  return seconds.empty() ? 0 : std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
}
double SubjectResult::mean_comparable_seconds() const {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < seconds.size(); ++i)
    if (classes[i] != FindingClass::WeightsPerturbed) sum += seconds[i], ++n;
  return n ? sum / n : 0;
}
double SubjectResult::median_seconds() const { return median_of(seconds); }
int64_t SubjectResult::median_iterations() const { return median_of(iterations); }
int64_t SubjectResult::median_study_count() const { return median_of(study_counts); }

Result<std::vector<std::string>> list_subjects(const std::string& zoo_dir, const std::vector<std::string>& only) {
  GRIST_CHECK(fs::is_directory(zoo_dir), "{}: not a folder (expected the zoo, with one folder per subject)", zoo_dir);
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(zoo_dir))
    if (e.is_directory() && fs::exists(e.path() / "manifest.toml")) ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end(), natural_less);
  if (only.empty()) return ids;
  std::set<std::string> known(ids.begin(), ids.end());
  for (const auto& id : only)
    GRIST_CHECK(known.count(id), "--only {}: no subject '{}' in {} (a folder with manifest.toml)", id, id, zoo_dir);
  return only;
}

SubjectResult run_subject(const std::string& id, const BenchOptions& o, int& runs_done, int runs_total) {
  SubjectResult r;
  r.id = id;
  const fs::path dir = fs::path(o.zoo_dir) / id;
  auto skip_runs = [&] {
    runs_done += o.runs;
    if (o.on_run) o.on_run(id, o.runs, runs_done, runs_total);
  };
  auto manifest = read_manifest((dir / "manifest.toml").string());
  if (!manifest) {
    r.error = manifest.message();
    skip_runs();
    return r;
  }
  r.expected_op = manifest->expect.op;
  r.study_seconds = manifest->expect.study_seconds;
  r.study_iterations = manifest->expect.study_iterations;
  r.note = manifest->expect.note;
  if (!fs::exists(manifest->model)) {
    r.error = fmt::format("{} is missing: export the zoo first (/usr/bin/python3 zoo/zoo_export.py --only {})",
                          manifest->model, id);
    skip_runs();
    return r;
  }
  auto graph = import_onnx_file(manifest->model);
  if (!graph) {
    r.error = graph.message();
    skip_runs();
    return r;
  }
  // The scan's proofs, to check every trigger a program run reaches against them.
  ScanOptions so;
  so.manifest = &*manifest;
  so.batch = manifest->batch_size;
  auto scanned = scan(*graph, so);
  bool clipped = true;
  for (const auto& [name, spec] : manifest->inputs) clipped &= spec.role != InputRole::Data || spec.range != ClipRange::None;
  auto contradicts = [&](const HazardOutcome& out) {
    if (!scanned || !clipped || out.finding_class == FindingClass::WeightsPerturbed) return false;
    for (const HazardVerdict& v : scanned->verdicts)
      if (v.site.id == out.fired_site && v.verdict == Verdict::ProvedSafe)
        return v.scope == Scope::EveryRun || (v.scope == Scope::Steps && v.safe_steps >= out.training_steps);
    return false;
  };
  for (int run = 0; run < o.runs; ++run) {
    HuntOptions h;
    h.manifest = *manifest;
    h.manifest.search.seed = o.first_seed + static_cast<uint64_t>(run);
    h.manifest.search.time_limit = o.time_limit_s / 60.0;
    if (o.max_iterations > 0) h.manifest.search.max_iterations = o.max_iterations;
    if (o.variant) h.manifest.search.variant = *o.variant;
    if (h.manifest.search.variant == Variant::GristNs) h.manifest.search.switch_data = false;
    if (o.no_weights) h.manifest.search.weight_change = 0;
    if (o.no_training) h.manifest.search.training_share = 0;
    h.batch_size = manifest->batch_size > 0 ? manifest->batch_size : 1;
    auto report = hunt(*graph, h);
    ++r.runs;
    ++runs_done;
    if (o.on_run) o.on_run(id, run + 1, runs_done, runs_total);
    if (!report) {
      r.error = report.message();
      runs_done += o.runs - run - 1;
      break;
    }
    double spent = report->scan_seconds;  // time to the trigger counts the scan and the hazards before it
    for (const auto& out : report->outcomes) {
      spent += out.seconds;
      if (!out.triggered) continue;
      ++r.triggered;
      r.seconds.push_back(spent);
      r.iterations.push_back(out.iterations);
      r.study_counts.push_back(manifest->expect.study_count(out.iterations));
      r.classes.push_back(out.finding_class);
      r.contradicted_proofs += contradicts(out);
      ++r.by_class[static_cast<int>(out.finding_class)];
      if (r.expected_op.empty() || out.event.op_type == r.expected_op) ++r.expected_op_hits;
      if (out.weights_from > 0) ++r.weight_search_hits;
      if (o.replay) {
        auto again = o.replay(*manifest, out);
        if (!again) {
          r.error = fmt::format("replaying the witness of run {}: {}", run + 1, again.message());
        } else {
          ++r.replayed;
          r.reproduced += *again;
        }
      }
      if (r.producer.empty())
        r.producer = fmt::format("{} '{}' ({})", out.event.op_type, out.event.node_name, pass_name(out.pass));
      break;
    }
  }
  return r;
}

}  // namespace grist
