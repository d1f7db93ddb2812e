#include "report/bench_report.h"

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
  std::string s = "bug,expected_op,runs,triggered,input_reached,training_reached,weights_perturbed,replayed,"
                  "reproduced,expected_op_hits,weight_search_hits,mean_s,median_s,median_iterations,median_study_count,"
                  "study_seconds,study_iterations,first_producer,error\n";
  auto quote = [](std::string v) {
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : rows)
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.expected_op, r.runs,
                     r.triggered, r.count(FindingClass::InputReached), r.count(FindingClass::TrainingReached),
                     r.count(FindingClass::WeightsPerturbed), r.replayed, r.reproduced, r.expected_op_hits, r.weight_search_hits, r.triggered ? fmt::format("{:.6f}", r.mean_seconds()) : "",
                     r.triggered ? fmt::format("{:.6f}", r.median_seconds()) : "",
                     r.triggered ? std::to_string(r.median_iterations()) : "",
                     r.triggered ? std::to_string(r.median_study_count()) : "",
                     r.study_seconds ? fmt::format("{}", *r.study_seconds) : "",
                     r.study_iterations ? std::to_string(*r.study_iterations) : "", quote(r.producer), quote(r.error));
  return s;
}

nlohmann::json bench_json(const std::vector<SubjectResult>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json x{{"bug", r.id},           {"expected_op", r.expected_op}, {"runs", r.runs},
                     {"triggered", r.triggered}, {"expected_op_hits", r.expected_op_hits},
                     {"weight_search_hits", r.weight_search_hits}, {"seconds", r.seconds},
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
    j.push_back(x);
  }
  return j;
}

std::string bench_markdown(const std::vector<SubjectResult>& rows) {
  std::string s = "| bug | op | triggered | input-reached | training-reached | weights-perturbed | replayed | mean s | "
                  "median s | median iterations | study count | study | speed-up | first producer |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      s += fmt::format("| {} | {} | error | | | | | | | | | {} | | {} |\n", r.id, r.expected_op, study_figure(r),
                       r.error);
      continue;
    }
    s += fmt::format("| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.id,
                     r.expected_op, r.triggered, r.runs, r.count(FindingClass::InputReached),
                     r.count(FindingClass::TrainingReached), r.count(FindingClass::WeightsPerturbed), replay_of(r),
                     r.triggered ? fmt::format("{:.4f}", r.mean_seconds()) : "-",
                     r.triggered ? fmt::format("{:.4f}", r.median_seconds()) : "-",
                     r.triggered ? std::to_string(r.median_iterations()) : "-",
                     r.triggered ? std::to_string(r.median_study_count()) : "-", study_figure(r), speedup(r),
                     r.producer.empty() ? "-" : r.producer);
  }
  return s + "\n" + bench_totals(rows);
}

}  // namespace grist
