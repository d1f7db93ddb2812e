#include "search/hunt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <optional>
#include <thread>

#include "analysis/half_hazards.h"
#include "analysis/scan.h"
#include "analysis/trained_weights.h"
#include "analysis/training_bounds.h"
#include "data/dataset.h"
#include "engine/executor.h"
#include "engine/checkpoint.h"
#include "engine/grad_scaler.h"
#include "engine/scaled_step.h"
#include "engine/optimizers.h"
#include "ops/registry.h"
#include "search/interleave.h"
#include "search/pretraining.h"
#include "search/race.h"
#include "search/search_choices.h"
#include "search/adam_step.h"
#include "search/label_choice.h"
#include "search/line_step.h"
#include "search/sign_step.h"
#include "search/switching.h"
#include "search/training_phases.h"

namespace grist {

std::string_view pass_name(TriggerPass p) {
  switch (p) {
    case TriggerPass::Monitored: return "monitored forward";
    case TriggerPass::TrainingForward: return "training forward";
    case TriggerPass::TrainingBackward: return "training backward";
    case TriggerPass::LossBackward: return "loss backward";
    case TriggerPass::OptimizerStep: return "optimizer step";
  }
  return "?";
}

Result<TriggerPass> parse_pass_name(const std::string& s) {
  for (TriggerPass p : {TriggerPass::Monitored, TriggerPass::TrainingForward, TriggerPass::TrainingBackward,
                        TriggerPass::LossBackward, TriggerPass::OptimizerStep})
    if (pass_name(p) == s) return p;
  return make_error("unknown pass '{}'", s);
}

std::string_view finding_class_name(FindingClass c) {
  switch (c) {
    case FindingClass::InputReached: return "input-reached";
    case FindingClass::TrainingReached: return "training-reached";
    case FindingClass::WeightsPerturbed: return "weights-perturbed";
  }
  return "?";
}

Result<FindingClass> parse_finding_class(const std::string& s) {
  for (FindingClass c : {FindingClass::InputReached, FindingClass::TrainingReached, FindingClass::WeightsPerturbed})
    if (finding_class_name(c) == s) return c;
  return make_error("unknown finding class '{}'", s);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One hazard's search: the loop of GRIST.md §3 on a fresh copy of the model.
class TargetSearch {
 public:
  TargetSearch(const Graph& g, const HuntOptions& o, const std::vector<HazardSite>& sites, const HazardSite& target,
               const Dataset& fresh_data, const Checkpoint* checkpoint, CarriedState* carried = nullptr)
      : g_(g), o_(o), m_(o.manifest), cfg_(o.manifest.search), sites_(sites), target_(target),
        fresh_data_(fresh_data), checkpoint_(checkpoint), carried_(carried) {}

  Result<HazardOutcome> run(double budget_s, int index, int count);
  // hunt --all: leaves the program's state for the next hazard's turn, unless it was kept already when the
  // search went beyond the inputs.
  void finish_turn() { carry(); }
  // hunt --all's later turns: the inputs alone had theirs, so the search goes beyond them from the start.
  void go_beyond_inputs() { beyond_inputs_ = true; }
  // The races' twins (search/race.h) go beyond the inputs at the second iteration (inputs_phase_over) and make no
  // progress lines. The weights twin steps the weights, no crafted training (its findings would be the course's or
  // the training twin's to make); the training twin crafts training batches, steps no weight (the weights twin's
  // stage) and stops when crafting ends (what the inputs reach after it is the course's).
  void race_the_weights() {
    beyond_inputs_ = true;
    twin_ = Twin::Weights;
    cfg_.training_share = 0;
  }
  void race_the_training() {
    beyond_inputs_ = true;
    twin_ = Twin::Training;
  }
  // The program's course beside the twins (null: that twin does not run): once one has triggered, the course ends
  // where its own search would take that twin's stage (what it could still find there is of the twin's class, and
  // later).
  void watch_races(const RaceSignal* weights, const RaceSignal* training) {
    weights_race_ = weights;
    training_race_ = training;
  }

 private:
  // Inputs alone (GRIST), then crafted training batches (a model that trains), then the weights themselves.
  enum class Phase { Inputs, Training, Weights };

  Status setup();
  Status resume();  // from carried_: the turn before this one
  void carry();     // into carried_, once per turn, before any weight moves but the program's own training's
  Status feed(const Batch& b);
  Status input_step(int64_t it);
  void step_weights();
  bool newton_step_weights();  // false: no weight has a gradient of the objective
  // The inputs' share: of the budget, at most weights_after_s; or the first iteration past their share of
  // max_iterations.
  double inputs_clock_seconds(double budget_s) const {
    return std::min(cfg_.weights_after * budget_s, cfg_.weights_after_s);
  }
  int64_t inputs_clock_iteration() const {
    return static_cast<int64_t>(std::ceil(cfg_.weights_after * static_cast<double>(cfg_.max_iterations))) + 1;
  }
  bool inputs_clock_over(int64_t it, double elapsed, double budget_s) const;
  bool inputs_phase_over(int64_t it, double elapsed, double budget_s) const;
  bool can_craft_training() const;
  void enter_training_phase(int64_t it, double elapsed, double budget_s, HazardOutcome& out);
  bool training_phase_over(int64_t it, double elapsed) const;
  bool hand_back_crafting(int64_t it, double elapsed, HazardOutcome& out);
  void begin_crafting(int64_t it, double elapsed, HazardOutcome& out);
  bool crafting_attempt_stalled(int64_t it, double elapsed) const;
  bool crafting_due_again(int64_t it, double elapsed) const;
  // Crafting's share of the budget is spent: the weights join (the weights' clock under craft_early).
  bool crafting_share_over(int64_t it, double elapsed) const {
    return cfg_.max_iterations > 0 ? it >= training_until_it_ : elapsed >= training_until_s_;
  }
  void undo_crafting(int64_t it, double elapsed, HazardOutcome& out);
  void enter_weights_phase(int64_t it, double elapsed, double budget_s, HazardOutcome& out);
  void coordinate_weight_steps(int64_t it, double elapsed, HazardOutcome& out);
  void keep_objective_weight_gradient();
  Status craft_training_batch(int64_t it);
  void note_masked(HazardOutcome& out, const NonFiniteEvent& e, int64_t it);
  std::vector<WeightMove> weight_moves(int64_t it, int64_t weights_from) const;
  Status train_step(const Batch& monitored_batch, bool reuse_monitored_pass, HazardOutcome& out, bool& fired);
  Status switch_rows(int64_t it);
  Status next_fresh_batch();
  Status train_phases(const Batch& fed, HazardOutcome& out, bool& fired);
  bool monitored_pass_failed() const;
  Batch executor_inputs() const;
  void add_checkpoint_weights(Witness& w) const;
  void record_trigger(HazardOutcome& out, TriggerPass pass, const NonFiniteEvent& e, const Batch& fed, bool dropout,
                      const std::optional<Rng>& rng_before);
  // The hazard site a producer node stands for: the one hunted when it is that node's, else a half-precision
  // site when the format's rounding made the inf or the zero (engine/nonfinite.h), else the node's first site.
  int site_of(int32_t node, const NonFiniteEvent* e = nullptr) const {
    if (target_.node == node) return target_.id;
    const Failure half = e && e->finite_in_float32 ? Failure::HalfOverflow : Failure::HalfUnderflow;
    if (e && (e->finite_in_float32 || !e->zero_input.empty()))
      for (const auto& s : sites_)
        if (s.node == node && s.failure == half) return s.id;
    for (const auto& s : sites_)
      if (s.node == node) return s.id;
    return 0;
  }

  const Graph& g_;
  const HuntOptions& o_;
  const Manifest& m_;
  SearchConfig cfg_;
  const std::vector<HazardSite>& sites_;
  const HazardSite& target_;
  const Dataset& fresh_data_;  // the data as loaded, before any batch was drawn: each search starts from it
  const Checkpoint* checkpoint_;  // the manifest's train.checkpoint (its weights are g_'s): the optimizer's state
  CarriedState* carried_;         // hunt --all: where this turn starts from and what it leaves (null: fresh)
  bool carried_out_ = false;
  bool beyond_inputs_ = false;
  enum class Twin { None, Weights, Training };
  Twin twin_ = Twin::None;                      // race_the_weights, race_the_training
  const RaceSignal* weights_race_ = nullptr;    // watch_races
  const RaceSignal* training_race_ = nullptr;
  // The course's inputs have had their turn: crafted training or the weights have begun, or crafting would begin
  // now (the training twin's finding then stands: what crafting reaches is training-reached, and later). Under
  // craft_early, crafting before the inputs' clock does not count: it may be undone and the inputs go on.
  bool inputs_had_their_turn(int64_t it, double elapsed, double budget_s) const {
    if (phase_ == Phase::Inputs)
      return !stages_begun_ && inputs_phase_over(it, elapsed, budget_s) && can_craft_training();
    return phase_ == Phase::Weights || !crafting_early_ || past_inputs_clock(it, elapsed);
  }
  bool stages_begun_ = false;  // crafted training or the weights began: the inputs alone never get a stage again

  std::optional<Executor> ex_;
  std::optional<Dataset> data_;
  std::optional<Optimizer> opt_;
  std::optional<GradScaler> scaler_;  // amp-* training's loss scaling
  Tensor scale_seed_;                 // the scaled loss's backward seed
  std::vector<ValueId> params_;
  ValueId loss_ = kNoValue;
  Batch batch_;                 // the persistent batch
  Batch monitored_;             // its state before the input step
  std::vector<Tensor> weights_before_;  // the weights the training pass used (by params_): the optimizer may be
                                        // the producer
  std::map<std::string, std::pair<double, double>> clip_;  // data input -> [lo, hi]
  std::vector<std::optional<std::pair<double, double>>> data_clips_;  // the same, by position in data_inputs_
  RowStepStats step_stats_;         // reused by every sign step
  // The data inputs' step rule (search.step); the faithful loop takes the study's sign step whatever is asked.
  StepRule step_rule() const { return cfg_.faithful ? StepRule::Sign : cfg_.step; }
  std::vector<AdamStep> adam_;      // step = adam: the moments of each data input (by position in data_inputs_)
  LineStep line_;                   // step = line
  std::vector<RowStepStats> line_stats_;
  Tensor line_seed_;                // the line search's objective evaluations write their seed here
  Status line_input_step(double eps);
  std::vector<std::string> data_inputs_, switched_inputs_;
  std::vector<ValueId> data_ids_;   // the data inputs (by position in data_inputs_), then search.variables: the
                                    // objective's gradient is wanted for these only
  std::vector<ValueId> search_ids_; // what the objective's gradient steps: data inputs, and weights if asked
  std::vector<ValueId> stepped_weights_;  // the weights the search may step, once they join
  std::vector<ValueId> variable_ids_;     // search.variables: searched beside the data from the first iteration
  std::vector<ValueId> feed_ids_;         // the batch's inputs, in its order (feed)
  std::vector<std::string> feed_names_;   // their names (a batch naming other inputs looks them up again)
  Batch fresh_;                           // train.batch = "fresh": the batch the training step takes
  std::vector<TrainingPhase> phases_;     // [[train.phases]]: the losses trained in turn (opt_ is swapped)
  int64_t phase_iterations_ = 0;          // iterations that ran every phase
  // The optimizer steps taken (with phases: training iterations, each of every phase's steps).
  int64_t trained_steps() const { return !phases_.empty() ? phase_iterations_ : opt_ ? opt_->steps_taken() : 0; }
  Phase phase_ = Phase::Inputs;
  bool weights_searched_ = false;         // they have joined
  bool newton_ = false;                   // and take exact steps: the objective is a function of weights only
  static constexpr int64_t kNewtonPatience = 50;  // iterations without progress before exact steps give up
  double newton_best_ = std::numeric_limits<double>::infinity();
  int64_t newton_best_at_ = 0;
  bool weights_changed_ = false;
  bool own_steps_after_crafting_ = false;  // the program's own training stepped after crafted steps (record_trigger)
  bool objective_backward_ran_ = false;
  bool data_reaches_objective_ = false;  // some data input has a gradient of the objective
  bool random_ops_ = false;         // the graph draws random numbers (dropout masks, random ops)
  RowHistory history_;
  Tensor seed_;
  double objective_ = 0;
  int64_t iteration_ = 0;                 // the iteration running
  // The current stage's progress (the inputs alone, crafted training, optimizer-sized weight steps): the best
  // objective since it began, the iteration it last improved by 0.1 %, and the last iteration the input step moved
  // the batch at all.
  double stage_best_ = std::numeric_limits<double>::infinity();
  int64_t stage_from_ = 1;
  int64_t stage_improved_at_ = 0;
  int64_t inputs_moved_at_ = 0;
  // A stage has stalled when its objective has not improved over the last half of its iterations, and at least
  // over this many: the model's own training carries an objective in fits and starts (the logistic toy's stands
  // still for 20 iterations before it fires). When the batch has stopped moving too (pinned at its clip bounds,
  // or its gradient gone), the inputs can do nothing more themselves and kFrozen iterations suffice.
  // A stage is judged after kStageFloorSeconds (a quarter of the budget when that is less) at the least: a model
  // whose iterations take microseconds searches on for what a few hundred of them cannot show (toys 32, 37 and 54
  // stand still for hundreds of iterations before the model's own training carries them to the failure). With an
  // iteration budget the inputs keep their fraction of it (weights_after), so such a run does not depend on the
  // machine's speed.
  static constexpr int64_t kInputsWindow = 20, kStageWindow = 30, kFrozen = 3;
  static constexpr double kStageFloorSeconds = 1;
  double stage_from_s_ = 0;
  void begin_stage(int64_t it, double elapsed) {
    stage_best_ = std::numeric_limits<double>::infinity();
    stage_from_ = it;
    stage_from_s_ = elapsed;
    stage_improved_at_ = it - 1;
  }
  bool stalled(int64_t it, double elapsed, double budget_s, int64_t min_window) const {
    if (cfg_.max_iterations <= 0 && elapsed - stage_from_s_ < std::min(kStageFloorSeconds, 0.25 * budget_s))
      return false;
    return it - stage_improved_at_ > std::max(min_window, (it - stage_from_) / 2);
  }

  // Crafted training (Phase::Training).
  double training_until_s_ = 0;           // its end, in seconds of this search
  int64_t training_until_it_ = 0;         // or in iterations, when max_iterations bounds the search
  Batch crafted_;                         // the batch the next training step takes
  std::vector<Tensor> objective_weight_grad_;  // ∂O/∂w this iteration, by params_ (undefined: none)
  std::vector<Tensor> probe_weights_;     // params_ kept across the probes
  std::vector<Tensor> probe_plus_, probe_minus_;  // ∂L/∂T at w ± h·d̂, by probe_ids_
  // The crafted batch's one-hot labels (float, [rows, classes]), chosen from the label set (label_choice.h).
  std::vector<std::string> label_inputs_;
  std::vector<ValueId> label_ids_;
  std::vector<OneHotValues> label_values_;  // by label_inputs_
  std::vector<ValueId> probe_ids_;  // data_ids_, then label_ids_ when the labels are crafted
  std::vector<CraftedStep> crafted_steps_;
  size_t crafted_bytes_ = 0;
  static constexpr size_t kMaxCraftedBytes = size_t{128} << 20;  // what a witness may hold of them
  std::map<std::string, Tensor> training_start_weights_;
  std::optional<OptimizerState> training_start_state_;
  std::optional<GradScalerState> training_start_scaler_;
  bool crafting_early_ = false;  // craft_early began crafting before the inputs' clock (enter_training_phase)
  double clock_s_ = 0;           // that clock, where crafting_early_
  int64_t clock_it_ = 0;         // (in iterations, when max_iterations bounds the search)
  // Past it, attempts are no longer undone: the one under way, or one begun there, takes crafting's course
  // as it would without craft_early (its weights go on to the weight search: zoo 16c needs them, session 16).
  bool past_inputs_clock(int64_t it, double elapsed) const {
    return cfg_.max_iterations > 0 ? it >= clock_it_ : elapsed >= clock_s_;
  }
  bool crafting_handed_back_ = false;  // craft_early: crafting stalled or filled the witness and was undone (below)
  // craft_early's attempts: crafting that stalls is undone and tried again once the program's own training has
  // run as long as every attempt so far (so its drift gets half the time at least); each attempt is given twice
  // the least time or iterations of the one before (a later start needs fewer crafted steps, session 13).
  int crafting_attempts_ = 0;
  double crafting_spent_s_ = 0;
  int64_t crafting_spent_it_ = 0;
  double handed_back_s_ = 0;
  int64_t handed_back_it_ = 0;

  // The weight search: first steps an optimizer step of the model's own kind could take, on the weights it
  // trains (ε = its per-step bound: lr for Adam's first step and Adagrad, lr/√(1−ρ) for RMSProp, lr·|∂L/∂w|
  // of the last training step for SGD), then the coordinated step of `weight_change` on every weight.
  double weight_eps_ = 0;
  bool optimizer_sized_ = false;
  double coordinated_from_s_ = 0;
  double training_budget_s_ = 0, coordinated_budget_s_ = 0;  // those stages' shares, for their floors
  int64_t coordinated_from_it_ = 0;
  // The weight search's reach, for weights-perturbed findings.
  std::vector<Tensor> join_weights_;      // stepped_weights_ when they joined
  int64_t trained_steps_at_join_ = 0;
};

Status TargetSearch::setup() {
  auto ex = Executor::create(g_, program_executor_options(m_));
  if (!ex) return ex.error();
  ex_.emplace(std::move(ex).value());
  data_.emplace(fresh_data_);
  GRIST_TRY(data_->next_batch(batch_));

  data_inputs_.clear();
  data_ids_.clear();
  data_clips_.clear();
  label_inputs_.clear();
  label_ids_.clear();
  label_values_.clear();
  switched_inputs_.clear();
  random_ops_ = false;
  random_ops_ = draws_random(g_);
  for (const auto& name : data_->input_names()) {
    const InputSpec& spec = data_->spec(name);
    if (spec.role == InputRole::Fixed) continue;
    switched_inputs_.push_back(name);
    if (spec.role == InputRole::Label) {
      const Tensor& y = batch_.at(name);
      const auto values = spec.one_hot > 0 && y.rank() == 2 && y.shape()[1] == spec.one_hot &&
                                  (y.dtype() == DType::Float32 || y.dtype() == DType::Float64)
                              ? one_hot_values(spec, spec.one_hot, y.rank())
                              : std::nullopt;
      if (values) {
        label_inputs_.push_back(name);
        label_ids_.push_back(g_.find_value(name));
        label_values_.push_back(*values);
      }
    }
    if (spec.role != InputRole::Data) continue;
    data_inputs_.push_back(name);
    data_ids_.push_back(g_.find_value(name));
    const Tensor& x = batch_.at(name);
    GRIST_CHECK(is_float(x.dtype()), "input '{}' is searched (role data) but holds {} values; only float inputs can "
                "be stepped", name, dtype_name(x.dtype()));
    if (spec.range == ClipRange::Explicit) {
      clip_[name] = {spec.lo, spec.hi};
    } else if (spec.range == ClipRange::FirstBatch) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (int64_t i = 0; i < x.numel(); ++i) {
        lo = std::min(lo, x.get_as_double(i));
        hi = std::max(hi, x.get_as_double(i));
      }
      clip_[name] = {lo, hi};
    }
    auto clip = clip_.find(name);
    data_clips_.push_back(clip == clip_.end() ? std::nullopt : std::optional(clip->second));
  }
  history_.reset(o_.batch_size);
  auto variables = search_variable_ids(g_, m_);
  if (!variables) return variables.error();
  variable_ids_ = std::move(variables).value();
  data_ids_.insert(data_ids_.end(), variable_ids_.begin(), variable_ids_.end());
  search_ids_ = data_ids_;
  stepped_weights_.clear();
  phase_ = Phase::Inputs;
  begin_stage(1, 0);
  inputs_moved_at_ = 0;
  weights_searched_ = newton_ = weights_changed_ = objective_backward_ran_ = data_reaches_objective_ = false;
  own_steps_after_crafting_ = false;
  crafted_steps_.clear();
  crafted_bytes_ = 0;
  training_start_weights_.clear();
  training_start_state_.reset();
  training_start_scaler_.reset();
  crafting_handed_back_ = crafting_early_ = false;
  crafting_attempts_ = 0;
  crafting_spent_s_ = 0;
  crafting_spent_it_ = 0;
  if (!m_.loss.empty()) {
    loss_ = g_.find_value(m_.loss);
    GRIST_CHECK(loss_ != kNoValue, "{}: loss '{}' is not a value of the model", m_.path, m_.loss);
  }
  if (m_.train.enabled) {
    auto params = trained_params(g_, m_);
    if (!params) return params.error();
    params_ = std::move(params).value();
    opt_.emplace(m_.train.optimizer, params_);
    auto phases = training_phases(g_, m_);
    if (!phases) return phases.error();
    phases_ = std::move(phases).value();
    scaler_.reset();
    if (is_autocast(m_.precision)) scaler_.emplace();
    if (checkpoint_) {
      auto state = checkpoint_state(*checkpoint_, g_, params_, m_.train.optimizer);
      if (!state) return state.error();
      opt_->set_state(std::move(state).value());
      if (scaler_ && checkpoint_->scaler) scaler_->set_state(*checkpoint_->scaler);
    }
  }
  // Single numbers are left alone unless the model trains them: in exported models they are the guards and
  // scales written as constants (an ε of 1e-7, a temperature), and stepping them would change the program
  // rather than find its input.
  if (cfg_.weight_change > 0 && !cfg_.faithful)
    for (ValueId id : g_.initializers) {
      const Value& v = g_.value(id);
      const bool trained = std::find(params_.begin(), params_.end(), id) != params_.end();
      if (is_float(v.dtype) && v.initial && (v.initial->numel() > 1 || trained)) stepped_weights_.push_back(id);
    }
  return Status::ok();
}

Status TargetSearch::resume() {
  carried_out_ = false;
  if (!carried_ || !carried_->valid) return Status::ok();
  const CarriedState& c = *carried_;
  for (ValueId id : params_) {
    auto w = c.weights.find(g_.value(id).name);
    if (w != c.weights.end()) ex_->mutable_value(id).copy_from(w->second);
  }
  if (opt_ && c.optimizer) opt_->set_state(*c.optimizer);
  for (size_t i = 0; i < phases_.size() && i < c.phase_optimizers.size(); ++i)
    phases_[i].optimizer.set_state(c.phase_optimizers[i]);
  if (scaler_ && c.scaler) scaler_->set_state(*c.scaler);
  phase_iterations_ = c.phase_iterations;
  if (c.data) data_.emplace(*c.data);
  auto own = c.searched_batches.find(target_.id);
  if (own != c.searched_batches.end()) {
    batch_ = own->second;
  } else {
    GRIST_TRY(data_->next_batch(batch_));
  }
  if (c.rng) ex_->rng() = *c.rng;
  return Status::ok();
}

// Weights that are not finite (an optimizer step wrote them) are no state to go on from: the next turn starts
// from what this one started from.
void TargetSearch::carry() {
  if (!carried_ || carried_out_ || !ex_ || !data_) return;
  carried_out_ = true;
  for (ValueId id : params_)
    if (!all_finite(ex_->value(id))) return;
  CarriedState c;
  c.valid = true;
  c.searched_batches = std::move(carried_->searched_batches);
  for (ValueId id : params_) c.weights[g_.value(id).name].copy_from(ex_->value(id));
  if (opt_) c.optimizer = opt_->state();
  for (const TrainingPhase& phase : phases_) c.phase_optimizers.push_back(phase.optimizer.state());
  if (scaler_) c.scaler = scaler_->state();
  c.phase_iterations = phase_iterations_;
  c.searched_batches[target_.id] = batch_;
  c.data = *data_;
  c.rng = ex_->rng();
  *carried_ = std::move(c);
}

// grist checks every node; the faithful loop only the loss (or the outputs), as the study did.
bool TargetSearch::monitored_pass_failed() const {
  if (!cfg_.faithful) return ex_->forward_event().found;
  if (loss_ != kNoValue) return !all_finite(ex_->value(loss_));
  for (ValueId out : g_.outputs)
    if (!all_finite(ex_->value(out))) return true;
  return false;
}

// The batch as the executor holds it: what its last forward pass ran on.
Batch TargetSearch::executor_inputs() const {
  Batch b;
  for (const auto& [name, t] : batch_) b[name] = ex_->value(g_.find_value(name));
  return b;
}

// Every batch holds the persistent batch's inputs (in its map's order): their ids are looked up once, and again
// for a batch that names other inputs.
Status TargetSearch::feed(const Batch& b) {
  bool same = feed_names_.size() == b.size();
  size_t k = 0;
  for (auto it = b.begin(); same && it != b.end(); ++it) same = feed_names_[k++] == it->first;
  if (!same) {
    feed_ids_.clear();
    feed_names_.clear();
    for (const auto& [name, t] : b) {
      feed_ids_.push_back(g_.find_value(name));
      feed_names_.push_back(name);
    }
  }
  k = 0;
  for (const auto& [name, t] : b) {
    const ValueId id = feed_ids_[k++];
    GRIST_TRY(id != kNoValue ? ex_->set_input(id, t) : ex_->set_input(name, t));
  }
  return Status::ok();
}

// x ← clip(x − ε·sign(∂O/∂x), lo, hi) on every data input.
Status TargetSearch::input_step(int64_t it) {
  const double eps = cfg_.epsilon_at(it);
  // The line search evaluates trial batches with forward passes of their own: only while the inputs alone are
  // searched (the weight steps and crafting read the executor's gradients and activations of this iteration).
  const bool line =
      step_rule() == StepRule::Line && phase_ == Phase::Inputs && !weights_searched_ && variable_ids_.empty();
  if (line) {
    GRIST_TRY(line_input_step(eps));
    for (const RowStepStats& st : line_stats_) {
      if (st.updated.empty()) continue;
      history_.add(st.updated, st.clipped);
      for (double u : st.updated)
        if (u > 0) inputs_moved_at_ = it;
    }
  }
  for (size_t i = 0; i < data_inputs_.size() && !line; ++i) {
    const Tensor* grad = ex_->grad(data_ids_[i]);
    if (!grad) continue;  // the objective does not depend on this input
    if (step_rule() == StepRule::Adam) {
      adam_.resize(data_inputs_.size());
      adam_[i].step(batch_.at(data_inputs_[i]), *grad, eps, data_clips_[i], step_stats_);
    } else {
      sign_step(batch_.at(data_inputs_[i]), *grad, eps, data_clips_[i], step_stats_);
    }
    history_.add(step_stats_.updated, step_stats_.clipped);
    for (double u : step_stats_.updated)
      if (u > 0) inputs_moved_at_ = it;
  }
  // search.variables: stepped like the data, never clipped; held while crafting training batches, whose
  // witness replays its steps at one value of them.
  if (phase_ != Phase::Training)
    for (ValueId id : variable_ids_)
      if (const Tensor* grad = ex_->grad(id)) sign_step(ex_->mutable_value(id), *grad, eps, std::nullopt, step_stats_);
  return Status::ok();
}

// Along −sign(∂O/∂x) by the longest step (of LineStep's) that lowers the objective, judged by forward passes on
// the trial batches; the random generator is put back, so the trials draw no dropout masks the program would not.
Status TargetSearch::line_input_step(double eps) {
  std::vector<LineStep::Input> inputs;
  for (size_t i = 0; i < data_inputs_.size(); ++i)
    inputs.push_back({&batch_.at(data_inputs_[i]), ex_->grad(data_ids_[i]), data_clips_[i]});
  const Rng rng = ex_->rng();
  auto evaluate = [&]() -> Result<double> {
    GRIST_TRY(feed(batch_));
    GRIST_TRY(ex_->forward());
    if (!cfg_.faithful && ex_->forward_event().found) return -std::numeric_limits<double>::infinity();
    ObjectiveValue ov = evaluate_objective(target_.objective, ex_->value(target_.objective_value), line_seed_);
    return ov.index >= 0 ? ov.value : std::numeric_limits<double>::infinity();
  };
  const Status st = line_.step(inputs, eps, objective_, evaluate, line_stats_);
  ex_->rng() = rng;
  return st;
}

// w ← w − ε_w·sign(∂O/∂w): the weights become search variables too (no clip: any value is a model).
void TargetSearch::step_weights() {
  for (ValueId id : stepped_weights_) {
    const Tensor* grad = ex_->grad(id);
    if (!grad) continue;
    if (optimizer_sized_ && std::find(params_.begin(), params_.end(), id) == params_.end()) continue;
    sign_step(ex_->mutable_value(id), *grad, weight_eps_, std::nullopt, step_stats_);
    for (double u : step_stats_.updated) weights_changed_ |= u > 0;
  }
}

// δ = O / (∂O/∂w) on the one weight with the steepest gradient: when the objective is a distance to the
// failure made of weights only (a divisor gain + 1e-7), fixed-size sign steps hop over zero for ever, and
// this lands on it within a few steps. (The study took such a step on all of a variable at once, where the
// one-hot gradient made δ = ∞ and then 0/0: the NaN it reported came from the step itself.)
bool TargetSearch::newton_step_weights() {
  ValueId best = kNoValue;
  int64_t at = -1;
  double slope = 0;
  for (ValueId id : stepped_weights_) {
    const Tensor* grad = ex_->grad(id);
    if (!grad) continue;
    for (int64_t i = 0; i < grad->numel(); ++i) {
      const double gi = grad->get_as_double(i);
      if (std::isfinite(gi) && std::abs(gi) > std::abs(slope)) {
        best = id;
        at = i;
        slope = gi;
      }
    }
  }
  if (best == kNoValue) return false;
  const double delta = slope != 0 ? objective_ / slope : 0;
  if (delta == 0 || !std::isfinite(delta)) return true;
  Tensor& w = ex_->mutable_value(best);
  dispatch_float(w.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = w.data<T>();
    p[at] = static_cast<T>(static_cast<double>(p[at]) - delta);
  });
  weights_changed_ = true;
  return true;
}

