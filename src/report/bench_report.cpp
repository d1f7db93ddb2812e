#include "report/bench_report.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace grist {

namespace {

std::string study_figure(const SubjectResult& r) {
  std::string s;
  if (r.study_seconds) s += fmt::format("{:.2f} s", *r.study_seconds);
  if (r.study_iterations) s += fmt::format("{}@{}@", s.empty() ? "" : " ", *r.study_iterations);
  return s.empty() ? "-" : s;
}

std::string speedup(const SubjectResult& r) {
  if (!r.study_seconds || r.triggered == 0 || r.mean_seconds() <= 0) return "-";
  return fmt::format("{:.0f}x", *r.study_seconds / r.mean_seconds());
}

// "I/T/W": triggers that were input-reached, training-reached, weights-perturbed.
std::string classes_of(const SubjectResult& r) {
  return fmt::format("{}/{}/{}", r.count(FindingClass::InputReached), r.count(FindingClass::TrainingReached),
                     r.count(FindingClass::WeightsPerturbed));
}

int64_t skipped_total(const SubjectResult& r) {
  int64_t n = 0;
  for (int64_t k : r.scaler_skipped_steps) n += k;
  return n;
}

bool any_loss_scaling(const std::vector<SubjectResult>& rows) {
  for (const auto& r : rows)
    if (r.loss_scaling) return true;
  return false;
}

std::string replay_of(const SubjectResult& r) {
  return r.replayed ? fmt::format("{}/{}", r.reproduced, r.replayed) : "-";
}

struct Totals {
  int subjects = 0, all_runs = 0, some_runs = 0;
  double grist_s = 0, study_s = 0;  // over subjects triggered in every run that have a study time
  // The same counting only the triggers a program run reaches (input- and training-reached).
  int comparable_all = 0, comparable_nine_in_ten = 0, comparable_some = 0;
  double comparable_grist_s = 0, comparable_study_s = 0;
  int triggers = 0, replayed = 0, reproduced = 0, contradicted = 0, by_class[3] = {0, 0, 0};
};

Totals totals_of(const std::vector<SubjectResult>& rows) {
  Totals t;
  for (const auto& r : rows) {
    ++t.subjects;
    if (r.triggered > 0) ++t.some_runs;
    if (r.runs > 0 && r.triggered == r.runs) {
      ++t.all_runs;
      if (r.study_seconds) {
        t.grist_s += r.mean_seconds();
        t.study_s += *r.study_seconds;
      }
    }
    if (r.comparable() > 0) ++t.comparable_some;
    if (r.runs > 0 && 10 * r.comparable() >= 9 * r.runs) ++t.comparable_nine_in_ten;
    if (r.runs > 0 && r.comparable() == r.runs) {
      ++t.comparable_all;
      if (r.study_seconds) {
        t.comparable_grist_s += r.mean_comparable_seconds();
        t.comparable_study_s += *r.study_seconds;
      }
    }
    t.triggers += r.triggered;
    t.replayed += r.replayed;
    t.reproduced += r.reproduced;
    t.contradicted += r.contradicted_proofs;
    for (int k = 0; k < 3; ++k) t.by_class[k] += r.by_class[k];
  }
  return t;
}

}  // namespace

std::string bench_header() {
  return fmt::format("{:<5} {:<8} {:>6} {:>8} {:>6} {:>9} {:>9} {:>8} {:>8}  {:<14} {:>6}  {}\n", "bug", "op", "trig",
                     "I/T/W", "replay", "mean s", "median s", "iters", "study#", "study", "speed", "first producer");
}

std::string bench_row(const SubjectResult& r) {
  if (!r.error.empty()) return fmt::format("{:<5} {:<8} ERROR  {}\n", r.id, r.expected_op, r.error);
  return fmt::format("{:<5} {:<8} {:>6} {:>8} {:>6} {:>9} {:>9} {:>8} {:>8}  {:<14} {:>6}  {}\n", r.id,
                     r.expected_op, fmt::format("{}/{}", r.triggered, r.runs), classes_of(r), replay_of(r),
                     r.triggered ? fmt::format("{:.4f}", r.mean_seconds()) : "-",
                     r.triggered ? fmt::format("{:.4f}", r.median_seconds()) : "-",
                     r.triggered ? std::to_string(r.median_iterations()) : "-",
                     r.triggered ? std::to_string(r.median_study_count()) : "-", study_figure(r), speedup(r),
                     r.producer.empty() ? "-" : r.producer);
}

