// Elementwise arithmetic: unary math (Exp, Log, Sigmoid, ...) and the activations models export (HardSwish,
// Elu, Mish, ...), broadcasting binary arithmetic (Add, Sub, Mul, Div, Pow, PRelu), variadic folds (Sum,
// Mean, Min, Max), Clip and Identity, forward and backward.
//
// Numerics follow PyTorch's CPU kernels and their autograd formulas where ONNX leaves room: float32 is
// computed in float32, IEEE specials propagate (log(0) = -inf, 0/0 = NaN, NaN passes through Relu,
// Sign, Min/Max and Clip), and nothing is clamped or nudged by an epsilon. Integer arithmetic wraps
// around like numpy and PyTorch rather than being undefined behaviour.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/elementwise_broadcast.h"
#include "ops/fused_tail.h"
#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {
namespace {

using elementwise::broadcast_two;
using elementwise::for_each_broadcast;
using elementwise::for_each_pair;
using elementwise::mismatched_dtypes;
using elementwise::unsupported_dtype;
using elementwise::write_operand_grad;

// ---------------------------------------------------------------------------------------------------
// Type sets and integer helpers

enum class TypeSet { Float, SignedNumeric, Numeric };

template <TypeSet S, class F>
bool dispatch_set(DType t, F&& f) {
  if constexpr (S == TypeSet::Float) {
    return dispatch_float(t, f);
  } else if constexpr (S == TypeSet::SignedNumeric) {
    return dispatch_signed_numeric(t, f);
  } else {
    return dispatch_numeric(t, f);
  }
}

// Unsigned type that integer arithmetic on T wraps in. Types narrower than int are widened to uint32 so
// that their promotion to int cannot overflow (uint16 * uint16 would, as a signed int).
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(uint32_t)), uint32_t, std::make_unsigned_t<T>>;

// a op b, wrapping around on integer overflow instead of being undefined behaviour.
template <class T, class Op>
T wrapping(T a, T b, Op op) {
  if constexpr (std::is_floating_point_v<T>) {
    return op(a, b);
  } else {
    return static_cast<T>(op(static_cast<WrapType<T>>(a), static_cast<WrapType<T>>(b)));
  }
}

template <class T> T wrapping_add(T a, T b) { return wrapping(a, b, std::plus<>{}); }
template <class T> T wrapping_sub(T a, T b) { return wrapping(a, b, std::minus<>{}); }
template <class T> T wrapping_mul(T a, T b) { return wrapping(a, b, std::multiplies<>{}); }

template <class T>
T wrapping_neg(T x) {
  return wrapping_sub(T(0), x);
}

// C-style truncating division; the caller has rejected zero divisors. lowest / -1 overflows (a hardware
// trap on x86), so it wraps to lowest like numpy.
template <class T>
T truncating_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrapping_neg(a);
  }
  return static_cast<T>(a / b);
}

// Float to integer the way numpy's astype behaves on in-range values (truncation), without the undefined
// behaviour C++ has for NaN and out-of-range values: NaN becomes 0, the rest saturate.
template <class I>
I saturating_cast(double v) {
  if (std::isnan(v)) return I(0);
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// out[i] = f(in[i]) over n contiguous elements.
template <class T, class F>
void map_values(const T* in, T* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// Ops that read attributes are constructed from their node; the others are plain aggregates.
template <class Op>
Op make_op(const Node& node) {
  if constexpr (std::is_constructible_v<Op, const Node&>) {
    return Op(node);
  } else {
    (void)node;
    return Op{};
  }
}

Error non_float_gradient(const Node& node, DType t) {
  return node_error(node, fmt::format("internal: gradient requested for a {} input", dtype_name(t)));
}

// ---------------------------------------------------------------------------------------------------
// Unary ops: each is a functor with forward(x) and backward(g, x, y) = g · dy/dx, written the way
// PyTorch's autograd formula writes it so rounding matches.

struct Neg {
  static constexpr TypeSet kTypes = TypeSet::SignedNumeric;
  template <class T> T forward(T x) const { return wrapping_neg(x); }
  template <class T> T backward(T g, T, T) const { return -g; }
};

struct Abs {
  static constexpr TypeSet kTypes = TypeSet::Numeric;
  template <class T>
  T forward(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? wrapping_neg(x) : x;
    } else {
      return x;
    }
  }
  // PyTorch: grad * sgn(x), so the subgradient at 0 is 0.
  template <class T> T backward(T g, T x, T) const { return g * T((x > 0) - (x < 0)); }
};

struct Sign {
  static constexpr TypeSet kTypes = TypeSet::Numeric;
  // NaN stays NaN (numpy and ONNX Runtime; PyTorch's kernel would give 0 and hide it).
  template <class T>
  T forward(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T(1) : T(0);
    } else {
      return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;
    }
  }
  template <class T> T backward(T, T, T) const { return T(0); }
};

struct Relu {
  static constexpr TypeSet kTypes = TypeSet::SignedNumeric;
  template <class T> T forward(T x) const { return x < T(0) ? T(0) : x; }  // NaN passes through
  // PyTorch's threshold_backward masks on the result: y <= 0 gets no gradient.
  template <class T> T backward(T g, T, T y) const { return y <= T(0) ? T(0) : g; }
};

struct LeakyRelu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha;
  explicit LeakyRelu(const Node& n) : alpha(n.attr_float("alpha", 0.01)) {}
  template <class T> T forward(T x) const { return x > T(0) ? x : x * static_cast<T>(alpha); }
  template <class T> T backward(T g, T x, T) const { return x > T(0) ? g : g * static_cast<T>(alpha); }
};

struct Sqrt {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::sqrt(x); }
  template <class T> T backward(T g, T, T y) const { return g / (T(2) * y); }  // +inf at 0
};

struct Exp {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::exp(x); }
  template <class T> T backward(T g, T, T y) const { return g * y; }
};

struct Log {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::log(x); }
  template <class T> T backward(T g, T x, T) const { return g / x; }
};

struct Reciprocal {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return T(1) / x; }
  template <class T> T backward(T g, T, T y) const { return g * -(y * y); }
};

struct Sigmoid {
  static constexpr TypeSet kTypes = TypeSet::Float;
  // exp(-x) overflowing to inf for very negative x gives 1/inf = 0, the right limit.
  template <class T> T forward(T x) const { return T(1) / (T(1) + std::exp(-x)); }
  template <class T> T backward(T g, T, T y) const { return g * (T(1) - y) * y; }
};

struct Tanh {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::tanh(x); }
  template <class T> T backward(T g, T, T y) const { return g * (T(1) - y * y); }
};

struct Softplus {
  static constexpr TypeSet kTypes = TypeSet::Float;
  // PyTorch's Softplus (beta 1, threshold 20): log1p(exp(x)), and x itself above 20 where the two agree
  // to the last bit in float32. ONNX's literal log(exp(x) + 1) would overflow to inf at x ≈ 89, which no
  // runtime actually does.
  static constexpr double kThreshold = 20.0;
  template <class T> T forward(T x) const { return x > T(kThreshold) ? x : std::log1p(std::exp(x)); }
  template <class T>
  T backward(T g, T x, T) const {
    if (x > T(kThreshold)) return g;
    const T z = std::exp(x);
    return g * z / (z + T(1));
  }
};

// The activations torchvision's and torch.nn's models export. Where ONNX's formula and PyTorch's kernel
// differ only in rounding, the kernel computes ONNX's formula in the input's type.