// The inputs' clock: their share of the budget (of max_iterations when set, alone), no longer than
// weights_after_s, and then once their objective has not improved by 0.1 % over the last 10 % of the iterations
// (50 at least), or half the budget gone.
bool TargetSearch::inputs_clock_over(int64_t it, double elapsed, double budget_s) const {
  if (cfg_.max_iterations > 0) return it >= inputs_clock_iteration();
  if (elapsed >= 0.5 * budget_s) return true;
  if (elapsed < inputs_clock_seconds(budget_s)) return false;
  return it - stage_improved_at_ >= std::max<int64_t>(50, it / 10);
}

// The inputs have had their turn: the first backward showed that no data input reaches the objective (a divisor
// made of weights only), or by their clock, or (craft_early) a stall hands over to crafting sooner. With
// SearchConfig::stall_rule: decided from the search.
bool TargetSearch::inputs_phase_over(int64_t it, double elapsed, double budget_s) const {
  if (phase_ != Phase::Inputs || stages_begun_) return false;
  // The twin waits for the first objective backward: whether data reaches the objective decides the weights' steps.
  if (twin_ != Twin::None && !objective_backward_ran_) return false;
  if (beyond_inputs_ || (objective_backward_ran_ && !data_reaches_objective_)) return true;
  if (!cfg_.stall_rule) {
    const bool clock_over = inputs_clock_over(it, elapsed, budget_s);
    // craft_early: crafted training (not the weights, whose clock enter_training_phase keeps) may come sooner.
    if (clock_over || !cfg_.craft_early || !can_craft_training()) return clock_over;
    // No progress over the last half of the inputs' iterations (kFrozen at least: a CNN's iteration can take
    // 0.3 s, and the stall rule's 20 would be most of the clock). Not a fixed few: where the program's own
    // training still carries the objective down, however slowly, handing over would turn its input-reached
    // finding into a training-reached one (zoo 1, 12, 14, 19, 40-42, 50 with 3 iterations, session 16).
    if (cfg_.max_iterations <= 0 && elapsed - stage_from_s_ < std::min(kStageFloorSeconds, 0.25 * budget_s))
      return false;
    return it - stage_improved_at_ > std::max<int64_t>(kFrozen, (it - stage_from_) / 2);
  }
  if (cfg_.max_iterations > 0) return it >= inputs_clock_iteration();
  if (elapsed >= 0.5 * budget_s) return true;
  return stalled(it, elapsed, budget_s, it - inputs_moved_at_ > kFrozen ? kFrozen : kInputsWindow);
}

