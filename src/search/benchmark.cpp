#include "search/benchmark.h"

#include <algorithm>
#include <chrono>
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

SubjectRuns run_subject_runs(const std::string& id, const BenchOptions& o, const std::vector<int>& runs,
                             bool stop_at_error, int& runs_done, int runs_total) {
  SubjectRuns s;
  s.id = id;
  const fs::path dir = fs::path(o.zoo_dir) / id;
  const int count = static_cast<int>(runs.size());
  auto skip_runs = [&](const std::string& why) {
    s.setup_error = why;
    runs_done += count;
    if (o.on_run) o.on_run(id, count, runs_done, runs_total);
    return s;
  };
  auto manifest = read_manifest((dir / "manifest.toml").string());
  if (!manifest) return skip_runs(manifest.message());
  s.expected_op = manifest->expect.op;
  s.study_seconds = manifest->expect.study_seconds;
  s.study_iterations = manifest->expect.study_iterations;
  s.note = manifest->expect.note;
  if (!fs::exists(manifest->model))
    return skip_runs(fmt::format("{} is missing: export the zoo first (/usr/bin/python3 zoo/zoo_export.py --only {})",
                                 manifest->model, id));
  // A user's run imports the model, loads the data, scans and hunts: every run's seconds count all of it (the
  // model is imported once here, its time added to each run).
  const auto import_start = std::chrono::steady_clock::now();
  auto graph = import_onnx_file(manifest->model);
  const double import_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - import_start).count();
  if (!graph) return skip_runs(graph.message());
  // The scan's proofs, in the precision the runs use (its intervals rounded to the format), to check every
  // trigger a program run reaches against them.
  const Precision precision = o.precision ? *o.precision : manifest->precision;
  ScanOptions so;
  so.manifest = &*manifest;
  so.batch = manifest->batch_size;
  so.precision = precision;
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
  for (int k = 0; k < count; ++k) {
    RunRecord rec;
    rec.run = runs[static_cast<size_t>(k)];
    HuntOptions h;
    h.manifest = *manifest;
    h.manifest.search.seed = o.first_seed + static_cast<uint64_t>(rec.run);
    h.manifest.search.time_limit = o.time_limit_s / 60.0;
    if (o.max_iterations > 0) h.manifest.search.max_iterations = o.max_iterations;
    if (o.variant) h.manifest.search.variant = *o.variant;
    if (h.manifest.search.variant == Variant::GristNs) h.manifest.search.switch_data = false;
    if (o.no_weights) h.manifest.search.weight_change = 0;
    if (o.no_training) h.manifest.search.training_share = 0;
    if (o.stall_rule || o.craft_early) {  // the flag's rule replaces the manifest's
      h.manifest.search.stall_rule = o.stall_rule;
      h.manifest.search.craft_early = o.craft_early;
    }
    if (o.no_race_weights) h.manifest.search.race_weights = false;
    if (o.no_race_training) h.manifest.search.race_training = false;
    h.manifest.precision = precision;
    h.batch_size = manifest->batch_size > 0 ? manifest->batch_size : 1;
    const auto hunt_start = std::chrono::steady_clock::now();
    h.process_start = hunt_start;
    auto report = hunt(*graph, h);
    const double hunt_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - hunt_start).count();
    ++runs_done;
    if (o.on_run) o.on_run(id, k + 1, runs_done, runs_total);
    if (!report) {
      rec.error = report.message();
      s.runs.push_back(rec);
      if (!stop_at_error) continue;
      runs_done += count - k - 1;
      break;
    }
    // Time to the trigger: the import, the hunt's start-up (data, hazards, scan) and the hazards hunted before
    // it; the searches after it (none unless every hazard is hunted) do not count.
    double after = 0;
    for (auto it = report->outcomes.rbegin(); it != report->outcomes.rend() && !it->triggered; ++it) after += it->seconds;
    for (const auto& out : report->outcomes) {
      rec.loss_scaling |= out.loss_scale > 0 || out.scale_collapsed;
      rec.scaler_skipped_steps += out.scaler_skipped_steps;  // each hazard's search has a scaler of its own
      if (!out.triggered) continue;
      rec.triggered = true;
      // A race's finding came while the inputs (and training) went on with their turn: its own moment.
      const bool raced = out.weights_race || out.training_race;
      rec.seconds = import_s + (raced ? out.seconds_since_start : std::max(0.0, hunt_s - after));
      rec.weights_race = out.weights_race;
      rec.training_race = out.training_race;
      rec.iterations = out.iterations;
      rec.study_count = manifest->expect.study_count(out.iterations);
      rec.finding_class = out.finding_class;
      rec.contradicted_proof = contradicts(out);
      rec.expected_op = s.expected_op.empty() || out.event.op_type == s.expected_op;
      rec.weight_search = out.weights_from > 0;
      if (o.replay) {
        auto again = o.replay(h.manifest, out);
        if (!again) {
          rec.replay_error = again.message();
        } else {
          rec.replayed = true;
          rec.reproduced = *again;
        }
      }
      rec.producer = fmt::format("{} '{}' ({})", out.event.op_type, out.event.node_name, pass_name(out.pass));
      break;
    }
    s.runs.push_back(rec);
  }
  return s;
}

SubjectResult summarize(const SubjectRuns& s) {
  SubjectResult r;
  r.id = s.id;
  r.expected_op = s.expected_op;
  r.study_seconds = s.study_seconds;
  r.study_iterations = s.study_iterations;
  r.note = s.note;
  if (!s.setup_error.empty()) {
    r.error = s.setup_error;
    return r;
  }
  std::vector<const RunRecord*> ordered;
  for (const RunRecord& rec : s.runs) ordered.push_back(&rec);
  std::sort(ordered.begin(), ordered.end(), [](const RunRecord* a, const RunRecord* b) { return a->run < b->run; });
  for (const RunRecord* rec : ordered) {
    ++r.runs;
    if (!rec->error.empty()) {
      r.error = rec->error;
      break;
    }
    r.loss_scaling |= rec->loss_scaling;
    r.scaler_skipped_steps.push_back(rec->scaler_skipped_steps);
    if (!rec->triggered) continue;
    ++r.triggered;
    r.seconds.push_back(rec->seconds);
    r.iterations.push_back(rec->iterations);
    r.study_counts.push_back(rec->study_count);
    r.classes.push_back(rec->finding_class);
    r.contradicted_proofs += rec->contradicted_proof;
    ++r.by_class[static_cast<int>(rec->finding_class)];
    r.expected_op_hits += rec->expected_op;
    r.weight_search_hits += rec->weight_search;
    r.weights_race_hits += rec->weights_race;
    r.training_race_hits += rec->training_race;
    if (!rec->replay_error.empty())
      r.error = fmt::format("replaying the witness of run {}: {}", rec->run + 1, rec->replay_error);
    r.replayed += rec->replayed;
    r.reproduced += rec->reproduced;
    if (r.producer.empty()) r.producer = rec->producer;
  }
  return r;
}

SubjectResult run_subject(const std::string& id, const BenchOptions& o, int& runs_done, int runs_total) {
  std::vector<int> runs(static_cast<size_t>(std::max(o.runs, 0)));
  std::iota(runs.begin(), runs.end(), 0);
  SubjectResult r = summarize(run_subject_runs(id, o, runs, /*stop_at_error=*/true, runs_done, runs_total));
  if (o.fix) r.fix = fix_subject(id, (fs::path(o.zoo_dir) / id / "manifest.toml").string(), o);
  return r;
}

}  // namespace grist
