#include "ops/bounds.h"

#include <algorithm>
#include <array>
#include <cfloat>

#include "ops/kernel_util.h"
#include "ops/op.h"

namespace grist {

const IntervalTensor* BoundsContext::input(size_t i) const {
  const IntervalTensor* t = partitioned(i);
  if (!t || !t->blocked()) return t;
  if (unblocked_.empty()) unblocked_.resize(inputs.size());
  if (!unblocked_[i]) unblocked_[i] = std::make_unique<IntervalTensor>(t->without_blocks());
  return unblocked_[i].get();
}

// ---- concrete kernel runs ---------------------------------------------------------------------------

Status run_kernel(const Node& node, const OpDef& def, std::span<const Tensor* const> inputs,
                  std::vector<Tensor>& outputs) {
  GRIST_CHECK(def.forward != nullptr, "{}: no kernel", node.op_type);
  outputs.assign(node.outputs.size(), Tensor());
  std::vector<Tensor*> out_ptrs(node.outputs.size(), nullptr);
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) out_ptrs[i] = &outputs[i];
  NodeState state;
  Rng rng(0);
  ForwardContext fc{node, inputs, out_ptrs, state, rng, false};  // dropout as identity: transfers add the rest
  try {
    return def.forward(fc);
  } catch (const TensorTooLarge& e) {
    return make_error("a {} tensor {} would need {:.3g} bytes, more than this machine's memory", dtype_name(e.dtype),
                      e.shape.str(), e.bytes);
  }
}

namespace {

Tensor bound_tensor(const IntervalTensor& t, bool upper) {
  const DType dt = is_float(t.dtype) || t.dtype == DType::Undefined ? DType::Float64 : t.dtype;
  Tensor out(dt, t.shape);
  const int64_t n = t.numel();
  dispatch_all(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double v = upper ? t.hi_at(i) : t.lo_at(i);
      if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(v);
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = v > 0;
      } else {
        const double lim_lo = static_cast<double>(std::numeric_limits<T>::lowest());
        const double lim_hi = static_cast<double>(std::numeric_limits<T>::max());
        p[i] = static_cast<T>(std::clamp(upper ? std::ceil(v) : std::floor(v), lim_lo, lim_hi));
      }
    }
  });
  return out;
}

// The stored bounds as a tensor shaped like the grid: one element per block, per element, or a single one.
Tensor grid_bound_tensor(const IntervalTensor& t, bool upper) {
  IntervalTensor stored = t;
  stored.shape = t.grid();
  stored.blocks = Shape{};
  return bound_tensor(stored, upper);
}

template <class F>
Tensor map_to_f64(const IntervalTensor& t, F&& f) {
  Tensor out(DType::Float64, t.shape);
  double* p = out.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = f(t.at(i));
  return out;
}

bool is_data_input(uint32_t mask, size_t i) { return i < 32 && (mask >> i) & 1u; }

void fill_from(IntervalTensor& out, const Tensor& lo_t, const Tensor& hi_t, bool increasing) {
  out.dtype = lo_t.dtype();
  out.shape = lo_t.shape();
  out.blocks = Shape{};
  out.shape_known = true;
  out.may_be_nan = false;  // `out` may arrive as unknown(), which admits NaN; only NaN results set it
  const int64_t n = lo_t.numel();
  out.lo.resize(static_cast<size_t>(n));
  out.hi.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double a = lo_t.get_as_double(i), b = hi_t.numel() == n ? hi_t.get_as_double(i) : a;
    if (!increasing) std::swap(a, b);
    if (std::isnan(a)) {
      a = -kInf;
      out.may_be_nan = true;
    }
    if (std::isnan(b)) {
      b = kInf;
      out.may_be_nan = true;
    }
    out.lo[static_cast<size_t>(i)] = std::min(a, b);
    out.hi[static_cast<size_t>(i)] = std::max(a, b);
  }
}

// A float32 sum whose terms reach `partial` in magnitude may overflow in a partial sum, to +inf in one
// and −inf in another (pairwise or blocked kernels): then any value and NaN. Otherwise ± err.
void sum_widen(IntervalTensor& out, size_t i, double err, double partial) {
  if (!(partial <= FLT_MAX)) {
    out.lo[i] = -kInf;
    out.hi[i] = kInf;
    out.may_be_nan = true;
    return;
  }
  out.lo[i] = round_down_f32(out.lo[i] - err);
  out.hi[i] = round_up_f32(out.hi[i] + err);
}

// ---- fast paths for single-interval inputs ----------------------------------------------------------
// A large tensor holds one interval for all its elements. Running the kernel at its bounds would build
// two full-size tensors only to smash the result again; instead the value comes from 1-element kernel runs
// (point-wise ops) or is the input's hull (selections), and the shape from the op's shape rule.


}  // namespace