bool TargetSearch::can_craft_training() const {
  return opt_ && phases_.empty() && !params_.empty() && loss_ != kNoValue && !data_ids_.empty() && !cfg_.faithful &&
         cfg_.training_share > 0 && cfg_.training_s > 0;
}

void TargetSearch::enter_training_phase(int64_t it, double elapsed, double budget_s, HazardOutcome& out) {
  carry();
  stages_begun_ = true;
  training_until_s_ = elapsed + std::min(cfg_.training_share * std::max(0.0, budget_s - elapsed), cfg_.training_s);
  if (cfg_.max_iterations > 0)
    training_until_it_ =
        it + static_cast<int64_t>(cfg_.training_share * static_cast<double>(std::max<int64_t>(0, cfg_.max_iterations - it)));
  // craft_early changes only crafting that began because the inputs stalled before their clock. Where the inputs
  // cannot reach the objective (a divisor of weights only: zoo 28a) crafting starts at once with or without it,
  // and is left as it always was: one attempt, its share counted from here.
  crafting_early_ = cfg_.craft_early && !cfg_.stall_rule && !beyond_inputs_ && data_reaches_objective_ &&
                    !inputs_clock_over(it, elapsed, budget_s);
  if (twin_ == Twin::Training) {
    // The training twin crafts in attempts to the end of its budget, by craft_early's rule with no clock to end
    // it: an attempt that stalls or fills the witness is undone and tried again once the program's own training
    // has run as long (crafting from barely trained weights may not reach what crafting from later ones does:
    // zoo 14, 20).
    crafting_early_ = true;
    clock_s_ = training_until_s_ = budget_s;
    clock_it_ = training_until_it_ = cfg_.max_iterations + 1;
  } else if (crafting_early_) {
    // Crafting began because the inputs stalled, before their clock ran out: it keeps the stage until the
    // weights would have joined without it (the inputs' clock, then crafting's share of what was left), so that
    // weights-perturbed findings come no sooner than they did.
    clock_s_ = inputs_clock_seconds(budget_s);
    training_until_s_ = std::max(training_until_s_,
                                 clock_s_ + std::min(cfg_.training_share * std::max(0.0, budget_s - clock_s_), cfg_.training_s));
    if (cfg_.max_iterations > 0) {
      clock_it_ = inputs_clock_iteration();
      training_until_it_ = std::max<int64_t>(
          training_until_it_, clock_it_ + static_cast<int64_t>(cfg_.training_share *
                                                               static_cast<double>(std::max<int64_t>(0, cfg_.max_iterations - clock_it_))));
    }
  }
  training_budget_s_ = training_until_s_ - elapsed;
  begin_crafting(it, elapsed, out);
}