// max(0, min(1, αx + β)): PyTorch's Hardsigmoid exports α = 1/6 (ONNX's default is 0.2). Its gradient is
// α inside (0, 1) and 0 outside, as PyTorch's (which is 0 at the boundaries too).
struct HardSigmoid {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha, beta;
  explicit HardSigmoid(const Node& n) : alpha(n.attr_float("alpha", 0.2)), beta(n.attr_float("beta", 0.5)) {}
  template <class T> T forward(T x) const {
    return std::max(T(0), std::min(T(1), static_cast<T>(alpha) * x + static_cast<T>(beta)));
  }
  template <class T> T backward(T g, T x, T) const {
    const T z = static_cast<T>(alpha) * x + static_cast<T>(beta);
    return z > T(0) && z < T(1) ? g * static_cast<T>(alpha) : T(0);
  }
};

// x · HardSigmoid(x) with α = 1/6, β = 1/2 (MobileNetV3's h-swish). The gradient is PyTorch's: 0 below −3,
// 1 above 3, x/3 + 1/2 between (PyTorch takes the upper branch at exactly 3, as here).
struct HardSwish {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const {
    return x * std::max(T(0), std::min(T(1), x * static_cast<T>(1.0 / 6.0) + T(0.5)));
  }
  template <class T> T backward(T g, T x, T) const {
    if (x < T(-3)) return T(0);
    if (x >= T(3)) return g;
    return g * (x / T(3) + T(0.5));
  }
};

// x for x > 0, α(eˣ − 1) otherwise (expm1, as PyTorch computes it).
struct Elu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha;
  explicit Elu(const Node& n) : alpha(n.attr_float("alpha", 1.0)) {}
  template <class T> T forward(T x) const { return x > T(0) ? x : static_cast<T>(alpha) * std::expm1(x); }
  template <class T> T backward(T g, T x, T y) const { return x > T(0) ? g : g * (y + static_cast<T>(alpha)); }
};

// γ·Elu_α(x) with SELU's constants as ONNX's defaults.
struct Selu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha, gamma;
  explicit Selu(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625)), gamma(n.attr_float("gamma", 1.05070102214813232421875)) {}
  template <class T> T forward(T x) const {
    return static_cast<T>(gamma) * (x > T(0) ? x : static_cast<T>(alpha) * std::expm1(x));
  }
  template <class T> T backward(T g, T x, T) const {
    return x > T(0) ? g * static_cast<T>(gamma) : g * static_cast<T>(gamma * alpha) * std::exp(x);
  }
};

// max(0, x) + min(0, α(e^(x/α) − 1)).
struct Celu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha;
  explicit Celu(const Node& n) : alpha(n.attr_float("alpha", 1.0)) {}
  template <class T> T forward(T x) const {
    const T a = static_cast<T>(alpha);
    return x > T(0) ? x : a * std::expm1(x / a);
  }
  template <class T> T backward(T g, T x, T) const { return x > T(0) ? g : g * std::exp(x / static_cast<T>(alpha)); }
};

// x where x > α, else 0.
struct ThresholdedRelu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  double alpha;
  explicit ThresholdedRelu(const Node& n) : alpha(n.attr_float("alpha", 1.0)) {}
  template <class T> T forward(T x) const { return x > static_cast<T>(alpha) ? x : T(0); }
  template <class T> T backward(T g, T x, T) const { return x > static_cast<T>(alpha) ? g : T(0); }
};

// x·tanh(softplus(x)), softplus as Softplus computes it.
struct Mish {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return x * std::tanh(Softplus{}.forward(x)); }
  template <class T> T backward(T g, T x, T) const {
    const T t = std::tanh(Softplus{}.forward(x));
    const T sigmoid = T(1) / (T(1) + std::exp(-x));
    return g * (t + x * (T(1) - t * t) * sigmoid);
  }
};

// Gelu (opset 20): x·Φ(x), Φ the normal CDF through erf, or with approximate = "tanh" PyTorch's
// 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))). Both give NaN at −inf (−inf·0), as PyTorch does; finite input
// cannot give NaN (x³ overflowing to ±inf only saturates the tanh).
struct Gelu {
  static constexpr TypeSet kTypes = TypeSet::Float;
  static constexpr double kSqrtHalf = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
  static constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;
  bool tanh_form;
  explicit Gelu(bool tanh) : tanh_form(tanh) {}
  explicit Gelu(const Node& n) : Gelu(n.attr_string("approximate", "none") == "tanh") {}
  template <class T> T forward(T x) const {
    if (tanh_form) return T(0.5) * x * (T(1) + std::tanh(T(kBeta) * (x + T(kKappa) * x * x * x)));
    return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
  }
  template <class T> T backward(T g, T x, T) const {
    if (tanh_form) {
      const T t = std::tanh(T(kBeta) * (x + T(kKappa) * x * x * x));
      const T dinner = T(kBeta) * (T(1) + T(3 * kKappa) * x * x);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner);
    }
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
    return g * (cdf + x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x));
  }
};

struct Softsign {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return x / (T(1) + std::fabs(x)); }
  template <class T>
  T backward(T g, T x, T) const {
    const T d = T(1) + std::fabs(x);
    return g / (d * d);
  }
};

struct Erf {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::erf(x); }
  template <class T>
  T backward(T g, T x, T) const {
    const T two_over_sqrt_pi = static_cast<T>(1.1283791670955126);
    return two_over_sqrt_pi * std::exp(-(x * x)) * g;
  }
};

// Piecewise-constant ops: zero gradient everywhere, as PyTorch defines it.
struct Floor {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::floor(x); }
  template <class T> T backward(T, T, T) const { return T(0); }
};

struct Ceil {
  static constexpr TypeSet kTypes = TypeSet::Float;
  template <class T> T forward(T x) const { return std::ceil(x); }
  template <class T> T backward(T, T, T) const { return T(0); }
};

struct Round {
  static constexpr TypeSet kTypes = TypeSet::Float;
  // nearbyint in the default rounding mode rounds halves to even, as ONNX specifies.
  template <class T> T forward(T x) const { return std::nearbyint(x); }
  template <class T> T backward(T, T, T) const { return T(0); }
};

template <class Op>
Status unary_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  const Op op = make_op<Op>(ctx.node);
  const bool supported = dispatch_set<Op::kTypes>(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    y->resize(x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y->data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = op.forward(in[i]);
  });
  return supported ? Status::ok() : Status(unsupported_dtype(ctx.node, x.dtype()));
}

template <class Op>
Status unary_backward(BackwardContext& ctx) {
  Tensor* gx = ctx.grad_input(0);
  if (gx == nullptr) return Status::ok();
  const Tensor& x = *ctx.input(0);
  const Tensor* gy = ctx.grad_output(0);
  const Tensor& y = *ctx.output(0);
  const Op op = make_op<Op>(ctx.node);
  const bool supported = dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    gx->resize(x.dtype(), x.shape());
    const T* g = gy->data<T>();
    const T* in = x.data<T>();
    const T* out = y.data<T>();
    T* d = gx->data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = op.backward(g[i], in[i], out[i]);
  });
  return supported ? Status::ok() : Status(non_float_gradient(ctx.node, x.dtype()));
}

// ---------------------------------------------------------------------------------------------------
// Broadcasting binary arithmetic: functors with forward(a, b) and the partials grad_a / grad_b, each
// evaluated per output element (g, a, b, y) before reduction to the operand's shape.

struct Add {
  template <class T> static T forward(T a, T b) { return wrapping_add(a, b); }
  template <class T> static T grad_a(T g, T, T, T) { return g; }
  template <class T> static T grad_b(T g, T, T, T) { return g; }
};