std::vector<Interval> hulls_along(const IntervalTensor& x, int dim) {
  const int64_t size = x.shape[dim];
  std::vector<Interval> h(static_cast<size_t>(size), Interval{kInf, -kInf});
  const Shape g = x.grid();
  const int64_t inner = g.numel(dim + 1, g.rank());
  for (size_t k = 0; k < x.lo.size(); ++k) {
    const int64_t first = g[dim] == 1 ? 0 : (static_cast<int64_t>(k) / inner) % g[dim];
    const int64_t last = g[dim] == 1 ? size : first + 1;
    for (int64_t i = first; i < last; ++i) {
      Interval& v = h[static_cast<size_t>(i)];
      v = {std::min(v.lo, x.lo[k]), std::max(v.hi, x.hi[k])};
    }
  }
  return h;
}

namespace {

// The output shapes from the op's shape rule (OpDef::shape): the inputs' shapes and the exact inputs' values.
// Callers make sure every input the rule reads a value of is exact. False where the op has no rule or the
// rule refuses.
bool rule_shapes(const BoundsContext& c, std::vector<Shape>& out) {
  if (!c.def.shape) return false;
  std::vector<const Shape*> shapes(c.inputs.size(), nullptr);
  std::vector<const Tensor*> values(c.inputs.size(), nullptr);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const IntervalTensor* in = c.partitioned(i);
    if (!in) continue;
    if (!in->shape_known) return false;
    shapes[i] = &in->shape;
    values[i] = in->exact.get();
  }
  const ShapeContext sc{c.node, shapes, values};
  return c.def.shape(sc, out).is_ok() && out.size() == c.node.outputs.size();
}

// Bounds computed in float64 for a float32 function of libm: rounded outward, then two more ulps, as glibc's
// float functions are off by up to 2 ulps (tanhf, found by the Tanh property). A relative error never
// changes a result's sign: the extra ulps stop at 0 (exp's lower bound stays ≥ 0).
void widen_for_libm(IntervalTensor& out) {
  auto two_ulps = [](double v, float toward) {
    if (!std::isfinite(v) || v == 0) return v;
    const float w = std::nextafter(std::nextafter(static_cast<float>(v), toward), toward);
    return (w > 0) == (v > 0) ? static_cast<double>(w) : 0.0;
  };
  for (auto& v : out.lo) v = two_ulps(round_down_f32(v), -INFINITY);
  for (auto& v : out.hi) v = two_ulps(round_up_f32(v), INFINITY);
}

// A point-wise op on its operands' grids: the kernel runs on the stored bounds (one per block, element or
// tensor) and its broadcasting gives the output's grid, so a per-channel bias or a per-column scale keeps
// the blocks. Exact operands take part as they are (at most kElementwiseLimit elements). True when it
// filled the output.
bool pointwise_on_grid(BoundsContext& c, bool exact, bool increasing, uint32_t mask) {
  if (!c.def.has(kElementwise) || c.outputs.size() != 1) return false;
  const size_t n_in = c.inputs.size();
  std::vector<Tensor> lo_store(n_in), hi_store(n_in);
  std::vector<const Tensor*> lo_in(n_in, nullptr), hi_in(n_in, nullptr);
  Shape shape;
  bool any_data = false, nan_in = false;
  for (size_t i = 0; i < n_in; ++i) {
    const IntervalTensor* in = c.partitioned(i);
    if (!in) continue;
    if (!in->shape_known || !broadcast_shapes(i == 0 ? in->shape : shape, in->shape, shape)) return false;
    if (is_data_input(mask, i) || (!in->exact && mask == 0)) {
      if (in->numel() == 0) return false;
      lo_store[i] = grid_bound_tensor(*in, false);
      hi_store[i] = grid_bound_tensor(*in, true);
      lo_in[i] = &lo_store[i];
      hi_in[i] = &hi_store[i];
      any_data = true;
      nan_in |= in->may_be_nan;
    } else if (in->exact && in->exact->numel() <= kElementwiseLimit) {
      if (is_float(in->exact->dtype()) && in->exact->dtype() != DType::Float64) {
        cast_tensor(*in->exact, DType::Float64, lo_store[i]);  // beside the float64 bounds
        lo_in[i] = hi_in[i] = &lo_store[i];
      } else {
        lo_in[i] = hi_in[i] = in->exact.get();
      }
    } else {
      return false;
    }
  }
  if (!any_data) return false;
  std::vector<Tensor> lo_out, hi_out;
  if (!run_kernel(c.node, c.def, lo_in, lo_out) || !run_kernel(c.node, c.def, hi_in, hi_out)) return false;
  if (lo_out.empty() || !lo_out[0].defined() || lo_out[0].numel() > kElementwiseLimit ||
      lo_out[0].shape().rank() > shape.rank())
    return false;
  IntervalTensor& out = c.outputs[0];
  fill_from(out, lo_out[0], hi_out[0], increasing);
  out.shape = shape;
  out.set_grid(lo_out[0].shape());
  out.exact.reset();
  out.may_be_nan |= nan_in;
  if (!exact) widen_for_libm(out);
  return true;
}