// The crafted batches start from the batch the program would train on next; the witness starts from the
// weights and optimizer state that its own training produced until now.
void TargetSearch::begin_crafting(int64_t it, double elapsed, HazardOutcome& out) {
  phase_ = Phase::Training;
  begin_stage(it, elapsed);
  out.strategy = "grist+training";
  out.training_from = it;
  out.crafting_attempts = ++crafting_attempts_;
  crafted_ = batch_;
  for (ValueId id : params_) training_start_weights_[g_.value(id).name] = ex_->value(id);
  training_start_state_ = opt_->state();
  if (scaler_) training_start_scaler_ = scaler_->state();
  search_ids_ = data_ids_;
  search_ids_.insert(search_ids_.end(), params_.begin(), params_.end());
  objective_weight_grad_.assign(params_.size(), Tensor{});
  probe_ids_ = data_ids_;
  if (cfg_.craft_labels) probe_ids_.insert(probe_ids_.end(), label_ids_.begin(), label_ids_.end());
}

bool TargetSearch::training_phase_over(int64_t it, double elapsed) const {
  if (phase_ != Phase::Training) return false;
  if (crafted_bytes_ >= kMaxCraftedBytes) return true;
  if (crafting_share_over(it, elapsed)) return true;
  return cfg_.stall_rule && stalled(it, elapsed, training_budget_s_, kStageWindow);
}

// craft_early: crafted batches that fill the witness's share before the inputs' clock would let the weights
// join early (a model of small iterations fills 128 MB in well under a second). Instead the crafted steps are
// undone (the weights and optimizer state back to what the program's own training had reached) and the program's
// own training goes on (crafting may be tried again, crafting_due_again): the hazard stays reachable by the inputs
// and the program's own drift.
bool TargetSearch::hand_back_crafting(int64_t it, double elapsed, HazardOutcome& out) {
  if (!crafting_early_ || past_inputs_clock(it, elapsed) || crafted_bytes_ < kMaxCraftedBytes) return false;
  if (crafting_share_over(it, elapsed)) return false;
  undo_crafting(it, elapsed, out);
  return true;
}

// craft_early: an attempt whose objective has not improved over the last half of it (kStageWindow iterations at
// least), after its least length: 1 s (kStageWindow iterations under max_iterations), doubled per attempt. Crafting
// from weights the program has barely trained may not reach what it reaches from later ones (zoo 44): the attempt
// is undone rather than left to fill crafting's share. Only before the inputs' clock (past_inputs_clock).
bool TargetSearch::crafting_attempt_stalled(int64_t it, double elapsed) const {
  if (phase_ != Phase::Training || !crafting_early_ || past_inputs_clock(it, elapsed)) return false;
  if (crafting_share_over(it, elapsed)) return false;
  const int doubling = std::min(crafting_attempts_ - 1, 16);
  if (cfg_.max_iterations > 0) {
    if (it - stage_from_ < (kStageWindow << doubling)) return false;
  } else if (elapsed - stage_from_s_ < kStageFloorSeconds * static_cast<double>(1 << doubling)) {
    return false;
  }
  return it - stage_improved_at_ > std::max<int64_t>(kStageWindow, (it - stage_from_) / 2);
}

// After an undone attempt: crafting again once the program's own training has run, since, as long as all the
// attempts together, or at the inputs' clock (where crafting would have begun without craft_early).
bool TargetSearch::crafting_due_again(int64_t it, double elapsed) const {
  if (!crafting_handed_back_ || phase_ != Phase::Inputs || !crafting_early_) return false;
  if (crafting_share_over(it, elapsed)) return false;
  if (past_inputs_clock(it, elapsed)) return true;  // the last attempt, from where the inputs' clock would start it
  return cfg_.max_iterations > 0 ? it - handed_back_it_ >= crafting_spent_it_
                                 : elapsed - handed_back_s_ >= crafting_spent_s_;
}

void TargetSearch::undo_crafting(int64_t it, double elapsed, HazardOutcome& out) {
  crafting_spent_s_ += elapsed - stage_from_s_;
  crafting_spent_it_ += it - stage_from_;
  handed_back_s_ = elapsed;
  handed_back_it_ = it;
  for (ValueId id : params_) ex_->mutable_value(id).copy_from(training_start_weights_.at(g_.value(id).name));
  if (training_start_state_) opt_->set_state(*training_start_state_);
  if (scaler_ && training_start_scaler_) scaler_->set_state(*training_start_scaler_);
  crafted_steps_.clear();
  crafted_bytes_ = 0;
  crafting_handed_back_ = true;
  phase_ = Phase::Inputs;
  begin_stage(it, elapsed);
  search_ids_ = data_ids_;
  out.strategy = "grist";
  out.training_from = 0;
}

void TargetSearch::enter_weights_phase(int64_t it, double elapsed, double budget_s, HazardOutcome& out) {
  carry();
  stages_begun_ = true;
  phase_ = Phase::Weights;
  weights_searched_ = true;
  begin_stage(it, elapsed);
  newton_ = !data_reaches_objective_ &&
            (target_.objective == Objective::MinAbs || target_.objective == Objective::MinAbsOneMinus);
  newton_best_at_ = it;
  search_ids_ = data_ids_;
  search_ids_.insert(search_ids_.end(), stepped_weights_.begin(), stepped_weights_.end());
  out.weights_from = it;
  join_weights_.resize(stepped_weights_.size());
  for (size_t k = 0; k < stepped_weights_.size(); ++k) join_weights_[k].copy_from(ex_->value(stepped_weights_[k]));
  trained_steps_at_join_ = trained_steps();
  // Steps the model's own optimizer could take first, for half of what is left; then the coordinated ones.
  weight_eps_ = cfg_.weight_change;
  optimizer_sized_ = false;
  out.strategy = "grist+weights";
  if (opt_ && !newton_) {
    // SGD's step is lr·|∂L/∂w|: the executor still holds the last training step's gradients (the objective's
    // backward of this iteration comes after).
    double grad_max = 0;
    for (ValueId id : params_)
      if (const Tensor* gw = ex_->grad(id))
        for (int64_t i = 0; i < gw->numel(); ++i) grad_max = std::max(grad_max, std::fabs(gw->get_as_double(i)));
    const std::optional<double> bound = max_weight_move(m_.train.optimizer, 1);
    const double one_step = bound ? *bound : std::fabs(m_.train.optimizer.lr) * grad_max;
    if (one_step > 0 && one_step < cfg_.weight_change) {
      weight_eps_ = one_step;
      optimizer_sized_ = true;
      out.strategy = "grist+weights(optimizer-sized)";
      coordinated_from_s_ = elapsed + 0.5 * std::max(0.0, budget_s - elapsed);
      coordinated_budget_s_ = coordinated_from_s_ - elapsed;
      coordinated_from_it_ =
          cfg_.max_iterations > 0 ? it + std::max<int64_t>(0, cfg_.max_iterations - it) / 2 : 0;
    }
  }
}

void TargetSearch::coordinate_weight_steps(int64_t it, double elapsed, HazardOutcome& out) {
  if (!optimizer_sized_) return;
  const bool due = cfg_.max_iterations > 0 ? it >= coordinated_from_it_ : elapsed >= coordinated_from_s_;
  if (!due && (!cfg_.stall_rule || !stalled(it, elapsed, coordinated_budget_s_, kStageWindow))) return;
  optimizer_sized_ = false;
  begin_stage(it, elapsed);
  weight_eps_ = cfg_.weight_change;
  out.strategy = "grist+weights";
}

namespace {
// a −= b, elementwise, for two float tensors of one shape and type (the probes' gradients).
void subtract_in_place(Tensor& a, const Tensor& b) {
  dispatch_float(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = a.data<T>();
    const T* pb = b.data<T>();
    for (int64_t k = 0; k < a.numel(); ++k) pa[k] -= pb[k];
  });
}

// A gradient kept past the next backward (its buffer reused), or undefined where none flowed.
void keep_gradient(const Tensor* grad, Tensor& kept) {
  if (grad) {
    kept.copy_from(*grad);
  } else {
    kept = Tensor{};
  }
}
}  // namespace

void TargetSearch::keep_objective_weight_gradient() {
  for (size_t k = 0; k < params_.size(); ++k) keep_gradient(ex_->grad(params_[k]), objective_weight_grad_[k]);
}