std::string bench_totals(const std::vector<SubjectResult>& rows) {
  Totals t = totals_of(rows);
  std::string s = fmt::format("{} subjects: {} triggered in every run, {} in at least one run.\n", t.subjects,
                              t.all_runs, t.some_runs);
  if (t.study_s > 0)
    s += fmt::format("On the subjects with a published GRIST time: grist {:.3f} s in total (mean per subject), "
                     "GRIST {:.2f} s: {:.0f}x faster.\n",
                     t.grist_s, t.study_s, t.grist_s > 0 ? t.study_s / t.grist_s : 0.0);
  s += fmt::format("Findings: {} input-reached, {} training-reached, {} weights-perturbed", t.by_class[0],
                   t.by_class[1], t.by_class[2]);
  s += t.replayed ? fmt::format("; {} of {} witnesses replayed fail again", t.reproduced, t.replayed) : "";
  s += fmt::format("; {} contradicted a proof of the interval scan.\n", t.contradicted);
  if (any_loss_scaling(rows)) {
    // Skipped steps are GradScaler's normal behaviour, told apart from failures (issue 16).
    int64_t skipped = 0;
    int runs = 0;
    for (const auto& r : rows) {
      skipped += skipped_total(r);
      runs += static_cast<int>(r.scaler_skipped_steps.size());
    }
    s += fmt::format("Loss scaling: the scaler skipped {} step{} on an inf/NaN gradient over {} run{} (not "
                     "failures).\n", skipped, skipped == 1 ? "" : "s", runs, runs == 1 ? "" : "s");
  }
  s += fmt::format("GRIST-comparable (input- or training-reached only): {} subjects in every run, {} in at least 9 "
                   "of 10, {} in at least one run",
                   t.comparable_all, t.comparable_nine_in_ten, t.comparable_some);
  if (t.comparable_study_s > 0)
    s += fmt::format("; on those in every run with a published GRIST time: grist {:.3f} s, GRIST {:.2f} s: {:.0f}x "
                     "faster",
                     t.comparable_grist_s, t.comparable_study_s,
                     t.comparable_grist_s > 0 ? t.comparable_study_s / t.comparable_grist_s : 0.0);
  return s + ".\n";
}

std::string bench_csv(const std::vector<SubjectResult>& rows) {
  bool fixes = false;
  for (const auto& r : rows) fixes |= r.fix.ran;
  std::string s = "bug,expected_op,runs,triggered,input_reached,training_reached,weights_perturbed,replayed,"
                  "reproduced,expected_op_hits,weight_search_hits,mean_s,median_s,median_iterations,median_study_count,"
                  "study_seconds,study_iterations,first_producer,error";
  const bool scaling = any_loss_scaling(rows);
  if (scaling) s += ",scaler_skipped_steps";
  s += fixes ? ",fix_repair,fix_a,fix_b,fix_c,fix_d,fix_verified,pre_i,pre_i_holds_data,pre_w,pre_wi,width_i,width_w,"
               "width_wi,size_i,size_w,size_wi,fix_hazards,fix_fixed,fix_seconds,fix_error\n"
             : "\n";
  auto quote = [](std::string v) {
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : rows) {
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", r.id, r.expected_op, r.runs,
                     r.triggered, r.count(FindingClass::InputReached), r.count(FindingClass::TrainingReached),
                     r.count(FindingClass::WeightsPerturbed), r.replayed, r.reproduced, r.expected_op_hits, r.weight_search_hits, r.triggered ? fmt::format("{:.6f}", r.mean_seconds()) : "",
                     r.triggered ? fmt::format("{:.6f}", r.median_seconds()) : "",
                     r.triggered ? std::to_string(r.median_iterations()) : "",
                     r.triggered ? std::to_string(r.median_study_count()) : "",
                     r.study_seconds ? fmt::format("{}", *r.study_seconds) : "",
                     r.study_iterations ? std::to_string(*r.study_iterations) : "", quote(r.producer), quote(r.error));
    if (scaling) s += "," + (r.loss_scaling ? std::to_string(skipped_total(r)) : std::string());
    const SubjectFix& f = r.fix;
    s += fixes ? fmt::format(",{},{},{},{},{},{},{},{},{},{},{:.4g},{:.4g},{:.4g},{:.4g},{:.4g},{:.4g},{},{},"
                             "{:.3f},{}\n",
                             f.repair, f.a, f.b, f.c, f.d, f.verified, f.pre_i, f.pre_i_holds_data, f.pre_w, f.pre_wi,
                             f.width_i, f.width_w, f.width_wi, f.size_i, f.size_w, f.size_wi, f.hazards, f.fixed,
                             f.seconds, quote(f.error))
               : "\n";
  }
  return s;
}