// The grid of `out_shape` when it only inserts or removes dimensions of size 1 (Squeeze, Unsqueeze, most
// Reshapes of a batch of channels): the blocks keep their order.
bool regrid_unit_dims(const IntervalTensor& x, const Shape& out_shape, Shape& grid) {
  const Shape g = x.grid();
  const int rank = x.shape.rank();
  int d = 0;
  grid = Shape{};
  for (int o = 0; o < out_shape.rank(); ++o) {
    if (out_shape[o] == 1) {
      grid.push_back(1);
      continue;
    }
    while (d < rank && x.shape[d] == 1) ++d;
    if (d == rank || x.shape[d] != out_shape[o]) return false;
    grid.push_back(g[d++]);
  }
  while (d < rank && x.shape[d] == 1) ++d;
  return d == rank;
}

// A reshape that keeps the leading (batch) dimension of a tensor whose rows share their bounds: one row,
// reshaped, partitioned again (a Flatten of per-channel feature maps gives [1, C·H·W] blocks).
bool regrid_rows(const IntervalTensor& x, const Shape& out_shape, IntervalTensor& out) {
  if (x.shape.rank() < 1 || out_shape.rank() < 1 || x.grid()[0] != 1 || out_shape[0] != x.shape[0] ||
      x.shape[0] == 0)
    return false;
  const int64_t row = x.numel() / x.shape[0];
  if (row > kExpandLimit) return false;
  Shape row_shape;
  for (int d = 1; d < out_shape.rank(); ++d) row_shape.push_back(out_shape[d]);
  IntervalTensor r = IntervalTensor::filled(x.dtype, row_shape, {});
  r.lo.resize(static_cast<size_t>(row));
  r.hi.resize(static_cast<size_t>(row));
  for (int64_t i = 0; i < row; ++i) {
    r.lo[static_cast<size_t>(i)] = x.lo_at(i);
    r.hi[static_cast<size_t>(i)] = x.hi_at(i);
  }
  r.partition_if_large();
  Shape grid{1};
  for (int64_t v : r.grid()) grid.push_back(v);
  out.lo = std::move(r.lo);
  out.hi = std::move(r.hi);
  out.set_grid(grid);
  return true;
}

// Selections that move a partitioned tensor's blocks without mixing them: an op that permutes dimensions
// permutes the grid, one that keeps the elements' order keeps the grid or rebuilds it from one shared row.
// True when it filled the output.
bool selection_on_grid(BoundsContext& c) {
  const IntervalTensor* x = c.partitioned(0);
  const bool permutes = c.def.has(kPermutesDims);
  if (!x || !x->blocked() || c.outputs.size() != 1 || !(permutes || c.def.has(kKeepsOrder))) return false;
  for (size_t i = 1; i < c.inputs.size(); ++i)
    if (c.partitioned(i) && !c.partitioned(i)->exact) return false;
  std::vector<Shape> shapes;
  if (!rule_shapes(c, shapes)) return false;
  const Shape& shape = shapes[0];
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(x->dtype, shape, {});
  out.may_be_nan = x->may_be_nan;
  if (permutes) {
    // The kernel on the stored blocks permutes them as it permutes the tensor.
    const Tensor lo_t = grid_bound_tensor(*x, false), hi_t = grid_bound_tensor(*x, true);
    std::vector<const Tensor*> lo_in{&lo_t}, hi_in{&hi_t};
    std::vector<Tensor> lo_out, hi_out;
    if (!run_kernel(c.node, c.def, lo_in, lo_out) || !run_kernel(c.node, c.def, hi_in, hi_out)) return false;
    fill_from(out, lo_out[0], hi_out[0], true);
    out.shape = shape;
    out.set_grid(lo_out[0].shape());
    out.may_be_nan |= x->may_be_nan;
    return true;
  }
  Shape grid;
  if (regrid_unit_dims(*x, shape, grid)) {
    out.lo = x->lo;
    out.hi = x->hi;
    out.set_grid(grid);
    return true;
  }
  return regrid_rows(*x, shape, out);
}