// Gradient matching: moves the crafted batch's data so that the model's own training step on it goes down the
// objective's gradient d = ∂O/∂w. The step is w − lr·∂L(T)/∂w (or the optimizer's normalised form of it), so
// it raises ⟨∂L(T)/∂w, d⟩ — the derivative of the loss along d, whose gradient in T is the difference of ∂L/∂T
// at w ± h·d̂ over 2h: two first-order passes, no second derivatives. The data stays within its clip range and
// one-hot labels take the class that aligns the step best (label_choice.h; other labels stay the data's); the
// probes run with dropout off and leave the generator as it was.
Status TargetSearch::craft_training_batch(int64_t it) {
  double d2 = 0, w2 = 0;
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor& d = objective_weight_grad_[k];
    if (!d.defined()) continue;
    d2 = sum_of_squares(d, d2);
    w2 = sum_of_squares(ex_->value(params_[k]), w2);
  }
  if (!(d2 > 0) || !std::isfinite(d2)) return Status::ok();  // no trained weight moves the objective now
  const double norm = std::sqrt(d2);
  // A probe small against the weights (so the loss is close to linear along it) and large against float32's
  // rounding of the gradients it differences.
  const double h = 1e-3 * std::max(std::sqrt(w2), 1.0);
  const std::optional<Rng> rng_saved = random_ops_ ? std::optional<Rng>(ex_->rng()) : std::nullopt;
  const std::optional<bool> dropout_saved = ex_->options().dropout_training;
  ex_->options().dropout_training = false;
  probe_weights_.resize(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) probe_weights_[k].copy_from(ex_->value(params_[k]));
  // The probes run in a lambda so that the weights, dropout and generator are restored on every path out,
  // a failed pass included.
  const Status probed = [&]() -> Status {
    GRIST_TRY(feed(crafted_));
    for (int side : {1, -1}) {
      for (size_t k = 0; k < params_.size(); ++k) {
        const Tensor& d = objective_weight_grad_[k];
        if (!d.defined()) continue;
        Tensor& w = ex_->mutable_value(params_[k]);
        const Tensor& w0 = probe_weights_[k];
        const double scale = side * h / norm;
        dispatch_float(w.dtype(), [&](auto tag) {
          using T = decltype(tag);
          T* p = w.data<T>();
          const T* p0 = w0.data<T>();
          const T* pd = d.data<T>();
          for (int64_t i = 0; i < w.numel(); ++i)
            p[i] = static_cast<T>(static_cast<double>(p0[i]) + scale * static_cast<double>(pd[i]));
        });
      }
      GRIST_TRY(ex_->forward());
      GRIST_TRY(ex_->backward(loss_, probe_ids_));
      std::vector<Tensor>& keep = side > 0 ? probe_plus_ : probe_minus_;
      keep.resize(probe_ids_.size());
      for (size_t i = 0; i < probe_ids_.size(); ++i) keep_gradient(ex_->grad(probe_ids_[i]), keep[i]);
    }
    return Status::ok();
  }();
  for (size_t k = 0; k < params_.size(); ++k) ex_->mutable_value(params_[k]).copy_from(probe_weights_[k]);
  ex_->options().dropout_training = dropout_saved;
  if (rng_saved) ex_->rng() = *rng_saved;
  GRIST_TRY(probed);
  // Ascent on ⟨∂L/∂w, d⟩: T ← clip(T + ε·sign(g₊ − g₋)), a sign step against g₋ − g₊.
  const double eps = cfg_.epsilon_at(it);
  for (size_t i = 0; i < data_inputs_.size(); ++i) {
    Tensor& minus = probe_minus_[i];
    const Tensor& plus = probe_plus_[i];
    if (!minus.defined() || !plus.defined()) continue;
    subtract_in_place(minus, plus);
    sign_step(crafted_.at(data_inputs_[i]), minus, eps, data_clips_[i], step_stats_);
  }
  // The labels: each row takes the class whose entry raises ⟨∂L/∂w, d⟩ most, g₊ − g₋ being its derivative.
  for (size_t j = data_ids_.size(); j < probe_ids_.size(); ++j) {
    Tensor& gain = probe_plus_[j];
    const Tensor& minus = probe_minus_[j];
    if (!gain.defined() || !minus.defined()) continue;
    subtract_in_place(gain, minus);
    const size_t label = j - data_ids_.size();
    auto changed = choose_one_hot_labels(crafted_.at(label_inputs_[label]), gain, label_values_[label]);
    if (!changed) return changed.error();
  }
  return Status::ok();
}

void TargetSearch::note_masked(HazardOutcome& out, const NonFiniteEvent& e, int64_t it) {
  if (!e.found) return;
  if (out.masked_count++ == 0) {
    out.masked = e;
    out.masked_iteration = it;
  }
}

double rms(const Tensor& t) {
  return t.numel() > 0 ? std::sqrt(sum_of_squares(t) / static_cast<double>(t.numel())) : 0;
}

double rms_difference(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.get_as_double(i) - b.get_as_double(i);
    s += d * d;
  }
  return a.numel() > 0 ? std::sqrt(s / static_cast<double>(a.numel())) : 0;
}

// The tensors the weight search moved most against their own scale, first (five at most).
std::vector<WeightMove> TargetSearch::weight_moves(int64_t it, int64_t weights_from) const {
  std::vector<WeightMove> moves;
  for (size_t k = 0; k < stepped_weights_.size() && k < join_weights_.size(); ++k) {
    const Value& v = g_.value(stepped_weights_[k]);
    WeightMove m;
    m.name = v.name;
    m.moved_rms = rms_difference(ex_->value(stepped_weights_[k]), join_weights_[k]);
    if (m.moved_rms == 0) continue;
    m.initial_rms = v.initial ? rms(*v.initial) : 0;
    m.trained_rms = v.initial ? rms_difference(join_weights_[k], *v.initial) : 0;
    m.trained_steps = trained_steps_at_join_;
    m.searched_steps = it - weights_from + 1;
    moves.push_back(m);
  }
  auto relative = [](const WeightMove& m) { return m.moved_rms / std::max(m.initial_rms, 1e-30); };
  std::sort(moves.begin(), moves.end(), [&](const WeightMove& a, const WeightMove& b) { return relative(a) > relative(b); });
  if (moves.size() > 5) moves.resize(5);
  return moves;
}

void TargetSearch::record_trigger(HazardOutcome& out, TriggerPass pass, const NonFiniteEvent& e, const Batch& fed,
                                  bool dropout, const std::optional<Rng>& rng_before) {
  out.triggered = true;
  out.pass = pass;
  out.event = e;
  out.fired_site = site_of(e.node, &e);
  out.training_steps = trained_steps();
  out.witness.inputs = fed;
  out.witness.pass = pass;
  out.witness.dropout = dropout;
  out.witness.rng_state = rng_before ? rng_before->state() : ex_->rng().state();
  out.witness.weights.clear();
  out.witness.training.clear();
  out.witness.trained.clear();
  out.witness.optimizer.reset();
  out.witness.scaler.reset();
  if (scaler_) out.witness.scaler = scaler_->state();
  if (opt_)
    for (ValueId id : params_) out.witness.trained.push_back(g_.value(id).name);
  // Weights the search moved; or crafted steps, then the program's own ones that a witness does not hold (the
  // weights joined and had not moved yet): the witness holds the weights as they are, so the finding is reported
  // as the weights' (there an under-claim: training reached them) and still replays.
  if (weights_changed_ || (!crafted_steps_.empty() && own_steps_after_crafting_)) {
    out.finding_class = FindingClass::WeightsPerturbed;
    out.weight_moves = weight_moves(iteration_, out.weights_from);
  } else if (!crafted_steps_.empty()) {
    // Replayed from where the crafted training began: the weights and optimizer state the program's own
    // training had reached, then every crafted step taken before this pass.
    out.finding_class = FindingClass::TrainingReached;
    out.witness.weights = training_start_weights_;
    out.witness.optimizer = training_start_state_;
    out.witness.scaler = training_start_scaler_;
    out.witness.training = std::move(crafted_steps_);
    crafted_steps_.clear();
    for (ValueId id : variable_ids_) out.witness.weights[g_.value(id).name] = ex_->value(id);
    add_checkpoint_weights(out.witness);
    return;
  } else {
    out.finding_class = FindingClass::InputReached;
  }
  if (trained_steps() > 0)
    for (ValueId id : params_) out.witness.weights[g_.value(id).name] = ex_->value(id);
  if (out.finding_class == FindingClass::WeightsPerturbed)
    for (ValueId id : stepped_weights_) out.witness.weights[g_.value(id).name] = ex_->value(id);
  for (ValueId id : variable_ids_) out.witness.weights[g_.value(id).name] = ex_->value(id);  // search.variables
  add_checkpoint_weights(out.witness);
}

// A run resumed from a checkpoint replays on the model's own file: the witness carries the checkpoint's weights
// (as they were at the trigger) wherever it does not hold them already.
void TargetSearch::add_checkpoint_weights(Witness& w) const {
  if (!checkpoint_) return;
  for (const auto& [name, t] : checkpoint_->weights)
    if (!w.weights.count(name)) w.weights[name] = ex_->value(g_.find_value(name));
}

Status TargetSearch::train_step(const Batch& fed, bool reuse_monitored_pass, HazardOutcome& out, bool& fired) {
  // A copy of the generator only when the graph draws from it; serialised only on a trigger.
  const std::optional<Rng> rng_before = random_ops_ ? std::optional<Rng>(ex_->rng()) : std::nullopt;
  // Reusing the monitored pass, the batch it ran on is what the executor holds (no copy every iteration).
  auto witness_batch = [&] { return reuse_monitored_pass ? executor_inputs() : fed; };
  if (!reuse_monitored_pass) {
    ex_->options().dropout_training = m_.train.dropout;
    GRIST_TRY(feed(fed));
    GRIST_TRY(ex_->forward());
    if (!cfg_.faithful && ex_->forward_event().found) {
      record_trigger(out, TriggerPass::TrainingForward, ex_->forward_event(), fed, m_.train.dropout, rng_before);
      fired = true;
      return Status::ok();
    }
  }
  GradScaler* scaler = scaler_ ? &*scaler_ : nullptr;
  GRIST_TRY(training_backward(*ex_, loss_, params_, scaler, scale_seed_));
  // Under loss scaling an inf/NaN gradient skips the step (below); it fails only once the scale collapses.
  if (!cfg_.faithful && !scaler_ && ex_->backward_event().found) {
    record_trigger(out, TriggerPass::TrainingBackward, ex_->backward_event(), witness_batch(), m_.train.dropout,
                   rng_before);
    fired = true;
    return Status::ok();
  }
  if (!cfg_.faithful) note_masked(out, ex_->masked_backward_event(), iteration_);

  // Keep the weights the pass used: the optimizer may be the producer.
  weights_before_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) weights_before_[i].copy_from(ex_->value(params_[i]));
  std::optional<GradScalerState> used;  // the scale this pass's backward was seeded with
  if (scaler) used = scaler->state();
  auto stepped = training_update(*ex_, *opt_, scaler);
  if (!stepped) return stepped.status();
  if (scaler) {
    out.scaler_skipped_steps = scaler->skipped_steps();
    out.loss_scale = scaler->scale();
    if (!*stepped) {
      if (!cfg_.faithful && scaler->collapsed() && ex_->backward_event().found) {
        record_trigger(out, TriggerPass::TrainingBackward, ex_->backward_event(), witness_batch(), m_.train.dropout,
                       rng_before);
        out.scale_collapsed = true;
        if (out.finding_class != FindingClass::TrainingReached) out.witness.scaler = used;
        fired = true;
      }
      return Status::ok();
    }
  }
  for (ValueId id : params_) {
    const Tensor& w = ex_->value(id);
    if (cfg_.faithful || all_finite(w)) continue;
    NonFiniteEvent e;
    e.found = true;
    e.in_backward = true;
    e.node_name = "optimizer";
    e.op_type = optimizer_kind_name(opt_->config().kind);
    e.value_name = g_.value(id).name;
    e.shape = w.shape();
    e.dtype = w.dtype();
    e.counts = count_nonfinite(w);
    e.first_value = w.get_as_double(e.counts.first_index);
    record_trigger(out, TriggerPass::OptimizerStep, e, witness_batch(), m_.train.dropout, rng_before);
    if (out.finding_class != FindingClass::TrainingReached) {
      out.witness.weights.clear();
      for (size_t i = 0; i < params_.size(); ++i)
        out.witness.weights[g_.value(params_[i]).name] = weights_before_[i];
      add_checkpoint_weights(out.witness);
      if (used) out.witness.scaler = used;  // the replay seeds the step's backward as this pass was
    }
    fired = true;
    return Status::ok();
  }
  return Status::ok();
}

