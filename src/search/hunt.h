// grist hunt: the GRIST search (GRIST.md §3) over every hazard of a model, on grist's engine, with the
// first NaN/Inf producer named in every pass the loop runs and the inputs that triggered it kept.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/hazards.h"
#include "config/manifest.h"
#include "engine/grad_scaler.h"
#include "engine/nonfinite.h"
#include "engine/optimizers.h"
#include "graph/graph.h"
#include "tensor/tensor.h"

namespace grist {

enum class TriggerPass {
  Monitored,         // the monitored forward on the persistent batch
  TrainingForward,   // the training step's own forward
  TrainingBackward,  // the training step's gradients
  LossBackward,      // the loss's gradients on the monitored batch, in a model that does not train
  OptimizerStep,     // the optimizer wrote a non-finite weight from finite gradients
};
std::string_view pass_name(TriggerPass p);
Result<TriggerPass> parse_pass_name(const std::string& s);

// How a finding was reached, counted apart everywhere (a trigger that a program run would not hit is not
// the program's bug):
enum class FindingClass {
  InputReached,      // the weights are the ones the model's own training produced in this run
  TrainingReached,   // the weights came from the model's own optimizer steps on crafted training batches
                     // (data within the inputs' ranges, labels from the label set): the system test of RANUM
  WeightsPerturbed,  // only moving the weights directly reached it
};
std::string_view finding_class_name(FindingClass c);  // "input-reached", "training-reached", "weights-perturbed"
Result<FindingClass> parse_finding_class(const std::string& s);

struct Progress {
  int hazard_index = 0;   // 1-based among the hazards hunted
  int hazard_count = 0;
  std::string hazard;     // the target's label
  int64_t iteration = 0;
  double elapsed_s = 0;   // in this hazard's search
  double budget_s = 0;    // this hazard's share of the time limit
  double objective = 0;   // the last objective value
  bool race_triggered = false;           // SearchConfig::race_weights: the twin has a weights-perturbed finding
  bool training_race_triggered = false;  // SearchConfig::race_training: the twin has a training-reached finding
};

struct HuntReport;
struct HazardOutcome;

struct HuntOptions {
  Manifest manifest;       // inputs, training, search settings
  int64_t batch_size = 1;
  bool all = false;        // every hazard: turns on one run, carrying its training state (search/interleave.h)
  // With `all`: each hazard's search starts from the initial model rather than taking turns on one run (grist
  // fix's check of a repair, whose hazards are independent questions).
  bool independent = false;
  bool use_scan = true;    // skip hazards the interval scan proves safe; hunt may-fail ones first
  std::function<void(const Progress&)> on_progress;  // called about every 0.1 s
  // Called once the hazards are found and planned, before the first search (report.hazards is set).
  std::function<void(const HuntReport& report)> on_planned;
  // Called the moment each outcome is final — a trigger, a search that ended, a hazard skipped — so that a
  // caller saves the witness and prints the finding then: an interruption later loses nothing.
  std::function<void(const HuntReport& report, const HazardOutcome& outcome)> on_outcome;
  // Polled every iteration: true ends the search cleanly; the hazards not hunted yet are listed as such.
  std::function<bool()> stop_requested;
  std::chrono::steady_clock::time_point process_start = std::chrono::steady_clock::now();
};

// One training step on a crafted batch, as the hunt took it: the batch (every input the training pass reads)
// and the engine's generator before the step (dropout masks); replayed in order by `grist replay`.
struct CraftedStep {
  std::map<std::string, Tensor> batch;
  std::string rng_state;
};

// What reproduces a trigger: the data fed to the pass that produced the first non-finite value, and the
// weights as they were then when training had changed them. For a training-reached finding the weights
// are those the crafted training started from, with the optimizer's state then, and the steps to replay.
struct Witness {
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> weights;  // empty when no training step ran
  TriggerPass pass = TriggerPass::Monitored;
  bool dropout = false;                   // dropout mode of that pass
  std::string rng_state;                  // the engine's generator before that pass (dropout masks)
  std::vector<CraftedStep> training;      // training-reached: the crafted steps, from `weights`
  std::vector<std::string> trained;       // the weights the model's optimizer updates, in its order
  std::optional<OptimizerState> optimizer;  // the optimizer's state at `weights` (training-reached, or an
                                            // optimizer-step trigger)
  std::optional<GradScalerState> scaler;    // amp-* training: the loss scaler's state where the replay starts
};

// How far the weight search carried one weight tensor (weights-perturbed findings), beside what the model's
// own training did to it: root-mean-square changes, so tensors of any size compare.
struct WeightMove {
  std::string name;
  double moved_rms = 0;       // from the weights when they joined the search to the trigger
  double initial_rms = 0;     // of the initial value
  double trained_rms = 0;     // what the model's own training moved it before the weights joined
  int64_t trained_steps = 0;  // in that many training steps
  int64_t searched_steps = 0; // iterations with the weights searched
};

struct HazardOutcome {
  HazardSite site;             // the hazard hunted
  bool triggered = false;
  std::string skipped;         // non-empty: why it was not hunted
  std::string stopped;         // non-empty: why its search ended before its budget did
  int64_t iterations = 0;      // 1-based iteration of the trigger, or iterations run
  double seconds = 0;          // from the start of this hazard's search
  double seconds_since_start = 0;  // from process start
  double budget_s = 0;
  double objective = 0;        // the last objective value
  TriggerPass pass = TriggerPass::Monitored;
  NonFiniteEvent event;        // the first producer
  int fired_site = 0;          // id of the hazard site whose node produced it (0: another node)
  std::string strategy;        // which strategy found it: grist (inputs), grist+training (crafted training
                               // batches), grist+weights, original, random
  FindingClass finding_class = FindingClass::InputReached;
  int64_t training_from = 0;   // iteration at which crafted training batches began (0: never)
  int crafting_attempts = 0;   // --craft-early: crafted training begun this often (the stalled ones undone)
  int64_t weights_from = 0;    // iteration at which the weights joined the search (0: never)
  int64_t training_steps = 0;  // optimizer steps the model had taken when it fired
  std::vector<WeightMove> weight_moves;  // weights-perturbed: the tensors the search moved most, first
  // A non-finite gradient that no weight's (or, without training, no input's) gradient inherited: a later
  // select, mask or zero product removed it. Not a trigger; the first one seen is kept for the report.
  NonFiniteEvent masked;
  int64_t masked_iteration = 0;
  int64_t masked_count = 0;    // passes in which one was seen
  // amp-* training's loss scaling (engine/grad_scaler.h): steps the scaler skipped on an inf/NaN gradient (its
  // normal behaviour, never a trigger by itself), and the scale after the last step (0: no scaler ran). A
  // trigger with scale_collapsed is a gradient that stayed non-finite while the scale backed off below
  // GradScaler::kCollapseFloor: a genuine failure, not one the scaler absorbs.
  int64_t scaler_skipped_steps = 0;
  double loss_scale = 0;
  bool scale_collapsed = false;
  // SearchConfig::race_weights. `weights_race`: this finding is the race's (the weights stepped from `weights_from`
  // beside the program's course, which ran `course_iterations` without an input- or training-reached one).
  // `race_iterations` > 0: the race triggered first, weights-perturbed, at that iteration (after race_seconds),
  // but the course then reached this finding, of a better class, which is reported instead.
  // SearchConfig::race_training. `training_race`: this finding is the training twin's (crafted training from
  // `training_from` beside the course, which ran `course_iterations` without an input-reached one).
  bool weights_race = false;
  bool training_race = false;
  int64_t course_iterations = 0;
  double race_seconds = 0;
  int64_t race_iterations = 0;
  Witness witness;
};

struct HuntReport {
  std::vector<HazardSite> hazards;
  std::vector<HazardOutcome> outcomes;
  bool interrupted = false;  // stop_requested ended it
  double seconds = 0;       // in all, the scan included
  double scan_seconds = 0;  // of which the interval scan that ordered the hazards
  double data_seconds = 0;  // and loading the data (a streamed file's rows go on arriving in the background)
  // and the searches, from each one's start to its end: past a finding's `seconds` where the course went on
  // after a race's finding to give its inputs their turn
  double search_seconds = 0;
};

Result<HuntReport> hunt(const Graph& g, const HuntOptions& options);

}  // namespace grist
