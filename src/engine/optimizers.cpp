#include "engine/optimizers.h"

#include <algorithm>
#include <cmath>

namespace grist {

Optimizer::Optimizer(OptimizerConfig config, std::vector<ValueId> params)
    : config_(config), params_(std::move(params)) {
  first_.resize(params_.size());
  second_.resize(params_.size());
  mean_.resize(params_.size());
}

namespace {
template <class T>
void init_state(Tensor& s, const Tensor& like, double value) {
  if (s.defined() && s.shape() == like.shape() && s.dtype() == like.dtype()) return;
  s.resize(like.dtype(), like.shape());
  std::fill_n(s.data<T>(), s.numel(), static_cast<T>(value));
}
}  // namespace

template <class T>
void Optimizer::update(Tensor& w_t, const Tensor& g_t, size_t k, float grad_factor) {
  // Separate instantiations, so that the unscaled loops stay as they were (a per-element test slowed SGD by 10 %)
  // and so that no loop holds a branch on the weight decay (a branch keeps the loop from vectorising).
  const bool decay = static_cast<T>(config_.weight_decay) != T(0);  // as the loops' wd
  if (grad_factor != 1.0f) {
    if (decay) update_rule<T, true, true>(w_t, g_t, k, static_cast<T>(grad_factor));
    else update_rule<T, true, false>(w_t, g_t, k, static_cast<T>(grad_factor));
  } else {
    if (decay) update_rule<T, false, true>(w_t, g_t, k, T(1));
    else update_rule<T, false, false>(w_t, g_t, k, T(1));
  }
}

template <class T, bool kScaled, bool kDecay>
void Optimizer::update_rule(Tensor& w_t, const Tensor& g_t, size_t k, T factor) {
  const OptimizerConfig& c = config_;
  const int64_t n = w_t.numel();
  T* w = w_t.data<T>();
  const T* g0 = g_t.data<T>();
  const T lr = static_cast<T>(c.lr), wd = static_cast<T>(c.weight_decay), eps = static_cast<T>(c.epsilon);
  // The product rounded to T before it is used (no FMA contraction in this build): the value an unscaling pass
  // would have written.
  auto grad = [&](int64_t i) {
    T gi = g0[i];
    if constexpr (kScaled) gi = static_cast<T>(gi * factor);
    if constexpr (kDecay) gi = gi + wd * w[i];
    return gi;
  };
  const bool tf = c.flavor == Framework::TensorFlow;

  switch (c.kind) {
    case OptimizerKind::SGD: {
      if (c.momentum == 0.0) {
        for (int64_t i = 0; i < n; ++i) w[i] -= lr * grad(i);
        break;
      }
      init_state<T>(first_[k], w_t, 0.0);
      T* v = first_[k].data<T>();
      const T mu = static_cast<T>(c.momentum);
      for (int64_t i = 0; i < n; ++i) {
        T gi = grad(i);
        v[i] = mu * v[i] + gi;
        w[i] -= lr * (c.nesterov ? gi + mu * v[i] : v[i]);
      }
      break;
    }
    case OptimizerKind::Adam: {
      init_state<T>(first_[k], w_t, 0.0);
      init_state<T>(second_[k], w_t, 0.0);
      T* m = first_[k].data<T>();
      T* v = second_[k].data<T>();
      const T b1 = static_cast<T>(c.beta1), b2 = static_cast<T>(c.beta2);
      const T bc1 = T(1) - static_cast<T>(std::pow(c.beta1, static_cast<double>(t_)));
      const T bc2 = T(1) - static_cast<T>(std::pow(c.beta2, static_cast<double>(t_)));
      const T lr_t = lr * std::sqrt(bc2) / bc1;
      // The framework's choice outside the loops, so that each vectorises (CMakeLists.txt).
      auto moments = [&](int64_t i) {
        T gi = grad(i);
        m[i] = b1 * m[i] + (T(1) - b1) * gi;
        v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
      };
      if (tf) {
        for (int64_t i = 0; i < n; ++i) {
          moments(i);
          w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          moments(i);
          w[i] -= lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
        }
      }
      break;
    }
    case OptimizerKind::Adagrad: {
      init_state<T>(second_[k], w_t, c.initial_accumulator);
      T* acc = second_[k].data<T>();
      for (int64_t i = 0; i < n; ++i) {
        T gi = grad(i);
        acc[i] += gi * gi;
        w[i] -= lr * gi / (std::sqrt(acc[i]) + eps);
      }
      break;
    }
    case OptimizerKind::RMSProp: {
      init_state<T>(second_[k], w_t, c.initial_accumulator);
      if (c.centered) init_state<T>(mean_[k], w_t, 0.0);
      if (c.momentum != 0.0) init_state<T>(first_[k], w_t, 0.0);
      T* ms = second_[k].data<T>();
      T* mg = c.centered ? mean_[k].data<T>() : nullptr;
      T* mom = c.momentum != 0.0 ? first_[k].data<T>() : nullptr;
      const T rho = static_cast<T>(c.decay), mu = static_cast<T>(c.momentum);
      for (int64_t i = 0; i < n; ++i) {
        T gi = grad(i);
        ms[i] = rho * ms[i] + (T(1) - rho) * gi * gi;
        T var = ms[i];
        if (mg) {
          mg[i] = rho * mg[i] + (T(1) - rho) * gi;
          var -= mg[i] * mg[i];
        }
        // TensorFlow puts ε inside the root and scales by lr before the momentum; PyTorch the opposite.
        T step = tf ? lr * gi / std::sqrt(var + eps) : gi / (std::sqrt(var) + eps);
        if (mom) {
          mom[i] = mu * mom[i] + step;
          step = mom[i];
        }
        w[i] -= tf ? step : lr * step;
      }
      break;
    }
  }
}

void Optimizer::set_state(OptimizerState s) {
  first_ = std::move(s.first);
  second_ = std::move(s.second);
  mean_ = std::move(s.mean);
  t_ = s.steps;
}

Status Optimizer::step(Executor& ex) {
  std::vector<Tensor*> params;
  std::vector<const Tensor*> grads;
  for (ValueId id : params_) {
    grads.push_back(ex.grad(id));
    params.push_back(grads.back() ? &ex.mutable_value(id) : nullptr);
  }
  return step(params, grads);
}

Status Optimizer::step(std::span<Tensor* const> params, std::span<const Tensor* const> grads, float grad_factor) {
  GRIST_CHECK(params.size() == grads.size(),
              "optimizer: {} parameters but {} gradients", params.size(), grads.size());
  if (first_.size() < params.size()) {
    first_.resize(params.size());
    second_.resize(params.size());
    mean_.resize(params.size());
  }
  ++t_;
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor* g = grads[k];
    if (!g) continue;  // no gradient reached this parameter (PyTorch skips it too)
    Tensor& w = *params[k];
    GRIST_CHECK(g->shape() == w.shape() && g->dtype() == w.dtype(), "optimizer: a gradient ({} {}) does not match its parameter ({} {})",
                dtype_name(g->dtype()), g->shape().str(), dtype_name(w.dtype()), w.shape().str());
    bool ok = dispatch_float(w.dtype(), [&](auto tag) { update<decltype(tag)>(w, *g, k, grad_factor); });
    GRIST_CHECK(ok, "optimizer: a parameter is {}, not a float tensor", dtype_name(w.dtype()));
  }
  return Status::ok();
}

}  // namespace grist