nlohmann::json bench_json(const std::vector<SubjectResult>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json x{{"bug", r.id},           {"expected_op", r.expected_op}, {"runs", r.runs},
                     {"triggered", r.triggered}, {"expected_op_hits", r.expected_op_hits},
                     {"weight_search_hits", r.weight_search_hits}, {"weights_race_hits", r.weights_race_hits},
                     {"training_race_hits", r.training_race_hits},
                     {"seconds", r.seconds},
                     {"iterations", r.iterations}, {"study_counts", r.study_counts}, {"first_producer", r.producer},
                     {"input_reached", r.count(FindingClass::InputReached)},
                     {"training_reached", r.count(FindingClass::TrainingReached)},
                     {"weights_perturbed", r.count(FindingClass::WeightsPerturbed)},
                     {"replayed", r.replayed}, {"reproduced", r.reproduced},
                     {"contradicted_proofs", r.contradicted_proofs}};
    nlohmann::json classes = nlohmann::json::array();
    for (FindingClass c : r.classes) classes.push_back(std::string(finding_class_name(c)));
    x["classes"] = classes;
    if (r.study_seconds) x["study_seconds"] = *r.study_seconds;
    if (r.study_iterations) x["study_iterations"] = *r.study_iterations;
    if (!r.error.empty()) x["error"] = r.error;
    if (!r.note.empty()) x["note"] = r.note;
    if (r.loss_scaling) {
      x["scaler_skipped_steps"] = skipped_total(r);
      x["scaler_skipped_steps_per_run"] = r.scaler_skipped_steps;
    }
    if (r.fix.ran) {
      const SubjectFix& f = r.fix;
      x["fix"] = {{"hazard", f.hazard}, {"repair", f.repair}, {"pattern", f.pattern}, {"constant", f.constant},
                  {"checks", {{"a", f.a}, {"b", f.b}, {"c", f.c}, {"d", f.d}}}, {"verified", f.verified},
                  {"preconditions", {{"I", f.pre_i}, {"I_holds_data", f.pre_i_holds_data}, {"W+I_holds_data", f.pre_wi_holds_data}, {"W", f.pre_w},
                                     {"W+I", f.pre_wi}, {"width_I", f.width_i}, {"width_W", f.width_w},
                                     {"width_W+I", f.width_wi}, {"size_I", f.size_i}, {"size_W", f.size_w},
                                     {"size_W+I", f.size_wi}, {"maximal_I", f.max_i}, {"maximal_W", f.max_w},
                                     {"maximal_W+I", f.max_wi}}},
                  {"hazards", f.hazards}, {"fixed", f.fixed}, {"seconds", f.seconds}, {"fixed_model", f.fixed_model},
                  {"error", f.error}};
    }
    j.push_back(x);
  }
  return j;
}