// [[train.phases]] (a GAN): each phase's steps in turn on the batch, each a training step of its own (forward,
// its loss's backward to its weights, its optimizer), so that a later phase sees the weights an earlier one
// moved. train_step runs each with the phase's loss, weights and optimizer in place of the single ones.
Status TargetSearch::train_phases(const Batch& fed, HazardOutcome& out, bool& fired) {
  const std::vector<ValueId> all_params = params_;
  for (TrainingPhase& phase : phases_) {
    std::swap(loss_, phase.loss);
    params_.swap(phase.params);
    std::swap(*opt_, phase.optimizer);
    Status st = Status::ok();
    for (int64_t k = 0; k < phase.steps && !fired && st; ++k) st = train_step(fed, false, out, fired);
    std::swap(loss_, phase.loss);
    params_.swap(phase.params);
    std::swap(*opt_, phase.optimizer);
    GRIST_TRY(st);
    if (!fired) continue;
    // The witness replays with every phase's weights as they were, not the firing phase's alone.
    out.witness.trained.clear();
    for (ValueId id : all_params) {
      out.witness.trained.push_back(g_.value(id).name);
      if (!out.witness.weights.count(g_.value(id).name)) out.witness.weights[g_.value(id).name] = ex_->value(id);
    }
    return Status::ok();
  }
  ++phase_iterations_;
  return Status::ok();
}

// train.batch = "fresh": the program's DataLoader, a new batch of the source every iteration (the sequence
// switching also draws from); fixed inputs as the persistent batch holds them (redrawn ones included).
Status TargetSearch::next_fresh_batch() {
  GRIST_TRY(data_->next_batch(fresh_));
  for (auto& [name, t] : fresh_)
    if (data_->spec(name).role == InputRole::Fixed) t = batch_.at(name);
  return Status::ok();
}

// Every switch_every iterations, k rows of the persistent batch (with their labels) are replaced by the
// first k rows of the next batch.
Status TargetSearch::switch_rows(int64_t it) {
  const int64_t n = o_.batch_size;
  const int64_t k = rows_to_switch(cfg_.drop_rate, n);
  if (k <= 0) return Status::ok();
  std::vector<int64_t> rows = choose_rows(history_, it, k, cfg_.switch_score);
  Batch fresh;
  GRIST_TRY(data_->next_batch(fresh));
  for (const auto& name : switched_inputs_) {
    Tensor& dst = batch_.at(name);
    const Tensor& src = fresh.at(name);
    if (dst.rank() == 0 || dst.shape()[0] != n) continue;  // not batched
    const size_t row_bytes = dst.nbytes() / static_cast<size_t>(n);
    for (size_t j = 0; j < rows.size(); ++j)
      std::memcpy(dst.raw() + static_cast<size_t>(rows[j]) * row_bytes, src.raw() + j * row_bytes, row_bytes);
  }
  for (int64_t r : rows) history_.entered_at(r, it);
  for (AdamStep& a : adam_) a.reset_rows(rows, n);
  return Status::ok();
}

Result<HazardOutcome> TargetSearch::run(double budget_s, int index, int count) {
  HazardOutcome out;
  out.site = target_;
  out.budget_s = budget_s;
  const bool steps = steps_inputs(cfg_.variant);
  out.strategy = steps ? "grist" : (cfg_.variant == Variant::Original ? "original" : "random");
  if (steps && target_.objective == Objective::None) {
    out.skipped = "no objective reaches it by stepping data inputs (it depends on labels or weights only)";
    return out;
  }
  GRIST_TRY(setup());
  GRIST_TRY(resume());
  if (steps && data_inputs_.empty()) {
    out.skipped = "the manifest marks no input as data (role = \"data\"): nothing to search";
    return out;
  }
  if (twin_ == Twin::Weights && stepped_weights_.empty()) {
    out.skipped = "the weights race has no weight to step";
    return out;
  }
  if (twin_ == Twin::Training) {
    stepped_weights_.clear();
    if (!can_craft_training()) {
      out.skipped = "the training race has no training batch to craft";
      return out;
    }
  }
  const auto start = Clock::now();
  auto last_progress = start;
  const bool switching = cfg_.variant == Variant::Grist && cfg_.switch_data;
  // The training step can reuse the monitored pass when it trains on that very batch in the same mode.
  // With dropout on in both passes a fresh forward draws fresh masks, as the frameworks do (train.masks).
  // A graph that draws nothing (no dropout, no random op) computes the same pass in either dropout mode; search
  // variables, stepped after the monitored pass, would not be the training pass's.
  const bool same_mode = m_.train.dropout == m_.monitor_dropout || (!random_ops_ && variable_ids_.empty());
  const bool reuse = m_.train.enabled && m_.train.phases.empty() && !m_.train.on_updated_batch &&
                     !m_.train.on_fresh_batch && same_mode &&
                     (!m_.train.dropout || !random_ops_ || !m_.train.fresh_masks) &&
                     step_rule() != StepRule::Line;  // the line search's trial passes overwrite the monitored one
  const bool scan_loss_gradient = !m_.train.enabled && loss_ != kNoValue && !data_ids_.empty() && !cfg_.faithful;

  for (int64_t it = 1;; ++it) {
    const double elapsed = seconds_between(start, Clock::now());
    if (elapsed >= budget_s || (cfg_.max_iterations > 0 && it > cfg_.max_iterations)) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      break;
    }
    // Exact steps either reach zero within a few iterations or face an objective that is not locally
    // linear in any one weight (a sum of many |w|): the time is better left to the hazards after this one.
    if (o_.stop_requested && o_.stop_requested()) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      out.stopped = "interrupted";
      break;
    }
    if (newton_ && it - newton_best_at_ > kNewtonPatience) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      out.stopped = fmt::format("the exact weight steps stopped reducing the objective (best {:.6g})", newton_best_);
      break;
    }
    if (weights_race_ && phase_ == Phase::Weights && weights_race_->found_by(it)) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      out.stopped = "the weights race triggered first, and the inputs and training had had their turn";
      break;
    }
    if (training_race_ && training_race_->found_by(it) && inputs_had_their_turn(it, elapsed, budget_s)) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      out.stopped = "the training race triggered first, and the inputs had had their turn";
      break;
    }
    // The course crafts from its first iteration where no data input reaches the objective: nothing to race.
    if (twin_ == Twin::Training && objective_backward_ran_ && !data_reaches_objective_) {
      out.iterations = it - 1;
      out.seconds = elapsed;
      out.stopped = "no data input reaches the objective: the course crafts training batches from its start";
      break;
    }
    if (o_.on_progress && twin_ == Twin::None && (it == 1 || seconds_between(last_progress, Clock::now()) >= 0.1)) {
      last_progress = Clock::now();
      o_.on_progress(Progress{index, count, target_.label(), it, elapsed, budget_s, objective_,
                              weights_race_ && weights_race_->found_by(it),
                              training_race_ && training_race_->found_by(it)});
    }
    iteration_ = it;
    GRIST_TRY(data_->redraw(batch_));
    if (cfg_.variant == Variant::Random) {
      for (const auto& name : data_inputs_) {
        Tensor& x = batch_.at(name);
        auto c = clip_.find(name);
        double lo = c != clip_.end() ? c->second.first : 0.0, hi = c != clip_.end() ? c->second.second : 1.0;
        for (int64_t i = 0; i < x.numel(); ++i)
          dispatch_float(x.dtype(), [&](auto tag) {
            x.data<decltype(tag)>()[i] = static_cast<decltype(tag)>(ex_->rng().uniform(lo, hi));
          });
      }
    }

    // 1. Monitored forward, every node scanned.
    const std::optional<Rng> rng_before = random_ops_ ? std::optional<Rng>(ex_->rng()) : std::nullopt;
    ex_->options().dropout_training = m_.monitor_dropout;
    GRIST_TRY(feed(batch_));
    GRIST_TRY(ex_->forward());
    auto finish = [&] {
      out.iterations = it;
      out.seconds = seconds_between(start, Clock::now());
      out.seconds_since_start = seconds_between(o_.process_start, Clock::now());
      out.objective = objective_;
    };
    if (monitored_pass_failed()) {
      record_trigger(out, TriggerPass::Monitored, ex_->forward_event(), batch_, m_.monitor_dropout, rng_before);
      finish();
      return out;
    }
    if (it == 1 && loss_ != kNoValue) {
      const Tensor& l = ex_->value(loss_);
      GRIST_CHECK(l.numel() == 1 && is_float(l.dtype()), "{}: the loss '{}' must be a float scalar, but it is {} {}",
                  m_.path, m_.loss, dtype_name(l.dtype()), l.shape().str());
    }
    // A model that does not train still has a gradient a user will take: sqrt(0) is finite, its derivative
    // is not, so the loss's backward is scanned too (the training step's backward does this when it trains).
    if (scan_loss_gradient) {
      GRIST_TRY(ex_->backward(loss_, data_ids_));
      if (ex_->backward_event().found) {
        record_trigger(out, TriggerPass::LossBackward, ex_->backward_event(), batch_, m_.monitor_dropout,
                       rng_before);
        finish();
        return out;
      }
      note_masked(out, ex_->masked_backward_event(), it);
    }
    if (steps && inputs_phase_over(it, elapsed, budget_s)) {
      if (can_craft_training()) {
        enter_training_phase(it, elapsed, budget_s, out);
      } else if (!stepped_weights_.empty()) {
        enter_weights_phase(it, elapsed, budget_s, out);
      }
    }
    if (crafting_handed_back_ && phase_ == Phase::Inputs && !stepped_weights_.empty() &&
        crafting_share_over(it, elapsed)) {
      crafting_handed_back_ = false;
      enter_weights_phase(it, elapsed, budget_s, out);
    }
    if (crafting_attempt_stalled(it, elapsed)) {
      undo_crafting(it, elapsed, out);
    } else if (crafting_due_again(it, elapsed)) {
      begin_crafting(it, elapsed, out);
    }
    if (training_phase_over(it, elapsed) && !hand_back_crafting(it, elapsed, out)) {
      if (twin_ == Twin::Training) {
        out.iterations = it;
        out.seconds = seconds_between(start, Clock::now());
        out.stopped = "crafted training had its share without reaching it";
        break;
      }
      if (!stepped_weights_.empty()) {
        enter_weights_phase(it, elapsed, budget_s, out);
      } else {
        // Nothing further to try: the inputs and the program's own training go on, from the weights that
        // training had reached before crafting (a witness replays crafted steps, never the program's own after
        // them, so findings from here on are input-reached, and say so truthfully).
        undo_crafting(it, elapsed, out);
      }
    }
    if (phase_ == Phase::Weights) coordinate_weight_steps(it, elapsed, out);
    const bool crafting = phase_ == Phase::Training;
    // Once weights are stepped, the monitored pass's activations belong to the weights before the step.
    const bool reuse_now = reuse && !weights_searched_ && !crafting;
    // The batch just monitored, for a training step on it (a member: copying reuses its buffers).
    if (m_.train.enabled && !m_.train.on_updated_batch && !m_.train.on_fresh_batch && !reuse_now)
      monitored_ = batch_;

    // 2. The input step against the objective's gradient (and the weight step, once the weights joined).
    if (steps) {
      ObjectiveValue ov = evaluate_objective(target_.objective, ex_->value(target_.objective_value), seed_);
      objective_ = ov.value;
      if (ov.index >= 0 &&
          (!std::isfinite(stage_best_) || ov.value < stage_best_ - 1e-3 * std::max(std::fabs(stage_best_), 1e-12))) {
        stage_best_ = ov.value;
        stage_improved_at_ = it;
      }
      if (newton_ && ov.value < newton_best_ * (1 - 1e-3)) {
        newton_best_ = ov.value;
        newton_best_at_ = it;
      }
      if (crafting) std::fill(objective_weight_grad_.begin(), objective_weight_grad_.end(), Tensor{});
      if (ov.index >= 0) {
        const Tensor* seed = &seed_;
        // The search's own gradient is taken unrounded: in a 16-bit mode the objective's gradient (∂y/∂x of a
        // softmax output near 0, say) underflows the format long before the hazard fires, and a sign step on 0
        // goes nowhere. Only the program's own passes keep the format's numerics.
        const Precision program_precision = ex_->options().precision;
        ex_->options().precision = Precision::Fp32;
        const Status objective_backward = ex_->backward(std::span<const ValueId>(&target_.objective_value, 1),
                                                        std::span<const Tensor* const>(&seed, 1), search_ids_);
        ex_->options().precision = program_precision;
        GRIST_TRY(objective_backward);
        if (!objective_backward_ran_) {
          objective_backward_ran_ = true;
          for (ValueId id : data_ids_) data_reaches_objective_ |= ex_->grad(id) != nullptr;
        }
        if (crafting) keep_objective_weight_gradient();
        GRIST_TRY(input_step(it));
        if (weights_searched_ && !newton_) step_weights();
        if (weights_searched_ && newton_ && !newton_step_weights() && it == out.weights_from) {
          // Neither data nor weights reach it: a divisor made of constants only training could change.
          out.iterations = it;
          out.seconds = seconds_between(start, Clock::now());
          out.stopped = "no data input and no weight reaches its operand (it is made of constants)";
          break;
        }
      }
    }

    // 3. The model's own training step: on the program's batch, or on the crafted one.
    if (m_.train.enabled) {
      bool fired = false;
      if (crafting) {
        GRIST_TRY(data_->redraw(crafted_));
        GRIST_TRY(craft_training_batch(it));
        CraftedStep step;
        if (random_ops_) step.rng_state = ex_->rng().state();
        GRIST_TRY(train_step(crafted_, false, out, fired));
        if (!fired) {
          step.batch = crafted_;
          for (const auto& [name, t] : step.batch) crafted_bytes_ += t.nbytes();
          crafted_steps_.push_back(std::move(step));
        }
      } else {
        // The program's own step after crafted ones, before any weight step: a witness could not replay it.
        if (!crafted_steps_.empty() && !weights_changed_) own_steps_after_crafting_ = true;
        if (m_.train.on_fresh_batch) GRIST_TRY(next_fresh_batch());
        const Batch& fed = m_.train.on_fresh_batch ? fresh_ : m_.train.on_updated_batch ? batch_ : monitored_;
        if (phases_.empty()) {
          GRIST_TRY(train_step(fed, reuse_now, out, fired));
        } else {
          GRIST_TRY(train_phases(fed, out, fired));
        }
      }
      if (fired) {
        finish();
        return out;
      }
    }

    // 4. Data: switching (GRIST), or a fresh batch every iteration (original, random).
    if (switching && it % cfg_.switch_every == 0) GRIST_TRY(switch_rows(it));
    if (cfg_.variant == Variant::Original || cfg_.variant == Variant::Random) GRIST_TRY(data_->next_batch(batch_));
  }
  out.seconds_since_start = seconds_between(o_.process_start, Clock::now());
  out.objective = objective_;
  return out;
}

}  // namespace