// Selections of single-interval inputs: every output element is one of the inputs' elements. True when
// it filled the outputs.
bool monotone_fast(BoundsContext& c, bool exact, bool increasing, uint32_t mask) {
  if (c.outputs.empty() || !c.partitioned(0)) return false;
  if (pointwise_on_grid(c, exact, increasing, mask)) return true;
  if (!exact || !increasing) return false;
  if (selection_on_grid(c)) return true;
  bool any_data = false, nan_in = false;
  Interval hull{kInf, -kInf};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const IntervalTensor* in = c.input(i);
    if (!in) continue;
    if (!in->shape_known) return false;
    if (is_data_input(mask, i) || (!in->exact && mask == 0)) {
      if (in->lo.size() != 1 || in->numel() == 0) return false;
      any_data = true;
      nan_in |= in->may_be_nan;
      hull = {std::min(hull.lo, in->lo[0]), std::max(hull.hi, in->hi[0])};
    } else if (!in->exact) {
      return false;
    }
  }
  if (!any_data || c.def.has(kElementwise)) return false;
  std::vector<Shape> shapes;
  if (!rule_shapes(c, shapes)) return false;
  for (size_t k = 0; k < c.outputs.size() && k < shapes.size(); ++k) {
    IntervalTensor& out = c.outputs[k];
    out = IntervalTensor::filled(c.input(0)->dtype, shapes[k], hull);
    out.may_be_nan = nan_in;
  }
  return true;
}

// A selection by ranged indices (Gather's indices, Where's condition) from single-interval data: every
// output is one of the data's elements, whatever the indices, and the shape follows from the op's shape rule
// on the indices' shape alone (no gather over a full-size tensor).
bool select_from_single_interval(BoundsContext& c, uint32_t mask) {
  if (c.outputs.size() != 1) return false;
  bool any_data = false, nan_in = false;
  Interval hull{kInf, -kInf};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const IntervalTensor* in = c.partitioned(i);
    if (!in || !is_data_input(mask, i)) continue;
    if (!in->shape_known || !in->smashed() || in->numel() == 0) return false;
    any_data = true;
    nan_in |= in->may_be_nan;
    hull = {std::min(hull.lo, in->lo[0]), std::max(hull.hi, in->hi[0])};
  }
  std::vector<Shape> shapes;
  if (!any_data || !rule_shapes(c, shapes)) return false;
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(c.partitioned(0)->dtype, shapes[0], hull);
  out.may_be_nan = nan_in;
  return true;
}

Status monotone_impl(BoundsContext& c, bool exact, bool increasing, uint32_t data_inputs, bool ranged_indices) {
  const uint32_t mask = data_inputs ? data_inputs : c.def.differentiable_inputs;
  if (!ranged_indices && monotone_fast(c, exact, increasing, mask)) return Status::ok();
  if (ranged_indices && exact && increasing && select_from_single_interval(c, mask)) return Status::ok();
  const size_t n_in = c.inputs.size();
  std::vector<Tensor> lo_store(n_in), hi_store(n_in);
  std::vector<const Tensor*> lo_in(n_in, nullptr), hi_in(n_in, nullptr);
  bool placeholder = false, nan_in = false;
  Interval data_hull{kInf, -kInf};
  for (size_t i = 0; i < n_in; ++i) {
    const IntervalTensor* in = c.input(i);
    if (!in) continue;
    if (!in->shape_known) return bounds_unbounded(c);
    if (is_data_input(mask, i) || (!in->exact && mask == 0)) {
      lo_store[i] = bound_tensor(*in, false);
      hi_store[i] = bound_tensor(*in, true);
      nan_in |= in->may_be_nan;
      Interval h = in->hull();
      data_hull = {std::min(data_hull.lo, h.lo), std::max(data_hull.hi, h.hi)};
      lo_in[i] = &lo_store[i];
      hi_in[i] = &hi_store[i];
    } else if (in->exact && is_float(in->exact->dtype()) && in->exact->dtype() != DType::Float64) {
      // The data bounds run as float64: a float operand beside them (Pad's constant) must match.
      cast_tensor(*in->exact, DType::Float64, lo_store[i]);
      lo_in[i] = hi_in[i] = &lo_store[i];
    } else if (in->exact) {
      lo_in[i] = hi_in[i] = in->exact.get();
    } else if (!ranged_indices) {
      return bounds_unbounded(c);
    } else {
      // An index/condition operand we only know by its range: any value of it gives the output's shape,
      // and the output then only holds values of the data operands.
      placeholder = true;
      lo_store[i] = bound_tensor(*in, false);
      lo_in[i] = hi_in[i] = &lo_store[i];
    }
  }
  std::vector<Tensor> lo_out, hi_out;
  if (!run_kernel(c.node, c.def, lo_in, lo_out) || !run_kernel(c.node, c.def, hi_in, hi_out))
    return bounds_unbounded(c);
  for (size_t k = 0; k < c.outputs.size() && k < lo_out.size(); ++k) {
    IntervalTensor& out = c.outputs[k];
    if (!lo_out[k].defined()) continue;
    fill_from(out, lo_out[k], hi_out[k], increasing);
    out.may_be_nan |= nan_in;
    if (placeholder) {
      Interval h = out.hull();  // keeps constants the op inserts (Pad values)
      h = {std::min(h.lo, data_hull.lo), std::max(h.hi, data_hull.hi)};
      out.lo = {h.lo};
      out.hi = {h.hi};
    }
    if (!exact) widen_for_libm(out);
  }
  return Status::ok();
}

}  // namespace

