#include "search/pretraining.h"

#include <optional>

#include "engine/executor.h"
#include "engine/grad_scaler.h"
#include "engine/optimizers.h"
#include "engine/scaled_step.h"
#include "search/search_choices.h"

namespace grist {

Result<Checkpoint> pretrain(const Graph& g, const Manifest& m, const Dataset& loaded, int64_t steps,
                            const Checkpoint* from) {
  GRIST_CHECK(m.train.enabled, "{}: train.pretrain_steps needs an optimizer", m.path);
  auto ex = Executor::create(g, program_executor_options(m));
  if (!ex) return ex.error();
  std::optional<Dataset> data(loaded);  // copies share the rows
  auto params = trained_params(g, m);
  if (!params) return params.error();
  const ValueId loss = g.find_value(m.loss);
  GRIST_CHECK(loss != kNoValue, "{}: loss '{}' is not a value of the model", m.path, m.loss);
  Optimizer opt(m.train.optimizer, *params);
  if (from) {
    auto state = checkpoint_state(*from, g, *params, m.train.optimizer);
    if (!state) return state.error();
    opt.set_state(std::move(state).value());
  }
  // amp-*: GradScaler's loss scaling, from the checkpoint's scaler where it has one.
  std::optional<GradScaler> scaler;
  if (is_autocast(m.precision)) {
    scaler.emplace();
    if (from && from->scaler) scaler->set_state(*from->scaler);
  }
  GradScaler* scaling = scaler ? &*scaler : nullptr;
  Tensor seed;
  ex->options().dropout_training = m.train.dropout;
  Batch batch;
  for (int64_t step = 1; step <= steps; ++step) {
    GRIST_TRY(data->next_batch(batch));
    GRIST_TRY(data->redraw(batch));
    for (const auto& [name, t] : batch) GRIST_TRY(ex->set_input(name, t));
    GRIST_TRY(ex->forward());
    auto fails = [&](const NonFiniteEvent& e, const std::string& why) {
      return make_error("{}: pre-training step {} of {} (train.pretrain_steps) produced a non-finite value at {} "
                        "'{}' ({} pass{}): the program fails before the search", m.path, step, steps, e.op_type,
                        e.node_name, e.in_backward ? "backward" : "forward", why);
    };
    if (ex->forward_event().found) return fails(ex->forward_event(), "");
    GRIST_TRY(training_backward(*ex, loss, *params, scaling, seed));
    // Under loss scaling an inf/NaN gradient skips the step, as GradScaler does; it fails once the scale collapses.
    if (!scaler && ex->backward_event().found) return fails(ex->backward_event(), "");
    auto stepped = training_update(*ex, opt, scaling);
    if (!stepped) return stepped.error();
    if (scaler && !*stepped && scaler->collapsed() && ex->backward_event().found)
      return fails(ex->backward_event(), fmt::format(", the loss scale backed off to {}", scaler->scale()));
    for (ValueId id : *params)
      GRIST_CHECK(all_finite(ex->value(id)), "{}: pre-training step {} of {} (train.pretrain_steps): the {} update "
                  "made weight '{}' non-finite", m.path, step, steps, optimizer_kind_name(m.train.optimizer.kind),
                  g.value(id).name);
  }
  Checkpoint c;
  c.path = m.path + " (train.pretrain_steps)";
  if (from) c.weights = from->weights;
  for (ValueId id : *params) c.weights[g.value(id).name] = ex->value(id);
  const OptimizerState st = opt.state();
  c.steps = st.steps;
  if (scaler) c.scaler = GradScalerState{scaler->scale(), scaler->growth_tracker(), 0};
  for (size_t k = 0; k < params->size(); ++k)
    for (auto [slot, from_state] :
         {std::pair{"first", &st.first}, std::pair{"second", &st.second}, std::pair{"mean", &st.mean}})
      if (k < from_state->size() && (*from_state)[k].defined())
        c.slots[slot][g.value((*params)[k]).name] = (*from_state)[k];
  return c;
}

}  // namespace grist