std::string bench_markdown(const std::vector<SubjectResult>& rows) {
  // amp-*: one more column, the steps the loss scaler skipped (summed over the runs).
  const bool scaling = any_loss_scaling(rows);
  std::string s = "| bug | op | triggered | input-reached | training-reached | weights-perturbed | replayed | mean s | "
                  "median s | median iterations | study count | study | speed-up | first producer |";
  s += scaling ? " skipped steps |\n" : "\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";
  s += scaling ? "---|\n" : "\n";
  auto skipped = [&](const SubjectResult& r) {
    return scaling ? (r.loss_scaling ? fmt::format(" {} |", skipped_total(r)) : std::string(" - |")) : "";
  };
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      s += fmt::format("| {} | {} | error | | | | | | | | | {} | | {} |{}\n", r.id, r.expected_op, study_figure(r),
                       r.error, skipped(r));
      continue;
    }
    s += fmt::format("| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |{}\n", r.id,
                     r.expected_op, r.triggered, r.runs, r.count(FindingClass::InputReached),
                     r.count(FindingClass::TrainingReached), r.count(FindingClass::WeightsPerturbed), replay_of(r),
                     r.triggered ? fmt::format("{:.4f}", r.mean_seconds()) : "-",
                     r.triggered ? fmt::format("{:.4f}", r.median_seconds()) : "-",
                     r.triggered ? std::to_string(r.median_iterations()) : "-",
                     r.triggered ? std::to_string(r.median_study_count()) : "-", study_figure(r), speedup(r),
                     r.producer.empty() ? "-" : r.producer, skipped(r));
  }
  return s + "\n" + bench_totals(rows);
}