Tensor lower_tensor(const IntervalTensor& t) { return bound_tensor(t, false); }
Tensor upper_tensor(const IntervalTensor& t) { return bound_tensor(t, true); }

Status bounds_monotone(BoundsContext& c, bool exact, uint32_t data_inputs, bool ranged_indices) {
  return monotone_impl(c, exact, true, data_inputs, ranged_indices);
}
Status bounds_antitone(BoundsContext& c, bool exact) { return monotone_impl(c, exact, false, 0, false); }

Status bounds_monotone_within(BoundsContext& c, Interval range) {
  GRIST_TRY(bounds_monotone(c, false));
  for (IntervalTensor& out : c.outputs) {
    for (auto& v : out.lo) v = std::clamp(v, range.lo, range.hi);
    for (auto& v : out.hi) v = std::clamp(v, range.lo, range.hi);
  }
  return Status::ok();
}

Status bounds_monotone_sum(BoundsContext& c) { return bounds_sum_of_terms(c, 0, false); }
Status bounds_monotone_mean(BoundsContext& c) { return bounds_sum_of_terms(c, 0, true); }

namespace {
// A sum (or mean) over equal groups of a single-interval tensor, for an op with a shape rule (ReduceSum,
// ReduceMean): the same bounds as below without running the kernel on full-size tensors (every output adds
// `terms` values of one interval).
bool smashed_reduce_bounds(BoundsContext& c, bool averaged) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known || !x->smashed() || c.outputs.empty()) return false;
  for (size_t i = 1; i < c.inputs.size(); ++i)
    if (c.partitioned(i) && !c.partitioned(i)->exact) return false;
  std::vector<Shape> shapes;
  if (!rule_shapes(c, shapes) || shapes[0].numel() == 0) return false;
  const Shape& shape = shapes[0];
  const double terms = static_cast<double>(x->numel() / shape.numel());
  const Interval h = x->hull();
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(x->dtype, shape, averaged ? h : Interval{terms * h.lo, terms * h.hi});
  out.may_be_nan = x->may_be_nan;
  const double mag = std::max(std::fabs(h.lo), std::fabs(h.hi)) * (averaged ? 1.0 : terms);
  sum_widen(out, 0, sum_error_f32(static_cast<int64_t>(terms), mag), averaged ? mag * terms : mag);
  if (!out.may_be_nan && h.lo >= 0) out.lo[0] = std::max(out.lo[0], 0.0);
  if (!out.may_be_nan && h.hi <= 0) out.hi[0] = std::min(out.hi[0], 0.0);
  return true;
}
}  // namespace

Status bounds_sum_of_terms(BoundsContext& c, int64_t terms, bool averaged) {
  if (terms <= 0 && smashed_reduce_bounds(c, averaged)) return Status::ok();
  GRIST_TRY(monotone_impl(c, true, true, 0, false));
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known || c.outputs.empty() || !c.outputs[0].shape_known) return Status::ok();
  // γ_n·Σ|x| bounds the float32 summation error, whatever the order the kernel adds in.
  Tensor abs_x = map_to_f64(*x, [](Interval i) { return std::max(std::fabs(i.lo), std::fabs(i.hi)); });
  std::vector<const Tensor*> in(c.inputs.size(), nullptr);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.input(i) && c.input(i)->exact) in[i] = c.input(i)->exact.get();
  in[0] = &abs_x;
  std::vector<Tensor> abs_out;
  if (!run_kernel(c.node, c.def, in, abs_out)) return bounds_unbounded(c);
  IntervalTensor& out = c.outputs[0];
  if (terms <= 0) terms = out.numel() > 0 ? std::max<int64_t>(1, x->numel() / out.numel()) : 1;
  for (size_t i = 0; i < out.lo.size(); ++i) {
    const double mag = abs_out[0].get_as_double(static_cast<int64_t>(i));
    sum_widen(out, i, sum_error_f32(terms, mag), averaged ? mag * static_cast<double>(terms) : mag);
  }
  // Rounding never changes the sign of a sum of terms of one sign (padding adds zeros).
  const Interval h = x->hull();
  if (!out.may_be_nan && h.lo >= 0)
    for (auto& v : out.lo) v = std::max(v, 0.0);
  if (!out.may_be_nan && h.hi <= 0)
    for (auto& v : out.hi) v = std::min(v, 0.0);
  return Status::ok();
}