// x for x ≥ 0, slope·x below (the slope broadcasts: one per channel in PyTorch's export).
struct PRelu {
  template <class T> static T forward(T x, T slope) { return x < T(0) ? wrapping_mul(slope, x) : x; }
  template <class T> static T grad_a(T g, T x, T slope, T) { return x < T(0) ? g * slope : g; }
  template <class T> static T grad_b(T g, T x, T, T) { return x < T(0) ? g * x : T(0); }
};

struct Sub {
  template <class T> static T forward(T a, T b) { return wrapping_sub(a, b); }
  template <class T> static T grad_a(T g, T, T, T) { return g; }
  template <class T> static T grad_b(T g, T, T, T) { return -g; }
};

struct Mul {
  template <class T> static T forward(T a, T b) { return wrapping_mul(a, b); }
  template <class T> static T grad_a(T g, T, T b, T) { return g * b; }
  template <class T> static T grad_b(T g, T a, T, T) { return g * a; }
};

struct Div {
  // Marks the op whose integer form needs non-zero divisors (checked by binary_forward).
  static constexpr bool kIntegerDivision = true;
  template <class T>
  static T forward(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {
      return truncating_div(a, b);
    }
  }
  template <class T> static T grad_a(T g, T, T b, T) { return g / b; }
  // PyTorch divides twice rather than squaring b, which would overflow sooner.
  template <class T> static T grad_b(T g, T a, T b, T) { return -g * ((a / b) / b); }
};

template <class T>
bool has_zero(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] == T(0)) return true;
  return false;
}

template <class Op>
Status binary_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype()) return mismatched_dtypes(ctx.node, a.dtype(), b.dtype());
  auto shape = broadcast_two(ctx.node, a.shape(), b.shape());
  if (!shape) return shape.error();
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  Status status;
  const bool supported = dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && requires { Op::kIntegerDivision; }) {
      // Integer division by zero has no value (and traps on x86): report it instead.
      if (has_zero<T>(b)) {
        status = node_error(ctx.node, "integer division by zero");
        return;
      }
    }
    y->resize(a.dtype(), *shape);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y->data<T>();
    for_each_pair(a.shape(), b.shape(), *shape,
                  [&](int64_t o, int64_t i, int64_t j) { py[o] = Op::forward(pa[i], pb[j]); });
  });
  if (!supported) return unsupported_dtype(ctx.node, a.dtype());
  return status;
}

// Writes the gradient of operand `k` of a broadcasting binary op from partial(g, a, b, y).
template <class T, class Partial>
void binary_operand_grad(BackwardContext& ctx, size_t k, Partial partial) {
  Tensor* grad = ctx.grad_input(k);
  if (grad == nullptr) return;
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor& y = *ctx.output(0);
  const Shape& target = (k == 0 ? a : b).shape();
  const Tensor* gy = ctx.grad_output(0);
  write_operand_grad(*grad, y.dtype(), target, y.shape(), ctx.state.slot(0), [&](Tensor& dst) {
    const T* g = gy->data<T>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* py = y.data<T>();
    T* d = dst.data<T>();
    for_each_pair(a.shape(), b.shape(), y.shape(),
                  [&](int64_t o, int64_t i, int64_t j) { d[o] = partial(g[o], pa[i], pb[j], py[o]); });
  });
}

template <class Op>
Status binary_backward(BackwardContext& ctx) {
  const DType dtype = ctx.input(0)->dtype();
  const bool supported = dispatch_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    binary_operand_grad<T>(ctx, 0, [](T g, T a, T b, T y) { return Op::grad_a(g, a, b, y); });
    binary_operand_grad<T>(ctx, 1, [](T g, T a, T b, T y) { return Op::grad_b(g, a, b, y); });
  });
  return supported ? Status::ok() : Status(non_float_gradient(ctx.node, dtype));
}

// ---------------------------------------------------------------------------------------------------
// Pow: the base's type is the output's; the exponent may be any numeric type. Float bases compute in
// their own type (the exponent converted to it, as PyTorch's type promotion does); integer bases use
// exact integer powers, or double precision when the exponent is float (numpy's promotion), cast back.

// PyTorch's pow kernel replaces the common constant exponents by cheaper, exactly rounded forms.
template <class T>
void pow_by_scalar(const T* base, T e, T* out, int64_t n) {
  if (e == T(2)) return map_values(base, out, n, [](T x) { return x * x; });
  if (e == T(3)) return map_values(base, out, n, [](T x) { return x * x * x; });
  if (e == T(0.5)) return map_values(base, out, n, [](T x) { return std::sqrt(x); });
  if (e == T(-0.5)) return map_values(base, out, n, [](T x) { return T(1) / std::sqrt(x); });
  if (e == T(-1)) return map_values(base, out, n, [](T x) { return T(1) / x; });
  if (e == T(-2)) return map_values(base, out, n, [](T x) { return T(1) / (x * x); });
  map_values(base, out, n, [e](T x) { return std::pow(x, e); });
}

// Square-and-multiply with wrap-around. Negative exponents truncate 1/b^n toward zero like PyTorch's
// integer pow: ±1 keep a value, every other base (0 included) gives 0.
template <class T>
T integer_power(T base, int64_t exp) {
  if (exp < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
    }
    return T(0);
  }
  T result = T(1);
  while (exp > 0) {
    if (exp & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exp >>= 1;
  }
  return result;
}

// `t` itself when it already has dtype `to`, else its conversion into `scratch`.
const Tensor& as_dtype(const Tensor& t, DType to, Tensor& scratch) {
  if (t.dtype() == to) return t;
  cast_tensor(t, to, scratch);
  return scratch;
}

template <class T>
void float_pow(const Tensor& base, const Tensor& exponent, Tensor& y) {
  const T* pb = base.data<T>();
  const T* pe = exponent.data<T>();
  T* py = y.data<T>();
  if (exponent.numel() == 1 && base.numel() == y.numel()) {
    pow_by_scalar(pb, pe[0], py, y.numel());
    return;
  }
  for_each_pair(base.shape(), exponent.shape(), y.shape(),
                [&](int64_t o, int64_t i, int64_t j) { py[o] = std::pow(pb[i], pe[j]); });
}

template <class T>
void integer_pow(const Tensor& base, const Tensor& exponent, Tensor& y, Tensor& scratch) {
  const T* pb = base.data<T>();
  T* py = y.data<T>();
  if (is_float(exponent.dtype())) {
    const Tensor& e = as_dtype(exponent, DType::Float64, scratch);
    const double* pe = e.data<double>();
    for_each_pair(base.shape(), e.shape(), y.shape(), [&](int64_t o, int64_t i, int64_t j) {
      py[o] = saturating_cast<T>(std::pow(static_cast<double>(pb[i]), pe[j]));
    });
    return;
  }
  const Tensor& e = as_dtype(exponent, DType::Int64, scratch);
  const int64_t* pe = e.data<int64_t>();
  for_each_pair(base.shape(), e.shape(), y.shape(),
                [&](int64_t o, int64_t i, int64_t j) { py[o] = integer_power(pb[i], pe[j]); });
}

