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
  bool fix = false;                // also run grist fix on each subject (bench --fix)
  double fix_hunt_seconds = 5;     // the fix's check (b) budget
  std::string fix_out;             // folder for the repaired models (one per subject), empty: not written
  std::vector<std::string> only;   // subject ids; empty: all
  int runs = 10;                   // seeds per subject
  uint64_t first_seed = 1;
  double time_limit_s = 60;        // per run
  int64_t max_iterations = 0;      // per hazard, overriding every manifest's; 0: the manifests'
  std::optional<Variant> variant;  // override every manifest's
  // How far the search may go beyond the inputs (SearchConfig): no weight search, no crafted training.
  bool no_weights = false, no_training = false;
  bool stall_rule = false;  // every hunt's stages end when the search stalls (SearchConfig::stall_rule)
  bool craft_early = false;  // crafted training joins when the inputs stall (SearchConfig::craft_early)
  bool no_race_weights = false;   // no hunt races the weights (SearchConfig::race_weights off)
  bool no_race_training = false;  // nor crafted training (SearchConfig::race_training off)
  std::optional<Precision> precision;  // override every manifest's [numerics] precision (bench --precision)
  std::function<void(const std::string& subject, int run, int runs_done, int runs_total)> on_run;
  // Replays a trigger's witness the way `grist replay` does (the caller writes and reads it): true when the
  // same producer fails again. Null: triggers are not replayed.
  std::function<Result<bool>(const Manifest&, const HazardOutcome&)> replay;
};

// grist fix on a subject: the repair of its expected hazard and that repair's checks, the preconditions, and the
// subject's other may-fail hazards.
struct SubjectFix {
  bool ran = false;
  std::string error;
  std::string hazard;            // the expected hazard's label ("#3 Log '/Log' (...)")
  std::string repair;            // the catalogue id of its repair, empty: none proved
  std::string pattern;
  double constant = 0;
  std::string a, b, c, d;        // the checks' states
  bool verified = false;         // repaired, and every check passed or did not apply
  bool pre_i = false, pre_w = false, pre_wi = false;  // preconditions found
  bool pre_i_holds_data = false, pre_wi_holds_data = false;  // the input boxes hold the manifest's data
  double width_i = 0, width_w = 0, width_wi = 0;     // the tightest box's width relative to its assumed range
  double size_i = 0, size_w = 0, size_wi = 0;        // the boxes' relative size over all variables (geometric mean)
  bool max_i = false, max_w = false, max_wi = false; // checked maximal: widening any bound by 1 % breaks the proof
  int hazards = 0, fixed = 0;    // the subject's hazards to repair, and how many were fixed
  double seconds = 0;
  std::string fixed_model;       // where the repaired model was written
};

struct SubjectResult {
  std::string id;
  std::string expected_op;
  int runs = 0;
  int triggered = 0;
  int expected_op_hits = 0;          // triggers whose producer is the expected op
  int weight_search_hits = 0;        // triggers found once the weights had joined the search
  int weights_race_hits = 0;         // of which by the weights race's twin
  int training_race_hits = 0;        // and by the training race's
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
  SubjectFix fix;                    // with BenchOptions::fix
  bool loss_scaling = false;         // some run trained under an amp-* loss scaler
  std::vector<int64_t> scaler_skipped_steps;  // per run counted, its scaler's skipped steps

  int count(FindingClass c) const { return by_class[static_cast<int>(c)]; }
  // Triggers a run of the program reaches (input- or training-reached): what GRIST's own figures count.
  int comparable() const { return count(FindingClass::InputReached) + count(FindingClass::TrainingReached); }
  double mean_seconds() const;
  double mean_comparable_seconds() const;  // 0 when none
  double median_seconds() const;
  int64_t median_iterations() const;
  int64_t median_study_count() const;
};

// One (subject, seed) run as the table counts it: runs made apart (`bench --shard`, on other machines) join
// into exactly the subject's row one unsharded run gives (`bench merge`).
struct RunRecord {
  int run = 0;                      // 0-based: seed = first_seed + run
  std::string error;                // the hunt failed: the subject's row stops at this run
  bool triggered = false;
  double seconds = 0;               // to the trigger, the scan and the hazards before it counted
  int64_t iterations = 0;           // grist's 1-based count
  int64_t study_count = 0;          // the same in the study's counting
  FindingClass finding_class = FindingClass::InputReached;
  bool expected_op = false;         // the producer is the subject's expected op
  bool weight_search = false;       // found once the weights had joined the search
  bool weights_race = false;        // found by the weights race's twin (SearchConfig::race_weights)
  bool training_race = false;       // found by the training race's twin (SearchConfig::race_training)
  bool contradicted_proof = false;  // see SubjectResult::contradicted_proofs
  bool replayed = false, reproduced = false;
  std::string replay_error;
  std::string producer;             // "Op 'node' (pass)"
  // amp-*: the steps the loss scaler skipped on an inf/NaN gradient (GradScaler's normal behaviour) over the
  // hazards this run hunted, up to its trigger; loss_scaling: a scaler ran (an amp-* precision that trains).
  bool loss_scaling = false;
  int64_t scaler_skipped_steps = 0;
};

// A subject's facts (its manifest's [expect]) and the runs made of it, in any order.
struct SubjectRuns {
  std::string id;
  std::string expected_op;
  std::optional<double> study_seconds;
  std::optional<int64_t> study_iterations;
  std::string note;
  std::string setup_error;          // non-empty: the subject could not run at all (manifest, model)
  std::vector<RunRecord> runs;
};

// Hunts the given runs (0-based indexes) of one subject. With stop_at_error, a failed hunt ends the subject's runs
// (the unsharded benchmark); without, every given run is made (a shard: the merge decides what counts).
SubjectRuns run_subject_runs(const std::string& id, const BenchOptions& o, const std::vector<int>& runs,
                             bool stop_at_error, int& runs_done, int runs_total);

// The subject's row from its runs, taken in run order up to the first failed hunt (what an unsharded benchmark
// would have made).
SubjectResult summarize(const SubjectRuns& s);

// Subject ids found in zoo_dir (folders holding manifest.toml), in natural order, filtered by `only`;
// an unknown id in `only` is an error.
Result<std::vector<std::string>> list_subjects(const std::string& zoo_dir, const std::vector<std::string>& only);

// Runs one subject `runs` times (then grist fix on it, with BenchOptions::fix); errors are kept in the result so
// the table can show them.
SubjectResult run_subject(const std::string& id, const BenchOptions& o, int& runs_done, int runs_total);

// grist fix on one subject's model with its manifest (benchmark_fix.cpp).
SubjectFix fix_subject(const std::string& id, const std::string& manifest_path, const BenchOptions& o);

}  // namespace grist