namespace {

// Which values some searched data input reaches (forward along the graph, whose nodes are in order).
std::vector<bool> reached_from_data(const Graph& g, const Dataset& data) {
  std::vector<bool> inputs(g.values.size(), false);
  for (const auto& name : data.input_names())
    if (data.spec(name).role == InputRole::Data) inputs[static_cast<size_t>(g.find_value(name))] = true;
  return reached_from(g, inputs);
}

// Whether the hunt keeps every searched input inside the range the scan assumed for it (a clip range).
bool inputs_stay_in_scan_ranges(const Dataset& data) {
  for (const auto& name : data.input_names()) {
    const InputSpec& spec = data.spec(name);
    if (spec.role == InputRole::Data && spec.range == ClipRange::None) return false;
  }
  return true;
}

// Each hazard's objective at the initial weights on the first batch, by one forward pass: how near its failure the
// program starts. None where the pass cannot run or the objective has no finite element.
std::map<const HazardSite*, double> initial_objectives(const Graph& g, const HuntOptions& o, const Dataset& data,
                                                       const std::vector<const HazardSite*>& sites) {
  std::map<const HazardSite*, double> objectives;
  auto ex = Executor::create(g, program_executor_options(o.manifest));
  Dataset first(data);
  Batch batch;
  if (!ex || !first.next_batch(batch)) return objectives;
  for (const auto& [name, t] : batch)
    if (!ex->set_input(name, t)) return objectives;
  ex->options().dropout_training = o.manifest.monitor_dropout;
  if (!ex->forward()) return objectives;
  Tensor seed;
  for (const HazardSite* s : sites) {
    const ObjectiveValue v = evaluate_objective(s->objective, ex->value(s->objective_value), seed);
    if (v.index >= 0) objectives[s] = v.value;
  }
  return objectives;
}

// The hazards to hunt, in order, with the interval scan's verdicts deciding (a proof is trusted only as far
// as its scope covers what the hunt does):
//   1. may fail at the initial weights already, then may fail once training moves the weights;
//   2. propagated only (they inherit an upstream failure);
//   3. proved safe, but for less than the hunt does: for weight ranges the user stated (training or the
//      weight search may leave them), or for inputs in a range the unclipped search may leave — hunted last,
//      with a smaller share of the time;
// and proved safe for every run (any weights, inputs within their clip ranges): not hunted.
// Within each, the producer nearest the loss first. Without the scan: that order, equal shares.
std::vector<PlannedHazard> plan_hazards(const Graph& g, const HuntOptions& o, const Dataset& data,
                                        const std::vector<const HazardSite*>& targets, HuntReport& report) {
  constexpr double kMayFail = 1.0, kPropagated = 0.5, kProvedForLess = 0.25;
  // Within each kind, the producer nearest the loss first: a model's own bug is most often the loss's log, and
  // the default stops at the first trigger, so the hazards far up the graph must not take its turn.
  const ValueId loss =
      !o.manifest.loss.empty() ? g.find_value(o.manifest.loss) : (g.outputs.empty() ? kNoValue : g.outputs[0]);
  std::map<const HazardSite*, size_t> distances;  // nodes on the path to the loss; unreachable last
  for (const HazardSite* t : targets) {
    const size_t n = loss == kNoValue ? 0 : g.path_to(t->node, loss).size();
    distances[t] = loss != kNoValue && n == 0 ? std::numeric_limits<size_t>::max() : n;
  }
  auto distance = [&](const HazardSite* t) { return distances.at(t); };
  auto nearest_first = [&](std::vector<const HazardSite*>& kind) {
    std::stable_sort(kind.begin(), kind.end(),
                     [&](const HazardSite* a, const HazardSite* b) { return distance(a) < distance(b); });
  };
  auto equal_shares = [&] {
    std::vector<const HazardSite*> ranked = targets;
    nearest_first(ranked);
    std::vector<PlannedHazard> plan;
    for (const HazardSite* t : ranked) plan.push_back({t, kMayFail});
    return plan;
  };
  // The scan takes untrained initializers as constants: a searched variable would void its proofs.
  if (!o.use_scan || !o.manifest.search_variables.empty()) return equal_shares();
  const auto start = Clock::now();
  ScanOptions so;
  so.manifest = &o.manifest;
  so.batch = o.batch_size;
  so.step_bounds = false;  // the hunt runs as many steps as its budget allows: a step count covers none of it
  so.precision = o.manifest.precision;  // the scan rounds as the hunt's runs do
  auto scanned = scan(g, so);
  report.scan_seconds = seconds_between(start, Clock::now());
  if (!scanned) return equal_shares();  // a model the analysis cannot bound is hunted whole
  const bool clipped = inputs_stay_in_scan_ranges(data);
  std::vector<const HazardSite*> fails_initially, fails_when_trained, propagated, proved_for_less;
  for (const HazardSite* t : targets) {
    const HazardVerdict* v = nullptr;
    for (const auto& hv : scanned->verdicts)
      if (hv.site.id == t->id) v = &hv;
    if (!v || (v->verdict == Verdict::MayFail && v->fails_initially)) {
      fails_initially.push_back(t);
    } else if (v->verdict == Verdict::MayFail) {
      fails_when_trained.push_back(t);
    } else if (v->verdict == Verdict::PropagatedOnly) {
      propagated.push_back(t);
    } else if (v->scope != Scope::EveryRun || !clipped) {
      proved_for_less.push_back(t);
    } else {
      HazardOutcome skipped;
      skipped.site = *t;
      skipped.skipped = fmt::format("proved safe for every run by the interval scan: its operand stays in [{}, {}] "
                                    "for any value of the trained weights and inputs within their clip ranges",
                                    v->operand.lo, v->operand.hi);
      report.outcomes.push_back(std::move(skipped));
    }
  }
  for (auto* kind : {&fails_initially, &fails_when_trained, &propagated, &proved_for_less}) nearest_first(*kind);
  std::vector<PlannedHazard> plan;
  for (const HazardSite* t : fails_initially) plan.push_back({t, kMayFail});
  for (const HazardSite* t : fails_when_trained) plan.push_back({t, kMayFail});
  for (const HazardSite* t : propagated) plan.push_back({t, kPropagated});
  for (const HazardSite* t : proved_for_less) plan.push_back({t, kProvedForLess});
  // When weights are searched, a hazard no data input reaches (a divisor made of weights or constants) is
  // settled fast: exact weight steps reach zero in a few iterations or give up once they stop progressing.
  // Such hazards go first, those whose operand is a weight itself (one exact step) before the others, so
  // the slow searches get what they leave.
  if (o.manifest.search.weight_change > 0 && !o.manifest.search.faithful) {
    const std::vector<bool> reached = reached_from_data(g, data);
    auto weights_only = [&](const PlannedHazard& p) { return !reached[static_cast<size_t>(p.site->objective_value)]; };
    auto is_weight = [&](const PlannedHazard& p) {
      return g.value(p.site->objective_value).kind == ValueKind::Initializer;
    };
    auto first = std::stable_partition(plan.begin(), plan.end(), weights_only);
    auto others = std::stable_partition(plan.begin(), first, is_weight);
    // Of the others, the one nearest its failure at the initial weights first (one forward pass): exact steps that
    // reach zero do so in a few iterations from anywhere, but those that cannot (a divisor of 1e-7 + |·|, a sum of
    // many |w|) take seconds each to give up. Zoo 28a: the layer-1 scale, 1e-8 at its zero-initialised weights,
    // fails at once; three divisors of 1 to 16 before it took 11 s.
    std::vector<const HazardSite*> exact;  // the exact steps' objectives; the others keep their turn after them
    for (auto p = others; p != first; ++p)
      if (p->site->objective == Objective::MinAbs || p->site->objective == Objective::MinAbsOneMinus)
        exact.push_back(p->site);
    if (exact.size() >= 2) {
      const auto objective = initial_objectives(g, o, data, exact);
      auto value = [&](const PlannedHazard& p) {
        auto v = objective.find(p.site);
        return v != objective.end() ? v->second : std::numeric_limits<double>::infinity();
      };
      std::stable_sort(others, first,
                       [&](const PlannedHazard& a, const PlannedHazard& b) { return value(a) < value(b); });
    }
  }
  return plan;
}

}  // namespace

