// The search's settings: GRIST's experiments.conf keys (same names, same defaults, read as is) plus
// grist's own, each overridable from a manifest or the command line.
#pragma once

#include <cstdint>
#include <string>

#include "util/ini.h"
#include "util/status.h"

namespace grist {

enum class Variant {
  Grist,     // input steps + training + data switching (the study's GRIST)
  GristNs,   // the same without data switching (switch_data=False)
  Original,  // no input steps, a fresh batch every iteration: the program's own behaviour
  Random,    // uniform random samples in the input range every iteration
};
// Whether the variant steps the data inputs (by a step rule) rather than drawing them.
inline bool steps_inputs(Variant v) { return v == Variant::Grist || v == Variant::GristNs; }
enum class SwitchScore {
  Score,  // replace the k lowest (U − C + 1)/(I + 1e-7): the study's intended rule
  Fifo,   // replace the k oldest: what the study's tool actually did
};

// How the search steps the data inputs against ∂O/∂x (grist's own; the study had the sign step only).
enum class StepRule {
  Sign,  // x − ε·sign(g): the study's step
  Adam,  // Adam's per-element moments, learning rate ε (search/adam_step.h)
  Line,  // backtracking line search along −sign(g) on the objective (search/line_step.h)
};

struct SearchConfig {
  // experiments.conf, section [parameter]
  double time_limit = 30;       // minutes
  double change = 0.15;         // ε of the sign step
  bool decay = false;           // ε_t = max(ε·rate^⌊t/steps⌋, ε·1e-4)
  int64_t decay_steps = 10000;
  double decay_rate = 0.5;
  std::string delta_type = "grist";  // the only kind the study had: sign × ε
  bool switch_data = true;      // False = GRIST-ns
  double drop_rate = 0.05;      // fraction of the batch replaced at each switch
  // grist's own
  Variant variant = Variant::Grist;
  SwitchScore switch_score = SwitchScore::Score;
  int64_t switch_every = 100;   // iterations between switches
  int64_t max_iterations = 0;   // 0: bounded by time only
  uint64_t seed = 0;
  // The study's loop exactly: only the loss (or, without one, the outputs) is checked after the monitored
  // pass, the training pass is not scanned, and switching is FIFO as its tool shipped.
  bool faithful = false;
  // The data inputs' step (hunt --step, [search] step); opt-in. The faithful loop always takes the sign step.
  StepRule step = StepRule::Sign;
  // ε of a sign step on the weights against the same objective, beside the input step (RANUM's "weights as
  // search variables"); 0: never. The witness then carries the weights it reached. Inputs search alone for
  // the first `weights_after` of a hazard's budget (of max_iterations when set), but no longer than
  // `weights_after_s` seconds, as the study did; then the weights join, for the failures the input box cannot
  // reach at the current weights. A hazard that no data input reaches gets them from the second iteration.
  // The faithful loop never steps weights.
  double weight_change = 0.01;
  double weights_after = 0.25;
  double weights_after_s = 10;
  // With stall_rule (hunt/bench --stall-rule; an explicit clock above turns it off) the search decides instead
  // when each stage has had its turn: the inputs' when their objective has not improved over a window of
  // iterations, or the batch stopped moving (pinned at its clip bounds, or its gradient vanished) while the
  // objective stood still; crafted training's and the optimizer-sized weight steps' when their objective stalls.
  // Half of what is left of the budget stays the backstop of each. Opt-in: on the zoo it is faster where the
  // inputs cannot reach, but it also ends the inputs' turn on toys whose own training carries a flat objective to
  // the failure later, so that input-reached findings become training-reached or weights-perturbed
  // (docs/RESULTS.md, session 6).
  bool stall_rule = false;
  // With craft_early (hunt/bench --craft-early) the two clocks are decoupled: crafted training joins once the
  // inputs' objective has not improved by 0.1 % over the last half of their iterations (3 at least), judged after
  // 1 s at the least (a quarter of the budget when less), or at the inputs' clock when that comes first; the
  // weights keep the clock: crafted training then runs at least until the weights would have joined without it
  // (the inputs' clock, then crafting's share). Before the inputs' clock an attempt that stalls, or fills the
  // witness's 128 MB of crafted batches, is undone (weights and optimizer state back to the program's own) and
  // tried again after as long of the program's own training; at the clock the last attempt begins and takes
  // crafting's course as without craft_early. Where no data input reaches the objective nothing changes.
  // Opt-in: on the zoo it is 2-10x faster on most clock-waiters, but a toy whose objective stays flat until its
  // own training fails is then reached by crafted training (class 2) instead of by its own (class 1): zoo 12, 14,
  // 19, 40-42 and 50 (docs/RESULTS.md, session 16). Models that do not train keep the clock. Off with --faithful.
  bool craft_early = false;
  // With race_weights (the default; hunt/bench --no-race-weights) a second search, on a second thread, steps the
  // weights from the second iteration beside the program's own course (the inputs, the model's training, crafted
  // training, as the clocks above have it). Its finding is weights-perturbed and comes as soon as the weights alone
  // can reach the failure; the course still has its turn for an input- or training-reached one, which is reported
  // instead when found before the course's own weights would join (the race's is then noted as the first trigger).
  // Under max_iterations the race runs first and is judged in iterations, so the outcome does not depend on the
  // machine's speed. Off with --faithful, where no weight is searched (weight_change 0, --reach below weights), and
  // in hunt --all's shared run. On the zoo it triggers 64 of 64 in every run against 62 (docs/RESULTS.md, session
  // 18), no input- or training-reached finding lost.
  bool race_weights = true;
  // With race_training (the default; hunt/bench --no-race-training), for a model that trains, the second thread
  // then runs a training twin: crafted training batches from the second iteration, beside the course, which still
  // has the inputs' clock to itself. Once the twin is training-reached, the course ends where its own crafted
  // training would begin; an input-reached finding it makes before then is reported instead, however late. Off with
  // --faithful, where nothing is crafted (training_share 0, --reach inputs) and in hunt --all's shared run.
  bool race_training = true;
  // Between the inputs' share and the weights joining, a model that trains gets crafted training batches:
  // its own optimizer steps on batches moved, within the inputs' ranges, so that each step goes down the
  // objective's gradient in the weights (gradient matching). What it reaches is training-reached, which the
  // weight search's findings are not. `training_share` of what is left of the hazard's budget then, at most
  // `training_s` seconds; 0: skipped. The faithful loop never crafts.
  double training_share = 0.5;
  double training_s = 20;
  // The crafted batches choose their one-hot labels from the label set too (search/label_choice.h); false:
  // they keep the data's labels.
  bool craft_labels = true;

  double epsilon_at(int64_t iteration) const;  // ε for a 1-based iteration, decay applied
};

// Reads the [parameter] section of an experiments.conf over `config`; unknown keys and bad values are
// errors naming the file, line and key.
Status apply_experiments_conf(const IniFile& ini, const std::string& source, SearchConfig& config);

Result<Variant> parse_variant(const std::string& s);      // grist | grist-ns | original | random
Result<SwitchScore> parse_switch_score(const std::string& s);  // score | fifo
Result<StepRule> parse_step_rule(const std::string& s);         // sign | adam | line
const char* step_rule_name(StepRule s);                        // its inverse
Result<bool> parse_bool(const std::string& s);             // True/False/true/false/1/0/yes/no

}  // namespace grist
