// The benchmark runner: hunts every zoo subject (zoo/<id>/manifest.toml) with several seeds and gathers
// what the results table needs: triggered k of N, times, iterations, the producer, the study's figures.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/manifest.h"
#include "search/hunt.h"
#include "util/status.h"

namespace grist {

struct BenchOptions {
  std::string zoo_dir;
  std::vector<std::string> only;   // subject ids; empty: all
  int runs = 10;                   // seeds per subject
  uint64_t first_seed = 1;
  double time_limit_s = 60;        // per run
  int64_t max_iterations = 0;      // per hazard, overriding every manifest's; 0: the manifests'
  std::optional<Variant> variant;  // override every manifest's
  // How far the search may go beyond the inputs (SearchConfig): no weight search, no crafted training.
  bool no_weights = false, no_training = false;
  std::function<void(const std::string& subject, int run, int runs_done, int runs_total)> on_run;
  // Replays a trigger's witness the way `grist replay` does (the caller writes and reads it): true when the
  // same producer fails again. Null: triggers are not replayed.
  std::function<Result<bool>(const Manifest&, const HazardOutcome&)> replay;
};

struct SubjectResult {
  std::string id;
  std::string expected_op;
  int runs = 0;
  int triggered = 0;
  int expected_op_hits = 0;          // triggers whose producer is the expected op
  int weight_search_hits = 0;        // triggers found once the weights had joined the search
  int by_class[3] = {0, 0, 0};       // triggers by FindingClass
  int replayed = 0, reproduced = 0;  // witnesses replayed, and those whose producer failed again
  // Input- or training-reached triggers of a hazard the interval scan proved safe for what that run did (for
  // every run, or for at least the training steps it had taken) with inputs inside the scan's ranges: an
  // unsound proof. Must stay 0.
  int contradicted_proofs = 0;
  std::vector<double> seconds;       // of the triggered runs
  std::vector<FindingClass> classes; // of the triggered runs
  std::vector<int64_t> iterations;   // of the triggered runs, grist's 1-based count
  std::vector<int64_t> study_counts; // the same in the study's counting
  std::string producer;              // "Op 'node' (pass)" of the first triggered run
  std::optional<double> study_seconds;
  std::optional<int64_t> study_iterations;
  std::string note;
  std::string error;                 // non-empty: the subject could not run

  int count(FindingClass c) const { return by_class[static_cast<int>(c)]; }
  // Triggers a run of the program reaches (input- or training-reached): what GRIST's own figures count.
  int comparable() const { return count(FindingClass::InputReached) + count(FindingClass::TrainingReached); }
  double mean_seconds() const;
  double mean_comparable_seconds() const;  // 0 when none
  double median_seconds() const;
  int64_t median_iterations() const;
  int64_t median_study_count() const;
};

// Subject ids found in zoo_dir (folders holding manifest.toml), in natural order, filtered by `only`;
// an unknown id in `only` is an error.
Result<std::vector<std::string>> list_subjects(const std::string& zoo_dir, const std::vector<std::string>& only);

// Runs one subject `runs` times; errors are kept in the result so the table can show them.
SubjectResult run_subject(const std::string& id, const BenchOptions& o, int& runs_done, int runs_total);

}  // namespace grist