Status pow_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& base = *ctx.input(0);
  const Tensor& exponent = *ctx.input(1);
  if (!is_float(exponent.dtype()) && !is_integer(exponent.dtype()))
    return unsupported_dtype(ctx.node, exponent.dtype());
  auto shape = broadcast_two(ctx.node, base.shape(), exponent.shape());
  if (!shape) return shape.error();
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  Tensor& scratch = ctx.state.slot(0);
  if (is_float(base.dtype())) {
    const Tensor& e = as_dtype(exponent, base.dtype(), scratch);
    y->resize(base.dtype(), *shape);
    dispatch_float(base.dtype(), [&](auto tag) { float_pow<decltype(tag)>(base, e, *y); });
    return Status::ok();
  }
  if (base.dtype() != DType::Int32 && base.dtype() != DType::Int64) return unsupported_dtype(ctx.node, base.dtype());
  y->resize(base.dtype(), *shape);
  if (base.dtype() == DType::Int32) {
    integer_pow<int32_t>(base, exponent, *y, scratch);
  } else {
    integer_pow<int64_t>(base, exponent, *y, scratch);
  }
  return Status::ok();
}

// PyTorch's pow_backward_self: b^e differentiates to e·b^(e−1), defined as 0 where e = 0 (so 0^0 has
// no NaN slope).
template <class T>
T pow_grad_base(T g, T b, T e) {
  return e == T(0) ? T(0) : g * (e * std::pow(b, e - T(1)));
}

// PyTorch's pow_backward_exponent: b^e·ln b, defined as 0 where b = 0 and e >= 0 (instead of 0·(−inf)).
template <class T>
T pow_grad_exponent(T g, T b, T e, T y) {
  return (b == T(0) && e >= T(0)) ? T(0) : g * (y * std::log(b));
}

Status pow_backward(BackwardContext& ctx) {
  const Tensor& base = *ctx.input(0);
  const Tensor& exponent = *ctx.input(1);
  const Tensor& y = *ctx.output(0);
  if (!is_float(base.dtype())) return non_float_gradient(ctx.node, base.dtype());
  // Gradients are computed in the base's type; a float exponent of the other width gets its gradient
  // converted at the end.
  const Tensor& e = as_dtype(exponent, base.dtype(), ctx.state.slot(1));
  Tensor* grad_exponent = ctx.grad_input(1);
  const bool exponent_needs_cast = grad_exponent != nullptr && exponent.dtype() != base.dtype();
  Tensor& exponent_grad_in_base_type = ctx.state.slot(2);
  const Tensor* gy = ctx.grad_output(0);
  dispatch_float(base.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = gy ? gy->data<T>() : nullptr;
    const T* pb = base.data<T>();
    const T* pe = e.data<T>();
    const T* py = y.data<T>();
    auto fill = [&](Tensor& grad, const Shape& target, auto partial) {
      if (g == nullptr) {
        grad.resize_zero(base.dtype(), target);
        return;
      }
      write_operand_grad(grad, base.dtype(), target, y.shape(), ctx.state.slot(0), [&](Tensor& dst) {
        T* d = dst.data<T>();
        for_each_pair(base.shape(), e.shape(), y.shape(),
                      [&](int64_t o, int64_t i, int64_t j) { d[o] = partial(g[o], pb[i], pe[j], py[o]); });
      });
    };
    if (Tensor* grad_base = ctx.grad_input(0))
      fill(*grad_base, base.shape(), [](T gv, T b, T ev, T) { return pow_grad_base(gv, b, ev); });
    if (grad_exponent != nullptr)
      fill(exponent_needs_cast ? exponent_grad_in_base_type : *grad_exponent, exponent.shape(),
           [](T gv, T b, T ev, T yv) { return pow_grad_exponent(gv, b, ev, yv); });
  });
  if (exponent_needs_cast) cast_tensor(exponent_grad_in_base_type, exponent.dtype(), *grad_exponent);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Variadic folds (Sum, Mean, Max, Min): the output starts as input 0 broadcast to the common shape and
// folds every further input in, left to right, as numpy's reference does.

struct SumFold {
  static constexpr TypeSet kTypes = TypeSet::Float;
  static constexpr bool kMean = false;
  template <class T> static T combine(T acc, T x) { return acc + x; }
};

struct MeanFold : SumFold {
  static constexpr bool kMean = true;  // the sum, divided by the input count at the end
};

// Max and Min propagate NaN (numpy's maximum/minimum, PyTorch's maximum/minimum).
struct MaxFold {
  static constexpr TypeSet kTypes = TypeSet::Numeric;
  static constexpr bool kMean = false;
  template <class T> static T combine(T acc, T x) { return (x > acc || x != x) ? x : acc; }
};

struct MinFold {
  static constexpr TypeSet kTypes = TypeSet::Numeric;
  static constexpr bool kMean = false;
  template <class T> static T combine(T acc, T x) { return (x < acc || x != x) ? x : acc; }
};

// Checks the variadic inputs (present, one dtype) and returns their broadcast shape.
Result<Shape> variadic_shape(const ForwardContext& ctx) {
  if (ctx.inputs.empty()) return node_error(ctx.node, "needs at least one input");
  Shape out;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    GRIST_TRY(require_input(ctx, k));
    const Tensor& x = *ctx.input(k);
    if (x.dtype() != ctx.input(0)->dtype()) return mismatched_dtypes(ctx.node, ctx.input(0)->dtype(), x.dtype());
    if (!broadcast_shapes(out, x.shape(), out))
      return node_error(ctx.node, fmt::format("cannot broadcast input {} of shape {} to {}", k, x.shape().str(),
                                              out.str()));
  }
  return out;
}

template <class Fold>
Status variadic_forward(ForwardContext& ctx) {
  auto shape = variadic_shape(ctx);
  if (!shape) return shape.error();
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  const DType dtype = ctx.input(0)->dtype();
  const bool supported = dispatch_set<Fold::kTypes>(dtype, [&](auto tag) {
    using T = decltype(tag);
    y->resize(dtype, *shape);
    T* py = y->data<T>();
    const T* first = ctx.input(0)->template data<T>();
    for_each_broadcast(ctx.input(0)->shape(), *shape, [&](int64_t o, int64_t i) { py[o] = first[i]; });
    for (size_t k = 1; k < ctx.inputs.size(); ++k) {
      const Tensor& x = *ctx.input(k);
      const T* px = x.data<T>();
      for_each_pair(*shape, x.shape(), *shape,
                    [&](int64_t o, int64_t i, int64_t j) { py[o] = Fold::combine(py[i], px[j]); });
    }
    if constexpr (Fold::kMean) {
      const T count = static_cast<T>(ctx.inputs.size());
      for (int64_t o = 0; o < y->numel(); ++o) py[o] = py[o] / count;
    }
  });
  return supported ? Status::ok() : Status(unsupported_dtype(ctx.node, dtype));
}

// Sum and Mean: every input gets the output gradient (divided by the input count for Mean), reduced to
// its shape.
template <class Fold>
Status sum_mean_backward(BackwardContext& ctx) {
  const Tensor& y = *ctx.output(0);
  const Tensor* gy = ctx.grad_output(0);
  const bool supported = dispatch_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T count = static_cast<T>(ctx.inputs.size());
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      Tensor* grad = ctx.grad_input(k);
      if (grad == nullptr) continue;
      const Shape& target = ctx.input(k)->shape();
      if constexpr (Fold::kMean) {
        write_operand_grad(*grad, y.dtype(), target, y.shape(), ctx.state.slot(0), [&](Tensor& dst) {
          const T* g = gy->data<T>();
          T* d = dst.data<T>();
          for (int64_t o = 0; o < y.numel(); ++o) d[o] = g[o] / count;
        });
      } else {
        sum_to_shape(*gy, target, *grad);
      }
    }
  });
  return supported ? Status::ok() : Status(non_float_gradient(ctx.node, y.dtype()));
}