namespace {

bool races_weights(const HuntOptions& o) {
  const SearchConfig& c = o.manifest.search;
  return c.race_weights && !c.faithful && c.weight_change > 0 && steps_inputs(c.variant);
}

// The training twin crafts what the course would (TargetSearch::can_craft_training, as far as the manifest tells).
bool races_training(const HuntOptions& o) {
  const Manifest& m = o.manifest;
  const SearchConfig& c = m.search;
  return c.race_training && !c.faithful && steps_inputs(c.variant) && m.train.enabled && m.train.phases.empty() &&
         !m.loss.empty() && c.training_share > 0 && c.training_s > 0;
}

// SearchConfig::race_weights, race_training: the course and its twins (search/race.h). The twins run one after the
// other on a second thread, the weights twin first (its findings come in a few iterations where they come at all;
// crafting takes longer), or, under max_iterations, both before the course, the races then judged in iterations.
// Each search has its own executor, copy of the data and generator; the graph, the sites and the loaded rows are
// only read, and a hunt's kernels run on the calling thread (util/thread_pool.h): the threads write nothing they
// share but the races' flags.
Result<HazardOutcome> run_races(const Graph& g, const HuntOptions& o, const std::vector<HazardSite>& sites,
                                const HazardSite& site, const Dataset& data, const Checkpoint* checkpoint,
                                double budget_s, int index, int count) {
  const bool by_iterations = o.manifest.search.max_iterations > 0;
  RaceSignal weights_signal, training_signal;
  weights_signal.by_iterations = training_signal.by_iterations = by_iterations;
  std::atomic<bool> course_done{false};
  HuntOptions twin_options = o;
  twin_options.on_progress = nullptr;
  twin_options.stop_requested = [&] { return course_done.load() || (o.stop_requested && o.stop_requested()); };
  std::optional<TargetSearch> weights_twin, training_twin;
  if (races_weights(o)) weights_twin.emplace(g, twin_options, sites, site, data, checkpoint).race_the_weights();
  if (races_training(o)) training_twin.emplace(g, twin_options, sites, site, data, checkpoint).race_the_training();
  TargetSearch course(g, o, sites, site, data, checkpoint);
  course.watch_races(weights_twin ? &weights_signal : nullptr, training_twin ? &training_signal : nullptr);
  Result<HazardOutcome> weights_out = HazardOutcome{}, training_out = HazardOutcome{};
  const auto start = Clock::now();
  auto run_twin = [&](TargetSearch& twin, RaceSignal& signal, Result<HazardOutcome>& out, std::string_view name) {
    try {
      // On the thread, the training twin, after the weights twin, ends with the course's budget; its seconds
      // count from the course's start, as the course's do, so that the races compare them (and a report says
      // when in the hazard's search it fired).
      const double begun = by_iterations ? 0.0 : seconds_between(start, Clock::now());
      out = twin.run(std::max(0.0, budget_s - begun), index, count);
      if (out) out->seconds += begun;
    } catch (const std::exception& e) {
      out = make_error("the {} race: {}", name, e.what());
    }
    if (out && out->triggered) {
      signal.found_at_iteration = out->iterations;
      signal.found.store(true);
    }
  };
  auto run_twins = [&] {
    if (weights_twin) run_twin(*weights_twin, weights_signal, weights_out, "weights");
    if (training_twin && !course_done.load()) run_twin(*training_twin, training_signal, training_out, "training");
  };
  Result<HazardOutcome> course_out = make_error("the search did not run");
  if (by_iterations) {
    run_twins();
    course_out = course.run(budget_s, index, count);
  } else {
    std::thread twins_thread(run_twins);
    try {
      course_out = course.run(budget_s, index, count);
    } catch (...) {
      course_done.store(true);
      twins_thread.join();
      throw;
    }
    course_done.store(true);
    twins_thread.join();
  }
  if (!course_out) return course_out.error();
  if (!weights_out) return weights_out.error();
  if (!training_out) return training_out.error();
  HazardOutcome settled =
      settle_training_race(std::move(course_out).value(), std::move(training_out).value(), by_iterations);
  return settle_weights_race(std::move(settled), std::move(weights_out).value(), by_iterations);
}

}  // namespace

Result<HuntReport> hunt(const Graph& model, const HuntOptions& o) {
  // A manifest's train.checkpoint: the program resumes from the weights it had trained (the model the whole
  // hunt sees, scan included) and from its optimizer's state (set in each search's setup).
  std::optional<Checkpoint> checkpoint;
  std::optional<Graph> resumed;
  if (!o.manifest.train.checkpoint.empty()) {
    auto c = read_checkpoint(o.manifest.train.checkpoint);
    if (!c) return c.error();
    auto g = with_checkpoint_weights(model, *c);
    if (!g) return g.error();
    checkpoint = std::move(c).value();
    resumed = std::move(g).value();
  }
  // train.pretrain_steps: the program's own steps first; the hunt resumes where they got to. The data loaded
  // for them is the hunt's too (its rows are shared by copies, not loaded twice).
  std::optional<Dataset> loaded;
  if (o.manifest.train.pretrain_steps > 0) {
    auto d = Dataset::create(o.manifest, resumed ? *resumed : model, o.batch_size, o.manifest.search.seed);
    if (!d) return d.error();
    loaded.emplace(std::move(d).value());
    auto c = pretrain(resumed ? *resumed : model, o.manifest, *loaded, o.manifest.train.pretrain_steps,
                      checkpoint ? &*checkpoint : nullptr);
    if (!c) return c.error();
    auto g = with_checkpoint_weights(model, *c);
    if (!g) return g.error();
    checkpoint = std::move(c).value();
    resumed = std::move(g).value();
  }
  const Graph& g = resumed ? *resumed : model;
  HuntReport report;
  const auto start = Clock::now();
  report.hazards = find_hazards_in(g, o.manifest.precision);
  GRIST_TRY(choose_objective(g, o.manifest, report.hazards));
  std::vector<const HazardSite*> targets;
  for (const auto& s : report.hazards)
    if (o.manifest.target.empty() || s.node_name == o.manifest.target || std::to_string(s.id) == o.manifest.target)
      targets.push_back(&s);
  if (!o.manifest.target.empty() && targets.empty())
    return make_error("--target '{}' names no hazard of the model (hazards: {})", o.manifest.target, [&] {
      std::string list;
      for (const auto& s : report.hazards) list += (list.empty() ? "" : ", ") + s.label();
      return list.empty() ? std::string("none") : list;
    }());
  // Load the data once, before anything else: a manifest that does not fit the model is an error even when
  // no hazard is left to hunt, and every hazard's search starts from the same fresh copy.
  const auto data_start = Clock::now();
  auto data = loaded ? Result<Dataset>(*loaded) : Dataset::create(o.manifest, g, o.batch_size, o.manifest.search.seed);
  if (!data) return data.error();
  report.data_seconds = seconds_between(data_start, Clock::now());
  const std::vector<PlannedHazard> plan = plan_hazards(g, o, *data, targets, report);
  if (o.on_planned) o.on_planned(report);
  if (o.on_outcome)
    for (const HazardOutcome& skipped : report.outcomes) o.on_outcome(report, skipped);
  if (o.all && !o.independent && plan.size() > 1) {
    // Every hazard on one run: turns that carry the program's own training forward (search/interleave.h).
    auto run_turn = [&](const Turn& turn, CarriedState& carried) -> Result<HazardOutcome> {
      HuntOptions turn_options = o;
      turn_options.manifest.search.max_iterations = turn.max_iterations;
      TargetSearch search(g, turn_options, report.hazards, *plan[turn.hazard].site, *data,
                          checkpoint ? &*checkpoint : nullptr, &carried);
      if (turn.beyond_inputs) search.go_beyond_inputs();
      auto outcome = search.run(turn.budget_s, static_cast<int>(turn.hazard) + 1, static_cast<int>(plan.size()));
      if (outcome) search.finish_turn();
      return outcome;
    };
    const auto searches_start = Clock::now();
    GRIST_TRY(hunt_interleaved(plan, o, start, run_turn, report));
    report.search_seconds = seconds_between(searches_start, Clock::now());
    report.seconds = seconds_between(start, Clock::now());
    return report;
  }
  // The time limit is shared by weight: each hazard gets its share of what is left when its turn comes, so
  // time a quick trigger did not use goes to the hazards after it.
  const double total_s = o.manifest.search.time_limit * 60.0;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (report.interrupted) {
      HazardOutcome left;
      left.site = *plan[i].site;
      left.skipped = "not hunted: the hunt was interrupted";
      report.outcomes.push_back(std::move(left));
      if (o.on_outcome) o.on_outcome(report, report.outcomes.back());
      continue;
    }
    const double left = total_s - seconds_between(start, Clock::now());
    double shares_left = 0;
    for (size_t j = i; j < plan.size(); ++j) shares_left += plan[j].share;
    const double budget = std::max(0.0, left * plan[i].share / shares_left);
    const Checkpoint* resumed_from = checkpoint ? &*checkpoint : nullptr;
    const auto search_start = Clock::now();
    auto outcome = races_weights(o) || races_training(o)
                       ? run_races(g, o, report.hazards, *plan[i].site, *data, resumed_from, budget,
                                   static_cast<int>(i) + 1, static_cast<int>(plan.size()))
                       : TargetSearch(g, o, report.hazards, *plan[i].site, *data, resumed_from)
                             .run(budget, static_cast<int>(i) + 1, static_cast<int>(plan.size()));
    if (!outcome) return outcome.error();
    report.search_seconds += seconds_between(search_start, Clock::now());
    bool fired = outcome->triggered;
    report.interrupted = outcome->stopped == "interrupted";
    report.outcomes.push_back(std::move(outcome).value());
    if (o.on_outcome) o.on_outcome(report, report.outcomes.back());
    if (fired && !o.all) break;
  }
  report.seconds = seconds_between(start, Clock::now());
  return report;
}

}  // namespace grist