Status bounds_unary(BoundsContext& c, IntervalUnaryFn f) {
  const IntervalTensor* x = c.partitioned(0);
  if (!x || !x->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(x->dtype, x->shape, {});
  out.blocks = x->blocks;
  out.lo.resize(x->lo.size());
  out.hi.resize(x->lo.size());
  bool nan = x->may_be_nan;
  for (size_t i = 0; i < x->lo.size(); ++i) {
    Interval r = f({x->lo[i], x->hi[i]}, nan);
    out.lo[i] = r.lo;
    out.hi[i] = r.hi;
  }
  out.may_be_nan = nan;
  return Status::ok();
}

namespace {
// f over two broadcast operands, on their grids: their bounds broadcast as the operands do.
Status combine_on_grids(const Node& node, const IntervalTensor& a, const IntervalTensor& b, IntervalBinaryFn f,
                        IntervalTensor& out) {
  Shape shape;
  GRIST_CHECK(broadcast_shapes(a.shape, b.shape, shape), "{}: shapes {} and {} do not broadcast", node.name,
              a.shape.str(), b.shape.str());
  IntervalTensor result = IntervalTensor::filled(a.dtype, shape, {});
  bool nan = a.may_be_nan || b.may_be_nan;
  if (shape.numel() == 0) {  // no element: no bounds to store
    result.lo.clear();
    result.hi.clear();
    out = std::move(result);
    return Status::ok();
  }
  const Shape grid_a = a.grid(), grid_b = b.grid();
  Shape grid;
  if (!broadcast_shapes(grid_a, grid_b, grid) || grid.numel() > kElementwiseLimit) {
    Interval r = f(a.hull(), b.hull(), nan);
    result.lo = {r.lo};
    result.hi = {r.hi};
  } else {
    const int64_t n = grid.numel();
    result.lo.assign(static_cast<size_t>(n), 0);
    result.hi.assign(static_cast<size_t>(n), 0);
    const std::array<std::array<int64_t, Shape::kMaxRank>, 2> strides{broadcast_strides(grid_a, grid),
                                                                      broadcast_strides(grid_b, grid)};
    broadcast_loop<2>(grid, strides, [&](int64_t o, const std::array<int64_t, 2>& j) {
      const size_t ja = a.lo.size() == 1 ? 0 : static_cast<size_t>(j[0]);
      const size_t jb = b.lo.size() == 1 ? 0 : static_cast<size_t>(j[1]);
      Interval r = f({a.lo[ja], a.hi[ja]}, {b.lo[jb], b.hi[jb]}, nan);
      result.lo[static_cast<size_t>(o)] = r.lo;
      result.hi[static_cast<size_t>(o)] = r.hi;
    });
    result.set_grid(grid);
  }
  result.may_be_nan = nan;
  out = std::move(result);
  return Status::ok();
}
}  // namespace

Status bounds_binary(BoundsContext& c, IntervalBinaryFn f) {
  const IntervalTensor* a = c.partitioned(0);
  const IntervalTensor* b = c.partitioned(1);
  if (!a || !b || !a->shape_known || !b->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  return combine_on_grids(c.node, *a, *b, f, c.outputs[0]);
}

Status bounds_fold(BoundsContext& c, IntervalBinaryFn f) {
  if (c.inputs.empty() || c.outputs.empty()) return bounds_unbounded(c);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.partitioned(i) || !c.partitioned(i)->shape_known) return bounds_unbounded(c);
  IntervalTensor acc = *c.partitioned(0);
  acc.exact.reset();
  for (size_t i = 1; i < c.inputs.size(); ++i) GRIST_TRY(combine_on_grids(c.node, acc, *c.partitioned(i), f, acc));
  c.outputs[0] = std::move(acc);
  return Status::ok();
}

Status bounds_bilinear(BoundsContext& c, int64_t terms) {
  const IntervalTensor* a = c.input(0);
  const IntervalTensor* b = c.input(1);
  const IntervalTensor* bias = c.input(2);
  if (!a || !b || !a->shape_known || !b->shape_known || (bias && !bias->shape_known)) return bounds_unbounded(c);
  if (!a->bounded() || !b->bounded() || (bias && !bias->bounded())) return bounds_unbounded(c);
  auto mid = [](Interval i) { return i.lo / 2 + i.hi / 2; };
  auto rad = [&](Interval i) {
    const double m = mid(i);
    return std::nextafter(std::max(i.hi - m, m - i.lo), kInf);
  };
  auto absmax = [](Interval i) { return std::max(std::fabs(i.lo), std::fabs(i.hi)); };
  Tensor a_m = map_to_f64(*a, mid), a_r = map_to_f64(*a, rad);
  Tensor a_abs_m = map_to_f64(*a, [&](Interval i) { return std::fabs(mid(i)); });
  Tensor a_abs = map_to_f64(*a, absmax);
  Tensor b_m = map_to_f64(*b, mid), b_r = map_to_f64(*b, rad);
  Tensor b_abs_m_plus_r = map_to_f64(*b, [&](Interval i) { return std::fabs(mid(i)) + rad(i); });
  Tensor b_abs = map_to_f64(*b, absmax);
  Tensor c_m, c_r, c_abs;
  if (bias) {
    c_m = map_to_f64(*bias, mid);
    c_r = map_to_f64(*bias, rad);
    c_abs = map_to_f64(*bias, absmax);
  }
  const Tensor* opt_c_m = bias ? &c_m : nullptr;
  const Tensor* opt_c_r = bias ? &c_r : nullptr;
  const Tensor* opt_c_abs = bias ? &c_abs : nullptr;
  std::vector<Tensor> mid_out, r1_out, r2_out, abs_out;
  auto run3 = [&](const Tensor* x, const Tensor* y, const Tensor* z, std::vector<Tensor>& out) {
    std::vector<const Tensor*> in{x, y};
    if (c.inputs.size() > 2) in.push_back(z);
    return run_kernel(c.node, c.def, in, out);
  };
  if (!run3(&a_m, &b_m, opt_c_m, mid_out) || !run3(&a_abs_m, &b_r, opt_c_r, r1_out) ||
      !run3(&a_r, &b_abs_m_plus_r, nullptr, r2_out) || !run3(&a_abs, &b_abs, opt_c_abs, abs_out))
    return bounds_unbounded(c);
  // The sign-split product: with x⁺ = max(x, 0) and x⁻ = max(−x, 0) of each bound, every product of
  // non-negative parts is monotone, so
  //   sup(ab) ≤ a_hi⁺·b_hi⁺ + a_lo⁻·b_lo⁻ − a_lo⁺·b_hi⁻ − a_hi⁻·b_lo⁺   (and inf(ab) symmetrically),
  // exact when no term has both factors straddling 0; midpoint-radius is tighter when both do. Both
  // enclose the real product: the result is their intersection. With a point factor (a weight that does
  // not train) midpoint-radius is already exact, and the eight products are skipped, as they are for
  // outputs beyond kExpandLimit elements (a spatial transformer's sampling grid: 3× the scan's time).
  auto points = [](const IntervalTensor& t) {
    if (t.exact) return true;
    for (size_t i = 0; i < t.lo.size(); ++i)
      if (t.lo[i] != t.hi[i]) return false;
    return true;
  };
  const bool split_helps = !points(*a) && !points(*b) && mid_out[0].numel() <= kExpandLimit;
  auto part = [](const IntervalTensor& t, bool upper, bool positive) {
    return map_to_f64(t, [=](Interval i) {
      const double v = upper ? i.hi : i.lo;
      return positive ? std::max(v, 0.0) : std::max(-v, 0.0);
    });
  };
  std::array<std::vector<Tensor>, 8> split;
  if (split_helps) {
    const Tensor a_lo_p = part(*a, false, true), a_lo_n = part(*a, false, false);
    const Tensor a_hi_p = part(*a, true, true), a_hi_n = part(*a, true, false);
    const Tensor b_lo_p = part(*b, false, true), b_lo_n = part(*b, false, false);
    const Tensor b_hi_p = part(*b, true, true), b_hi_n = part(*b, true, false);
    Tensor c_lo, c_hi;
    if (bias) {
      c_lo = map_to_f64(*bias, [](Interval i) { return i.lo; });
      c_hi = map_to_f64(*bias, [](Interval i) { return i.hi; });
    }
    if (!run3(&a_hi_p, &b_hi_p, bias ? &c_hi : nullptr, split[0]) || !run3(&a_lo_n, &b_lo_n, nullptr, split[1]) ||
        !run3(&a_lo_p, &b_hi_n, nullptr, split[2]) || !run3(&a_hi_n, &b_lo_p, nullptr, split[3]) ||
        !run3(&a_lo_p, &b_lo_p, bias ? &c_lo : nullptr, split[4]) || !run3(&a_hi_n, &b_hi_n, nullptr, split[5]) ||
        !run3(&a_lo_n, &b_hi_p, nullptr, split[6]) || !run3(&a_hi_p, &b_lo_n, nullptr, split[7]))
      return bounds_unbounded(c);
  }
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(a->dtype, mid_out[0].shape(), {});
  const int64_t n = mid_out[0].numel();
  out.lo.resize(static_cast<size_t>(n));
  out.hi.resize(static_cast<size_t>(n));
  // Gemm scales the product by alpha after summing: the float32 partial sums reach |terms| / alpha.
  const double alpha = std::min(1.0, c.node.attr_float("alpha", 1));
  auto at = [](const std::vector<Tensor>& t, int64_t i) { return t[0].data<double>()[i]; };
  for (int64_t i = 0; i < n; ++i) {
    const double m = at(mid_out, i), r = at(r1_out, i) + at(r2_out, i), mag = at(abs_out, i);
    const double split_hi =
        split_helps ? at(split[0], i) + at(split[1], i) - at(split[2], i) - at(split[3], i) : kInf;
    const double split_lo =
        split_helps ? at(split[4], i) + at(split[5], i) - at(split[6], i) - at(split[7], i) : -kInf;
    out.lo[static_cast<size_t>(i)] = std::max(m - r, split_lo);
    out.hi[static_cast<size_t>(i)] = std::min(m + r, split_hi);
    sum_widen(out, static_cast<size_t>(i), sum_error_f32(terms + 1, mag), alpha > 0 ? mag / alpha : kInf);
  }
  return Status::ok();
}

Status bounds_unbounded(BoundsContext& c) {
  // The output shapes from the kernel run at the lower and at the upper bounds: known where both agree (an
  // input that sets the shape by its value, OneHot's depth, is otherwise not to be read at one bound). An
  // integer input ranging beyond ±2³¹ is no shape a kernel could build, and its upper bound would overflow a
  // kernel's shape arithmetic (Tile's repeats × size): there the lower bounds alone give the shape, as before.
  auto run_at = [&](bool upper, std::vector<Tensor>& out) {
    std::vector<Tensor> store(c.inputs.size());
    std::vector<const Tensor*> in(c.inputs.size(), nullptr);
    bool widened = false;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const IntervalTensor* t = c.input(i);
      if (!t) continue;
      if (!t->shape_known) return false;
      if (t->exact) {
        in[i] = t->exact.get();
      } else {
        store[i] = bound_tensor(*t, upper);
        in[i] = &store[i];
        widened |= store[i].dtype() == DType::Float64 && t->dtype != DType::Float64;
      }
    }
    // Float bounds run as float64: a float32 constant beside them (a comparison with 0) must match, or the
    // kernel refuses the mixed types and the output's shape is lost.
    for (size_t i = 0; widened && i < c.inputs.size(); ++i) {
      const IntervalTensor* t = c.input(i);
      if (t && t->exact && t->exact->dtype() == DType::Float32) {
        cast_tensor(*t->exact, DType::Float64, store[i]);
        in[i] = &store[i];
      }
    }
    return run_kernel(c.node, c.def, in, out).is_ok();
  };
  bool check_upper = false;  // some input ranges, and no integer one beyond ±2³¹
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const IntervalTensor* t = c.input(i);
    if (!t || t->exact) continue;
    const Interval h = t->hull();
    if (is_integer(t->dtype) && !(std::fabs(h.lo) <= 0x1p31 && std::fabs(h.hi) <= 0x1p31)) {
      check_upper = false;
      break;
    }
    check_upper = true;
  }
  std::vector<Tensor> lo_out, hi_out;
  const bool ran = run_at(false, lo_out) && (!check_upper || run_at(true, hi_out));
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const bool known = ran && k < lo_out.size() && lo_out[k].defined() &&
                       (!check_upper ||
                        (k < hi_out.size() && hi_out[k].defined() && hi_out[k].shape() == lo_out[k].shape()));
    const DType dt = ran && k < lo_out.size() && lo_out[k].defined() ? lo_out[k].dtype() : DType::Undefined;
    c.outputs[k] = known ? IntervalTensor::unbounded(dt, lo_out[k].shape()) : IntervalTensor::unknown(dt);
  }
  return Status::ok();
}

}  // namespace grist