// An input "was selected" at an output element when it holds the output's value (NaN counting as equal
// to NaN, since a NaN output came from the NaN inputs).
template <class T>
bool selected(T x, T y) {
  return x == y || (x != x && y != y);
}

// Max and Min: the gradient goes to the input that was selected; ties share it evenly, as PyTorch's
// binary maximum/minimum do.
Status select_backward(BackwardContext& ctx) {
  const Tensor& y = *ctx.output(0);
  const Tensor* gy = ctx.grad_output(0);
  const bool supported = dispatch_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* py = y.data<T>();
    Tensor& ties = ctx.state.slot(1);
    if (gy != nullptr) {
      ties.resize_zero(y.dtype(), y.shape());
      T* count = ties.data<T>();
      for (size_t k = 0; k < ctx.inputs.size(); ++k) {
        const T* px = ctx.input(k)->template data<T>();
        for_each_broadcast(ctx.input(k)->shape(), y.shape(), [&](int64_t o, int64_t i) {
          if (selected(px[i], py[o])) count[o] += T(1);
        });
      }
    }
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      Tensor* grad = ctx.grad_input(k);
      if (grad == nullptr) continue;
      const Shape& target = ctx.input(k)->shape();
      write_operand_grad(*grad, y.dtype(), target, y.shape(), ctx.state.slot(0), [&](Tensor& dst) {
        const T* g = gy->data<T>();
        const T* px = ctx.input(k)->template data<T>();
        const T* count = ties.data<T>();
        T* d = dst.data<T>();
        for_each_broadcast(target, y.shape(), [&](int64_t o, int64_t i) {
          d[o] = selected(px[i], py[o]) ? g[o] / count[o] : T(0);
        });
      });
    }
  });
  return supported ? Status::ok() : Status(non_float_gradient(ctx.node, y.dtype()));
}

// ---------------------------------------------------------------------------------------------------
// Clip: its limits are attributes before opset 11 and optional scalar inputs from 11 on; both forms are
// accepted. A missing float limit is ±inf (the ONNX reference uses np.inf), so Clip never turns an
// infinity into a finite number that PyTorch's clamp would have kept.

template <class T>
Result<T> clip_limit(const Node& node, std::span<const Tensor* const> inputs, std::string_view attribute,
                     size_t index, T fallback) {
  if (const Attribute* a = node.attr(attribute)) return static_cast<T>(a->f);
  const Tensor* t = index < inputs.size() ? inputs[index] : nullptr;
  if (t == nullptr) return fallback;
  if (t->dtype() != inputs[0]->dtype())
    return node_error(node, fmt::format("bound input {} is {}, the input is {}", index, dtype_name(t->dtype()),
                                        dtype_name(inputs[0]->dtype())));
  if (t->numel() != 1)
    return node_error(node, fmt::format("bound input {} must be a scalar, got shape {}", index, t->shape().str()));
  return t->data<T>()[0];
}

template <class T>
struct ClipLimits {
  T lo, hi;
};

template <class T>
Result<ClipLimits<T>> clip_limits(const Node& node, std::span<const Tensor* const> inputs) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  const T lowest = kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  const T highest = kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  auto lo = clip_limit<T>(node, inputs, "min", 1, lowest);
  if (!lo) return lo.error();
  auto hi = clip_limit<T>(node, inputs, "max", 2, highest);
  if (!hi) return hi.error();
  return ClipLimits<T>{*lo, *hi};
}

Status clip_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  Tensor* y = ctx.output(0);
  Status status;
  const bool supported = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto limits = clip_limits<T>(ctx.node, ctx.inputs);
    if (!limits) {
      status = limits.error();
      return;
    }
    if (y == nullptr) return;
    const T lo = limits->lo, hi = limits->hi;
    y->resize(x.dtype(), x.shape());
    // min(max(x, lo), hi) written so a NaN x stays NaN; lo > hi gives hi everywhere, like numpy and PyTorch.
    map_values(x.data<T>(), y->data<T>(), x.numel(), [lo, hi](T v) {
      const T raised = v < lo ? lo : v;
      return raised > hi ? hi : raised;
    });
  });
  if (!supported) return unsupported_dtype(ctx.node, x.dtype());
  return status;
}

// PyTorch's clamp_backward: the gradient passes where lo <= x <= hi (bounds included), 0 elsewhere.
Status clip_backward(BackwardContext& ctx) {
  Tensor* gx = ctx.grad_input(0);
  if (gx == nullptr) return Status::ok();
  const Tensor& x = *ctx.input(0);
  const Tensor* gy = ctx.grad_output(0);
  Status status;
  const bool supported = dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto limits = clip_limits<T>(ctx.node, ctx.inputs);
    if (!limits) {
      status = limits.error();
      return;
    }
    const T lo = limits->lo, hi = limits->hi;
    gx->resize(x.dtype(), x.shape());
    const T* g = gy->data<T>();
    const T* px = x.data<T>();
    T* d = gx->data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) d[i] = (px[i] >= lo && px[i] <= hi) ? g[i] : T(0);
  });
  if (!supported) return non_float_gradient(ctx.node, x.dtype());
  return status;
}

// ---------------------------------------------------------------------------------------------------
// Identity copies any dtype.

Status identity_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  if (Tensor* y = ctx.output(0)) y->copy_from(*ctx.input(0));
  return Status::ok();
}

Status identity_backward(BackwardContext& ctx) {
  Tensor* gx = ctx.grad_input(0);
  if (gx == nullptr) return Status::ok();
  gx->copy_from(*ctx.grad_output(0));
  return Status::ok();
}

}  // namespace

// ops/fused_tail.h: clip_forward's clamp over one row, in place, and whether every value was finite before it, in
// one pass. The test is engine/nonfinite.cpp's (the largest sign-cleared bit pattern against +Inf's): an integer
// max vectorises with the clamp, where a bool accumulated from std::isfinite does not.
bool clamp_row(float* row, int64_t n, Clamp clamp) {
  const float lo = clamp.lo, hi = clamp.hi;
  uint32_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = row[i];
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    worst = std::max(worst, bits & 0x7fffffffu);
    const float raised = v < lo ? lo : v;
    row[i] = raised > hi ? hi : raised;
  }
  return worst < 0x7f800000u;  // +Inf's pattern
}

// ops/fused_tail.h: binary_forward<Add> writes float32 for float32 operands.
bool clampable_after(const Node& node, std::span<const Tensor* const> inputs) {
  return node.domain.empty() && node.op_type == "Add" && inputs.size() == 2 && inputs[0] && inputs[1] &&
         inputs[0]->dtype() == DType::Float32 && inputs[1]->dtype() == DType::Float32;
}

// ops/fused_tail.h: the clamp clip_forward (or Relu) would apply, for a BatchNormalization to apply row by row.
std::optional<Clamp> clamp_of(const Node& node, const Tensor& x, std::span<const Tensor* const> inputs) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (!node.domain.empty() || x.dtype() != DType::Float32) return std::nullopt;
  if (node.op_type == "Relu") return Clamp{0.0f, kInf};
  if (node.op_type != "Clip" || inputs.size() > 3) return std::nullopt;
  std::array<const Tensor*, 3> in{&x, nullptr, nullptr};
  for (size_t i = 1; i < inputs.size(); ++i) in[i] = inputs[i];
  auto limits = clip_limits<float>(node, std::span<const Tensor* const>(in.data(), std::max<size_t>(inputs.size(), 1)));
  if (!limits) return std::nullopt;
  const float lo = limits->lo, hi = limits->hi;
  if (std::isnan(lo) || std::isnan(hi) || lo == kInf || hi == -kInf) return std::nullopt;
  return Clamp{lo, hi};
}


