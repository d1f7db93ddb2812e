#include "search/line_step.h"

#include <algorithm>

namespace grist {

Status LineStep::step(std::vector<Input>& inputs, double eps, double objective,
                      const std::function<Result<double>()>& evaluate, std::vector<RowStepStats>& stats) {
  saved_.resize(inputs.size());
  stats.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) saved_[i].copy_from(*inputs[i].x);
  auto restore = [&] {
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i].x->copy_from(saved_[i]);
  };
  auto move_by = [&](double a) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].grad) sign_step(*inputs[i].x, *inputs[i].grad, a, inputs[i].clip, stats[i]);
      else stats[i] = RowStepStats{};
  };
  double a = alpha_ > 0 ? std::min(2 * alpha_, kMaxGrowth * eps) : eps;
  for (int k = 0; k < kTrials; ++k, a /= 2) {
    if (k > 0) restore();
    move_by(a);
    ++trials_;
    auto o = evaluate();
    if (!o) return o.error();
    if (*o < objective) {
      alpha_ = a;
      return Status::ok();
    }
  }
  restore();
  move_by(eps);
  alpha_ = 0;
  return Status::ok();
}

}  // namespace grist