namespace {

std::string mark(bool found, double size, double width) {
  return found ? fmt::format("{:.2g}/{:.2g}", size, width) : "-";
}

std::string checks(const SubjectFix& f) {
  auto c = [](const std::string& s) { return s == "passed" ? "✓" : (s == "n/a" ? "n/a" : (s.empty() ? "-" : "✗")); };
  return fmt::format("{} {} {} {}", c(f.a), c(f.b), c(f.c), c(f.d));
}

struct FixTotals {
  int subjects = 0, repaired = 0, verified = 0, pre_i = 0, pre_i_data = 0, pre_w = 0, pre_wi = 0, errors = 0;
  int pre_wi_data = 0;
  int maximal = 0, found = 0, degenerate = 0;  // over the three scopes' found boxes
  int hazards = 0, fixed = 0;
  double seconds_max = 0, seconds_sum = 0;
  std::vector<double> width_i, width_w, width_wi, size_i, size_w, size_wi;
};

FixTotals fix_totals_of(const std::vector<SubjectResult>& rows) {
  FixTotals t;
  for (const auto& r : rows) {
    if (!r.fix.ran) continue;
    const SubjectFix& f = r.fix;
    ++t.subjects;
    t.errors += !f.error.empty();
    t.repaired += !f.repair.empty();
    t.verified += f.verified;
    t.pre_i += f.pre_i;
    t.pre_i_data += f.pre_i_holds_data;
    t.pre_wi_data += f.pre_wi_holds_data;
    t.pre_w += f.pre_w;
    t.pre_wi += f.pre_wi;
    t.hazards += f.hazards;
    t.fixed += f.fixed;
    t.seconds_max = std::max(t.seconds_max, f.seconds);
    t.seconds_sum += f.seconds;
    for (auto [found, maximal, width] : {std::tuple{f.pre_i, f.max_i, f.width_i}, std::tuple{f.pre_w, f.max_w, f.width_w},
                                          std::tuple{f.pre_wi, f.max_wi, f.width_wi}}) {
      t.found += found;
      t.maximal += found && maximal;
      t.degenerate += found && width < 1e-9;
    }
    if (f.pre_i) t.width_i.push_back(f.width_i), t.size_i.push_back(f.size_i);
    if (f.pre_w) t.width_w.push_back(f.width_w), t.size_w.push_back(f.size_w);
    if (f.pre_wi) t.width_wi.push_back(f.width_wi), t.size_wi.push_back(f.size_wi);
  }
  return t;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string percent(int k, int n) { return n > 0 ? fmt::format("{:.0f} %", 100.0 * k / n) : "-"; }

}  // namespace

std::string bench_fix_header() {
  return fmt::format("{:<5} {:<24} {:<9} {:>15} {:>15} {:>15}  {:<9} {:>8} {:>6}  {}\n", "bug", "repair", "a b c d",
                     "I size/width", "W size/width", "W+I size/width", "I's data", "hazards", "s", "hazard");
}

std::string bench_fix_row(const SubjectResult& r) {
  const SubjectFix& f = r.fix;
  if (!f.ran) return "";
  if (!f.error.empty()) return fmt::format("{:<5} ERROR  {}\n", r.id, f.error);
  return fmt::format("{:<5} {:<24} {:<9} {:>15} {:>15} {:>15}  {:<9} {:>8} {:>6.2f}  {}\n", r.id,
                     f.repair.empty() ? "NONE" : f.repair + (f.verified ? "" : " (!)"), checks(f),
                     mark(f.pre_i, f.size_i, f.width_i), mark(f.pre_w, f.size_w, f.width_w),
                     mark(f.pre_wi, f.size_wi, f.width_wi),
                     f.pre_i ? (f.pre_i_holds_data ? "holds" : "excludes") : "-",
                     fmt::format("{}/{}", f.fixed, f.hazards), f.seconds, f.hazard);
}

std::string bench_fix_totals(const std::vector<SubjectResult>& rows) {
  const FixTotals t = fix_totals_of(rows);
  if (t.subjects == 0) return "";
  std::string s = fmt::format(
      "grist fix on {} subjects: a verified graph repair (checks a-d) of the expected hazard for {}/{} ({} repaired "
      "at all); every hazard to repair fixed: {}/{}; at most {:.2f} s a subject, {:.1f} s in all{}.\n",
      t.subjects, t.verified, t.subjects, t.repaired, t.fixed, t.hazards, t.seconds_max, t.seconds_sum,
      t.errors ? fmt::format(", {} errors", t.errors) : "");
  s += fmt::format("Preconditions: W+I {}/{} ({}; {} hold the manifest's data), W {}/{} ({}), I {}/{} ({}; {} hold "
                   "the data). "
                   "Median size (geometric mean of the relative widths over every input and trained weight) W+I "
                   "{:.3g}, W {:.3g}, I {:.3g}; median width of the tightest variable W+I {:.3g}, W {:.3g}, "
                   "I {:.3g}.\n",
                   t.pre_wi, t.subjects, percent(t.pre_wi, t.subjects), t.pre_wi_data, t.pre_w, t.subjects,
                   percent(t.pre_w, t.subjects),
                   t.pre_i, t.subjects, percent(t.pre_i, t.subjects), t.pre_i_data, median(t.size_wi), median(t.size_w),
                   median(t.size_i), median(t.width_wi), median(t.width_w), median(t.width_i));
  s += fmt::format("Of the {} boxes found, {} are checked maximal (widening any bound by 1 % of its width breaks the "
                   "proof; the others' search ran out of time) and {} pin some variable to a point.\n",
                   t.found, t.maximal, t.degenerate);
  s += "RANUM (ICSE 2023) on the study's 79 bugs: W+I 79/79 (100 %), W 72/79 (91 %), I 37/79 (47 %); no graph repair, "
       "no check that an input precondition holds the data.\n";
  return s;
}

std::string bench_fix_markdown(const std::vector<SubjectResult>& rows) {
  std::string s = "| bug | hazard | repair | a | b | c | d | I size/width | W size/width | W+I size/width "
                  "| I holds the data | hazards fixed | s |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const SubjectFix& f = r.fix;
    if (!f.ran) continue;
    if (!f.error.empty()) {
      s += fmt::format("| {} | error: {} | | | | | | | | | | | |\n", r.id, f.error);
      continue;
    }
    s += fmt::format("| {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {:.2f} |\n", r.id, f.hazard,
                     f.repair.empty() ? "none" : f.repair, f.verified ? "" : " (a check failed)", f.a, f.b, f.c, f.d,
                     mark(f.pre_i, f.size_i, f.width_i), mark(f.pre_w, f.size_w, f.width_w),
                     mark(f.pre_wi, f.size_wi, f.width_wi), f.pre_i ? (f.pre_i_holds_data ? "yes" : "no") : "-",
                     f.fixed, f.hazards, f.seconds);
  }
  return s + "\n" + bench_fix_totals(rows);
}

}  // namespace grist