namespace {

// How these ops fail (GRIST.md §2): the condition on an operand and the objective that drives it there.
constexpr HazardSpec kLogHazards[] = {
    {0, Failure::LogOfNonPositive, Objective::MinAbs, "input <= 0",
     "keep the input away from zero: log(clamp(v, min=eps)), or use a fused stable form (log_softmax, logsigmoid)"}};
constexpr HazardSpec kDivHazards[] = {
    {1, Failure::DivisionByZero, Objective::MinAbs, "divisor = 0",
     "guard the divisor: a / clamp(v, min=eps) for a positive v, or a / (v + eps·sign(v))"}};
constexpr HazardSpec kReciprocalHazards[] = {
    {0, Failure::DivisionByZero, Objective::MinAbs, "input = 0", "guard the input: 1 / clamp(v, min=eps)"}};
constexpr HazardSpec kSqrtHazards[] = {
    {0, Failure::SqrtOfNegative, Objective::Min, "input < 0",
     "clamp at zero before the root, sqrt(clamp(v, min=0)), or sqrt(v + eps) where the gradient at 0 matters"}};
constexpr HazardSpec kExpHazards[] = {
    {0, Failure::ExpOverflow, Objective::NegMax, "input > 88.72",
     "subtract the maximum before exp (as a stable softmax does) or clamp the input, exp(clamp(v, max=80))"}};

// Pow fails only for some exponents: a constant exponent that is positive and whole is safe.
std::optional<double> constant_exponent(const Graph& g, const Node& n) {
  if (!n.has_input(1)) return std::nullopt;
  const Value& e = g.value(n.inputs[1]);
  const Tensor* t = e.initial.get();
  if (!t && e.producer >= 0) {
    const Node& p = g.nodes[static_cast<size_t>(e.producer)];
    if (p.op_type == "Constant" && p.attr("value") && p.attr("value")->t) t = p.attr("value")->t.get();
  }
  if (!t || t->numel() != 1) return std::nullopt;
  return t->get_as_double(0);
}
bool pow_exponent_may_be_negative(const Graph& g, const Node& n) {
  auto e = constant_exponent(g, n);
  return !e || *e < 0;
}
bool pow_exponent_may_be_fractional(const Graph& g, const Node& n) {
  auto e = constant_exponent(g, n);
  return !e || *e != std::floor(*e);
}
bool pow_exponent_may_exceed_one(const Graph& g, const Node& n) {
  auto e = constant_exponent(g, n);
  return !e || *e > 1;
}
constexpr HazardSpec kPowHazards[] = {
    {0, Failure::PowZeroToNegative, Objective::MinAbs, "base = 0 with a negative exponent",
     "keep the base away from zero: pow(clamp(v, min=eps), e)", pow_exponent_may_be_negative},
    {0, Failure::PowNegativeToFraction, Objective::Min, "base < 0 with a fractional exponent",
     "clamp the base at zero: pow(clamp(v, min=0), e)", pow_exponent_may_be_fractional},
    {0, Failure::PowOverflow, Objective::NegMax, "|base|^exponent > FLT_MAX",
     "bound the base before raising it, pow(clamp(v, -c, c), e), or work in logs: e·log(v)",
     pow_exponent_may_exceed_one}};

}  // namespace

namespace {
// Interval transfers (grist scan, ops/bounds.h). Exp, Log, Sigmoid, ... are monotone: their kernel at the
// bounds, rounded outward, is their transfer.
Status neg_bounds(BoundsContext& c) { return bounds_antitone(c, true); }
Interval abs_interval(Interval a, bool&) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return {-a.hi, -a.lo};
  return {0, std::max(-a.lo, a.hi)};
}
Status abs_bounds(BoundsContext& c) { return bounds_unary(c, abs_interval); }
Interval sqrt_interval(Interval a, bool& nan) {
  if (a.lo < 0) nan = true;
  if (a.hi < 0) return {};
  Interval r = widen_f32({std::sqrt(std::max(a.lo, 0.0)), std::sqrt(a.hi)});
  return {std::max(r.lo, 0.0), r.hi};
}
Status sqrt_bounds(BoundsContext& c) { return bounds_unary(c, sqrt_interval); }
Interval reciprocal_interval(Interval a, bool& nan) { return interval_div({1, 1}, a, nan); }
Status reciprocal_bounds(BoundsContext& c) { return bounds_unary(c, reciprocal_interval); }
Status add_bounds(BoundsContext& c) { return bounds_binary(c, interval_add); }
Status sub_bounds(BoundsContext& c) { return bounds_binary(c, interval_sub); }
Status mul_bounds(BoundsContext& c) { return bounds_binary(c, interval_mul); }
Status div_bounds(BoundsContext& c) { return bounds_binary(c, interval_div); }
// Clip is non-decreasing in x, min and max alike.
Status clip_bounds(BoundsContext& c) { return bounds_monotone(c, true, kAllInputs); }

// base^e: a whole constant exponent by the parity of e; otherwise a positive base makes pow monotone in
// each argument, so the four corners bound it.
Interval pow_interval(Interval b, Interval e, bool& nan) {
  auto corners = [&](Interval x, Interval y) {
    const double v[4] = {std::pow(x.lo, y.lo), std::pow(x.lo, y.hi), std::pow(x.hi, y.lo), std::pow(x.hi, y.hi)};
    Interval r{kInf, -kInf};
    for (double t : v) {
      if (std::isnan(t)) {
        nan = true;
        return Interval{};
      }
      r = {std::min(r.lo, t), std::max(r.hi, t)};
    }
    return widen_f32(r);
  };
  if (e.lo == e.hi && e.lo == std::floor(e.lo) && std::isfinite(e.lo)) {
    const double n = e.lo;
    if (n == 0) return {1, 1};
    if (n < 0 && b.contains(0)) return {};  // ±inf at 0, not NaN
    if (std::fmod(n, 2) == 0 && b.lo < 0 && b.hi > 0) {
      Interval r = widen_f32({0, std::pow(std::max(-b.lo, b.hi), n)});
      return {std::max(r.lo, 0.0), r.hi};
    }
    return corners(b, e);
  }
  if (b.lo > 0 || (b.lo == 0 && e.lo > 0)) return corners(b, e);
  if (b.lo < 0) nan = true;
  return {};
}
// An integer base gives an integer power: the float64 one truncated toward zero (the kernel's saturating
// cast), a non-decreasing map, so the bounds truncate too (found by the registry-wide interval check).
Status pow_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_binary(c, pow_interval));
  if (c.outputs.empty() || !is_integer(c.outputs[0].dtype)) return Status::ok();
  for (auto& v : c.outputs[0].lo) v = std::trunc(v);
  for (auto& v : c.outputs[0].hi) v = std::trunc(v);
  return Status::ok();
}
// Monotone functions whose float32 results stay in their mathematical range.
Status exp_bounds(BoundsContext& c) { return bounds_monotone_within(c, {0, kInf}); }
Status sigmoid_bounds(BoundsContext& c) { return bounds_monotone_within(c, {0, 1}); }
Status tanh_bounds(BoundsContext& c) { return bounds_monotone_within(c, {-1, 1}); }
Status softplus_bounds(BoundsContext& c) { return bounds_monotone_within(c, {0, kInf}); }
Status unit_bounds(BoundsContext& c) { return bounds_monotone_within(c, {-1, 1}); }  // erf, softsign
// max(x, 0) + alpha·min(x, 0) is non-decreasing for alpha ≥ 0.
Status leaky_relu_bounds(BoundsContext& c) {
  if (c.node.attr_float("alpha", 0.01) < 0) return bounds_unbounded(c);
  return bounds_monotone_rounded(c);
}
// Clamped to [0, 1] whatever α's sign (monotone either way).
Status hard_sigmoid_bounds(BoundsContext& c) {
  if (c.node.attr_float("alpha", 0.2) >= 0) return bounds_monotone_within(c, {0, 1});
  GRIST_TRY(bounds_antitone(c, false));
  for (IntervalTensor& out : c.outputs) {
    for (auto& v : out.lo) v = std::clamp(v, 0.0, 1.0);
    for (auto& v : out.hi) v = std::clamp(v, 0.0, 1.0);
  }
  return Status::ok();
}
// x·clamp(x/6 + 1/2): 0 up to −3, x from 3, x(x + 3)/6 between, with its minimum −3/8 at −3/2. Exact
// outside (−3, 3); inside, the float32 kernel's three roundings stay below 2⁻²⁰. At −inf the kernel gives
// −inf·0 = NaN, as PyTorch's does.
Interval hard_swish_interval(Interval a, bool& nan) {
  if (a.lo == -kInf) nan = true;
  auto f = [](double x) { return x <= -3 ? 0.0 : x >= 3 ? x : x * (x + 3) / 6; };
  double lo = std::min(f(a.lo), f(a.hi)), hi = std::max(f(a.lo), f(a.hi));
  if (a.lo <= -1.5 && a.hi >= -1.5) lo = -0.375;
  if (a.lo < 3 && a.hi > -3) {
    lo -= 0x1p-20;
    hi += 0x1p-20;
  }
  lo = std::max(lo, a.lo >= 0 ? 0.0 : -0.375 - 0x1p-20);  // x ≥ 0 times a factor ≥ 0 is never negative
  return widen_f32({lo, hi});
}
Status hard_swish_bounds(BoundsContext& c) { return bounds_unary(c, hard_swish_interval); }
// Elu, Selu and Celu are non-decreasing for non-negative α (and γ).
Status elu_bounds(BoundsContext& c) {
  if (c.node.attr_float("alpha", 1.0) < 0) return bounds_unbounded(c);
  return bounds_monotone_rounded(c);
}
Status selu_bounds(BoundsContext& c) {
  if (c.node.attr_float("alpha", 1.67326) < 0 || c.node.attr_float("gamma", 1.0507) < 0) return bounds_unbounded(c);
  return bounds_monotone_rounded(c);
}
Status celu_bounds(BoundsContext& c) {
  if (!(c.node.attr_float("alpha", 1.0) > 0)) return bounds_unbounded(c);
  return bounds_monotone_rounded(c);
}
// Non-decreasing for α ≥ 0; otherwise every output is 0 or its input.
Interval with_zero(Interval a, bool&) { return {std::min(a.lo, 0.0), std::max(a.hi, 0.0)}; }
Status thresholded_relu_bounds(BoundsContext& c) {
  if (c.node.attr_float("alpha", 1.0) >= 0) return bounds_select(c);
  return bounds_unary(c, with_zero);
}
// x·tanh(softplus(x)) falls to its minimum −0.30884341 at x = −1.192431 and rises after; at −inf the kernel
// gives −inf·0 = NaN. Computed in float64, then widened by 8 float32 ulps for the kernel's three libm calls
// and two products, and by FLT_MIN for results flushed to zero.
Interval mish_interval(Interval a, bool& nan) {
  if (a.lo == -kInf) nan = true;
  auto f = [](double x) { return x == -kInf ? 0.0 : x * std::tanh(x > 20 ? x : std::log1p(std::exp(x))); };
  double lo = std::min(f(a.lo), f(a.hi)), hi = std::max(f(a.lo), f(a.hi));
  if (a.lo <= -1.19243 && a.hi >= -1.19244) lo = std::min(lo, -0.3088434131);
  auto widen = [](double v, double dir) { return v + dir * (8 * 0x1p-24 * std::fabs(v) + FLT_MIN); };
  return widen_f32({widen(lo, -1), widen(hi, 1)});
}
Status mish_bounds(BoundsContext& c) { return bounds_unary(c, mish_interval); }
// Gelu falls to its minimum (−0.16997120 at x = −0.75179 through erf, −0.17004075 at −0.75246 through tanh)
// and rises after. Computed in float64 and widened for the float32 kernel: 1 + erf (or 1 + tanh) cancels for
// negative x, an absolute error of a few 2⁻²⁴ that 0.5x scales, so the widening is absolute in |x| up to 8
// (beyond it the float32 factor is exactly 0 or 2), plus relative ulps and FLT_MIN for flushed results.
Interval gelu_interval(Interval a, bool tanh_form, bool& nan) {
  if (a.lo == -kInf) nan = true;
  // The kernel's own formula in float64; at −inf its limit 0 (the kernel's NaN is the flag above).
  const Gelu gelu(tanh_form);
  auto f = [&](double x) { return x == -kInf ? 0.0 : gelu.forward(x); };
  double lo = std::min(f(a.lo), f(a.hi)), hi = std::max(f(a.lo), f(a.hi));
  const double x_min = tanh_form ? -0.75246 : -0.75179, f_min = tanh_form ? -0.1700408 : -0.1699713;
  if (a.lo <= x_min + 1e-4 && a.hi >= x_min - 1e-4) lo = std::min(lo, f_min);
  const double cancel = 16 * 0x1p-24 * std::min(std::max(std::fabs(a.lo), std::fabs(a.hi)), 8.0);
  auto widen = [&](double v, double dir) { return v + dir * (8 * 0x1p-24 * std::fabs(v) + cancel + FLT_MIN); };
  return widen_f32({widen(lo, -1), widen(hi, 1)});
}
// ONNX knows two forms; any other value is refused by name rather than run as the erf form.
Status check_gelu_form(const Node& n) {
  const std::string form = n.attr_string("approximate", "none");
  if (form == "none" || form == "tanh") return Status::ok();
  return node_error(n, fmt::format("unknown approximate '{}' (ONNX's are 'none' and 'tanh')", form));
}
Status gelu_forward(ForwardContext& ctx) {
  GRIST_TRY(check_gelu_form(ctx.node));
  return unary_forward<Gelu>(ctx);
}
Status gelu_bounds(BoundsContext& c) {
  GRIST_TRY(check_gelu_form(c.node));
  const bool tanh_form = c.node.attr_string("approximate", "none") == "tanh";
  if (tanh_form) return bounds_unary(c, [](Interval a, bool& nan) { return gelu_interval(a, true, nan); });
  return bounds_unary(c, [](Interval a, bool& nan) { return gelu_interval(a, false, nan); });
}
// x where x ≥ 0, slope·x below: the union of the two parts the interval meets.
Interval prelu_interval(Interval x, Interval slope, bool& nan) {
  Interval r{kInf, -kInf};
  if (x.hi >= 0) r = {std::max(x.lo, 0.0), x.hi};
  if (x.lo < 0) {
    const Interval scaled = interval_mul({x.lo, std::min(x.hi, 0.0)}, slope, nan);
    r = {std::min(r.lo, scaled.lo), std::max(r.hi, scaled.hi)};
  }
  return r;
}
Status prelu_bounds(BoundsContext& c) { return bounds_binary(c, prelu_interval); }
// The kernel folds left to right, each addition rounded (interval_add rounds each step outward); Mean
// divides the sum by the input count at the end.
Status sum_bounds(BoundsContext& c) { return bounds_fold(c, interval_add); }
Status mean_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_fold(c, interval_add));
  IntervalTensor& y = c.outputs[0];
  const double n = static_cast<double>(c.inputs.size());
  for (size_t i = 0; i < y.lo.size(); ++i) {
    const Interval q = interval_div({y.lo[i], y.hi[i]}, {n, n}, y.may_be_nan);
    y.lo[i] = q.lo;
    y.hi[i] = q.hi;
  }
  return Status::ok();
}

// OpDef::in_place for maps of one operand (unary ops, Clip, whose limits are scalars): each writes y[i] from x[i].
bool first_operand_in_place(std::span<const Tensor* const> in, size_t i) { return i == 0 && in[0] != nullptr; }

// OpDef::in_place for broadcasting binary ops: an operand already of the broadcast's shape and of the others'
// dtype; for_each_pair then reads that operand at the output's own flat index.
bool full_operand_in_place(std::span<const Tensor* const> in, size_t i) {
  const Tensor* donor = in[i];
  if (donor == nullptr) return false;
  for (size_t k = 0; k < in.size(); ++k) {
    if (k == i || in[k] == nullptr) continue;
    Shape joint;
    if (in[k]->dtype() != donor->dtype() || !broadcast_shapes(donor->shape(), in[k]->shape(), joint) ||
        joint != donor->shape())
      return false;
  }
  return true;
}
}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  // Ops whose output 0 may take a dead operand's buffer (OpDef::in_place).
  auto unary = [&](OpDef d) {
    d.in_place = first_operand_in_place;
    r.add(d);
  };
  auto binary = [&](OpDef d) {
    d.in_place = full_operand_in_place;
    r.add(d);
  };
  const uint32_t first = inputs_mask({0});
  unary(OpDef{"Neg", "", unary_forward<Neg>, unary_backward<Neg>, first, {}, neg_bounds, kElementwise});
  unary(OpDef{"Abs", "", unary_forward<Abs>, unary_backward<Abs>, first, {}, abs_bounds, kElementwise});
  unary(OpDef{"Sign", "", unary_forward<Sign>, unary_backward<Sign>, first, {}, bounds_select, kElementwise});
  unary(OpDef{"Relu", "", unary_forward<Relu>, unary_backward<Relu>, first, {}, bounds_select, kElementwise});
  unary(OpDef{"LeakyRelu", "", unary_forward<LeakyRelu>, unary_backward<LeakyRelu>, first, {}, leaky_relu_bounds, kElementwise});
  unary(OpDef{"Sqrt", "", unary_forward<Sqrt>, unary_backward<Sqrt>, first, kSqrtHazards, sqrt_bounds, kElementwise});
  unary(OpDef{"Exp", "", unary_forward<Exp>, unary_backward<Exp>, first, kExpHazards, exp_bounds, kElementwise});
  unary(OpDef{"Log", "", unary_forward<Log>, unary_backward<Log>, first, kLogHazards, bounds_monotone_rounded, kElementwise});
  unary(OpDef{"Reciprocal", "", unary_forward<Reciprocal>, unary_backward<Reciprocal>, first, kReciprocalHazards, reciprocal_bounds, kElementwise});
  unary(OpDef{"Sigmoid", "", unary_forward<Sigmoid>, unary_backward<Sigmoid>, first, {}, sigmoid_bounds, kElementwise});
  unary(OpDef{"Tanh", "", unary_forward<Tanh>, unary_backward<Tanh>, first, {}, tanh_bounds, kElementwise});
  unary(OpDef{"Softplus", "", unary_forward<Softplus>, unary_backward<Softplus>, first, {}, softplus_bounds, kElementwise});
  unary(OpDef{"Softsign", "", unary_forward<Softsign>, unary_backward<Softsign>, first, {}, unit_bounds, kElementwise});
  unary(OpDef{"Erf", "", unary_forward<Erf>, unary_backward<Erf>, first, {}, unit_bounds, kElementwise});
  unary(OpDef{"HardSigmoid", "", unary_forward<HardSigmoid>, unary_backward<HardSigmoid>, first, {}, hard_sigmoid_bounds,
              kElementwise});
  unary(OpDef{"HardSwish", "", unary_forward<HardSwish>, unary_backward<HardSwish>, first, {}, hard_swish_bounds,
              kElementwise});
  unary(OpDef{"Elu", "", unary_forward<Elu>, unary_backward<Elu>, first, {}, elu_bounds, kElementwise});
  unary(OpDef{"Selu", "", unary_forward<Selu>, unary_backward<Selu>, first, {}, selu_bounds, kElementwise});
  unary(OpDef{"Celu", "", unary_forward<Celu>, unary_backward<Celu>, first, {}, celu_bounds, kElementwise});
  unary(OpDef{"ThresholdedRelu", "", unary_forward<ThresholdedRelu>, unary_backward<ThresholdedRelu>, first, {},
              thresholded_relu_bounds, kElementwise});
  unary(OpDef{"Mish", "", unary_forward<Mish>, unary_backward<Mish>, first, {}, mish_bounds, kElementwise});
  unary(OpDef{"Gelu", "", gelu_forward, unary_backward<Gelu>, first, {}, gelu_bounds, kElementwise});
  unary(OpDef{"Floor", "", unary_forward<Floor>, unary_backward<Floor>, first, {}, bounds_select, kElementwise});
  unary(OpDef{"Ceil", "", unary_forward<Ceil>, unary_backward<Ceil>, first, {}, bounds_select, kElementwise});
  unary(OpDef{"Round", "", unary_forward<Round>, unary_backward<Round>, first, {}, bounds_select, kElementwise});

  const uint32_t both = inputs_mask({0, 1});
  binary(OpDef{"Add", "", binary_forward<Add>, binary_backward<Add>, both, {}, add_bounds, kElementwise});
  binary(OpDef{"Sub", "", binary_forward<Sub>, binary_backward<Sub>, both, {}, sub_bounds, kElementwise});
  binary(OpDef{"Mul", "", binary_forward<Mul>, binary_backward<Mul>, both, {}, mul_bounds, kElementwise});
  binary(OpDef{"Div", "", binary_forward<Div>, binary_backward<Div>, both, kDivHazards, div_bounds, kElementwise});
  binary(OpDef{"PRelu", "", binary_forward<PRelu>, binary_backward<PRelu>, both, {}, prelu_bounds, kElementwise});
  r.add(OpDef{"Pow", "", pow_forward, pow_backward, both, kPowHazards, pow_bounds, kElementwise});

  r.add(OpDef{"Sum", "", variadic_forward<SumFold>, sum_mean_backward<SumFold>, kAllInputs, {}, sum_bounds, kElementwise});
  r.add(OpDef{"Mean", "", variadic_forward<MeanFold>, sum_mean_backward<MeanFold>, kAllInputs, {}, mean_bounds, kElementwise});
  r.add(OpDef{"Max", "", variadic_forward<MaxFold>, select_backward, kAllInputs, {}, bounds_select, kElementwise});
  r.add(OpDef{"Min", "", variadic_forward<MinFold>, select_backward, kAllInputs, {}, bounds_select, kElementwise});

  unary(OpDef{"Clip", "", clip_forward, clip_backward, first, {}, clip_bounds, kElementwise});
  r.add(OpDef{"Identity", "", identity_forward, identity_backward, first, {}, bounds_select, kElementwise});
}

}  // namespace grist
