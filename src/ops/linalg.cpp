// Matrix products: MatMul (numpy matmul: 1-D promotion, broadcast batch dimensions) and Gemm
// (alpha·op(A)·op(B) + beta·C), forward and backward, on Eigen products over row-major maps or, for the layouts
// and sizes tiled_gemm takes, on Conv's tile kernel; and Einsum, a direct loop over its equation's labels.

#include <algorithm>
#include <cfloat>
#include <string>
#include <vector>

#include "util/eigen.h"

#include "ops/conv_kernels.h"
#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "util/thread_pool.h"

namespace grist {
namespace {

// A row-major matrix in memory, used as stored or transposed; `ld` elements apart from one stored row to the
// next (0: `cols`, a matrix of its own rather than a block of a wider one).
template <class T>
struct MatRef {
  const T* data;
  int64_t rows, cols;  // as stored
  bool transposed = false;
  int64_t ld = 0;

  MatRef t() const { return {data, rows, cols, !transposed, ld}; }
  int64_t op_rows() const { return transposed ? cols : rows; }
  int64_t op_cols() const { return transposed ? rows : cols; }
  int64_t stride() const { return ld ? ld : cols; }
  // Rows [r0, r1) / columns [c0, c1) of the matrix as used.
  MatRef op_row_range(int64_t r0, int64_t r1) const {
    return transposed ? MatRef{data + r0, rows, r1 - r0, true, stride()}
                      : MatRef{data + r0 * stride(), r1 - r0, cols, false, stride()};
  }
  MatRef op_col_range(int64_t c0, int64_t c1) const {
    return transposed ? MatRef{data + c0 * stride(), c1 - c0, cols, true, stride()}
                      : MatRef{data + c0, rows, c1 - c0, false, stride()};
  }
};

// y = alpha·op(ma)·op(mb), or y += that, on Eigen maps of any stride.
template <class T, class Y, class A, class B>
void product(Y&& y, const A& ma, bool ta, const B& mb, bool tb, T alpha, bool accumulate) {
  auto run = [&](const auto& lhs, const auto& rhs) {
    if (accumulate) {
      y.noalias() += alpha * (lhs * rhs);
    } else {
      y.noalias() = alpha * (lhs * rhs);
    }
  };
  if (!ta && !tb) {
    run(ma, mb);
  } else if (ta && !tb) {
    run(ma.transpose(), mb);
  } else if (!ta) {
    run(ma, mb.transpose());
  } else {
    run(ma.transpose(), mb.transpose());
  }
}

// A per-thread scratch buffer of at least `count` values (its capacity kept: the steady state allocates nothing).
template <class T>
T* gemm_scratch(size_t slot, int64_t count) {
  thread_local std::vector<T> buffers[2];
  std::vector<T>& buffer = buffers[slot];
  if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// The operand tile_product reads from the cache (and, for aᵀ·b, the result transposed through scratch) at most the
// L2 cache's size; products of at least this many multiply-adds (the study's toys stay on Eigen's product, whose
// sums their replayed iteration counts were measured with).
constexpr int64_t kTiledOperandBytes = int64_t{1} << 19;
constexpr int64_t kTiledMinWork = int64_t{1} << 16;

// out = a·b on conv_kernels' tile_product, for the two layouts where it beat Eigen's product on the hunts' MLPs
// (which pack an operand afresh every call; docs/PERFORMANCE.md, session 20): a·b as stored (a forward), and aᵀ·b
// (a weight gradient), computed as (bᵀ·a)ᵀ so that the stored a is the operand read from the cache, with b (the
// output's gradient, a few columns) and the result transposed around it. False where it does not apply.
template <class T>
bool tiled_gemm(MatRef<T> a, MatRef<T> b, T* out) {
  const int64_t m = a.op_rows(), n = b.op_cols(), k = a.op_cols();
  if (a.ld != 0 || b.ld != 0 || b.transposed || m * n * k < kTiledMinWork) return false;
  if (!a.transposed) {
    if (k * n * static_cast<int64_t>(sizeof(T)) > kTiledOperandBytes) return false;
    tile_product(a.data, b.data, n, m, k, n, static_cast<const T*>(nullptr), out, n);
    return true;
  }
  // a stored k × m: outᵀ (n × m) = bᵀ (n × k) · a.
  if (std::max(k * m, m * n) * static_cast<int64_t>(sizeof(T)) > kTiledOperandBytes) return false;
  T* bt = gemm_scratch<T>(0, n * k);
  T* yt = gemm_scratch<T>(1, n * m);
  Eigen::Map<RowMajorMatrix<T>>(bt, n, k) = Eigen::Map<const RowMajorMatrix<T>>(b.data, k, n).transpose();
  tile_product(bt, a.data, m, n, k, m, static_cast<const T*>(nullptr), yt, m);
  Eigen::Map<RowMajorMatrix<T>>(out, m, n) = Eigen::Map<const RowMajorMatrix<T>>(yt, n, m).transpose();
  return true;
}

// out = alpha·a·b, or out += alpha·a·b when accumulating; out is row-major [a.op_rows, b.op_cols]. Split over
// chunks of output rows (columns when there are more of those); every output element is one chunk's, summed
// over the whole inner dimension by one Eigen product. On one chunk, tiled_gemm where it applies, else the product
// of plain maps.
template <class T>
void gemm(MatRef<T> a, MatRef<T> b, T alpha, bool accumulate, T* out) {
  const int64_t m = a.op_rows(), n = b.op_cols(), k = a.op_cols();
  const bool by_rows = m >= n;
  if (chunk_count(by_rows ? m : n, grain_for(by_rows ? n * k : m * k)) <= 1) {
    if (!accumulate && alpha == T(1) && tiled_gemm(a, b, out)) return;
    product<T>(Eigen::Map<RowMajorMatrix<T>>(out, m, n), Eigen::Map<const RowMajorMatrix<T>>(a.data, a.rows, a.cols),
               a.transposed, Eigen::Map<const RowMajorMatrix<T>>(b.data, b.rows, b.cols), b.transposed, alpha,
               accumulate);
    return;
  }
  using Strided = Eigen::OuterStride<>;
  auto block = [&](MatRef<T> pa, MatRef<T> pb, T* py) {
    product<T>(Eigen::Map<RowMajorMatrix<T>, 0, Strided>(py, pa.op_rows(), pb.op_cols(), Strided(n)),
               Eigen::Map<const RowMajorMatrix<T>, 0, Strided>(pa.data, pa.rows, pa.cols, Strided(pa.stride())),
               pa.transposed,
               Eigen::Map<const RowMajorMatrix<T>, 0, Strided>(pb.data, pb.rows, pb.cols, Strided(pb.stride())),
               pb.transposed, alpha, accumulate);
  };
  if (by_rows) {
    parallel_for(m, grain_for(n * k),
                 [&](int64_t, int64_t r0, int64_t r1) { block(a.op_row_range(r0, r1), b, out + r0 * n); });
  } else {
    parallel_for(n, grain_for(m * k),
                 [&](int64_t, int64_t c0, int64_t c1) { block(a, b.op_col_range(c0, c1), out + c0); });
  }
}

Status require_same_float_type(const Node& node, const Tensor& a, const Tensor& b) {
  if (!is_float(a.dtype()) || a.dtype() != b.dtype())
    return node_error(node, fmt::format("expects two float32 or float64 operands of one type, got {} and {}",
                                        dtype_name(a.dtype()), dtype_name(b.dtype())));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// MatMul

// The product viewed as a batch of [m,k]·[k,n] products; 1-D operands are promoted (a to [1,k], b to
// [k,1]) and the promoted dimension is dropped from the output.
struct MatMulDims {
  int64_t m = 1, k = 1, n = 1;
  Shape a_batch, b_batch, batch;  // operands' leading dimensions and their broadcast
  Shape out;

  // Every batch item of a is used once and b is shared: the batch folds into one [batch·m, k] GEMM.
  bool folds() const { return b_batch.numel() == 1 && a_batch.numel() == batch.numel(); }
};

Status matmul_dims(const Node& node, const Shape& a, const Shape& b, MatMulDims& d) {
  if (a.rank() == 0 || b.rank() == 0) return node_error(node, "operands must have rank at least 1");
  d.m = a.rank() >= 2 ? a[a.rank() - 2] : 1;
  d.k = a.back();
  int64_t kb = b.rank() >= 2 ? b[b.rank() - 2] : b[0];
  d.n = b.rank() >= 2 ? b.back() : 1;
  if (d.k != kb) return node_error(node, fmt::format("inner dimensions differ: {} · {}", a.str(), b.str()));
  d.a_batch.assign(a.begin(), a.end() - std::min(a.rank(), 2));
  d.b_batch.assign(b.begin(), b.end() - std::min(b.rank(), 2));
  if (!broadcast_shapes(d.a_batch, d.b_batch, d.batch))
    return node_error(node, fmt::format("batch dimensions do not broadcast: {} · {}", a.str(), b.str()));
  d.out = d.batch;
  if (d.out.rank() + (a.rank() >= 2) + (b.rank() >= 2) > Shape::kMaxRank)
    return node_error(node, "output rank exceeds the supported maximum");
  if (a.rank() >= 2) d.out.push_back(d.m);
  if (b.rank() >= 2) d.out.push_back(d.n);
  return Status::ok();
}

// Calls f(out_item, a_item, b_item) for every item of the broadcast batch.
template <class F>
void for_each_batch_item(const MatMulDims& d, F&& f) {
  std::array<std::array<int64_t, Shape::kMaxRank>, 2> strides{broadcast_strides(d.a_batch, d.batch),
                                                              broadcast_strides(d.b_batch, d.batch)};
  broadcast_loop<2>(d.batch, strides, [&](int64_t o, const std::array<int64_t, 2>& ab) { f(o, ab[0], ab[1]); });
}

template <class T>
void matmul_forward_typed(const Tensor& a, const Tensor& b, const MatMulDims& d, Tensor& y) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* py = y.data<T>();
  const int64_t m = d.m, k = d.k, n = d.n;
  if (d.folds()) {
    gemm<T>({pa, d.batch.numel() * m, k}, {pb, k, n}, T(1), false, py);
    return;
  }
  // Items in chunks across the kernel threads (each item's product then runs on its chunk's thread): every
  // output item is written once. Attention's [batch·heads, s, s] products are many small items.
  const std::array<std::array<int64_t, Shape::kMaxRank>, 2> strides{broadcast_strides(d.a_batch, d.batch),
                                                                    broadcast_strides(d.b_batch, d.batch)};
  parallel_for(d.batch.numel(), grain_for(m * k * n), [&](int64_t, int64_t first, int64_t last) {
    for (int64_t o = first; o < last; ++o) {
      const auto [ia, ib] = broadcast_index<2>(d.batch, strides, o);
      gemm<T>({pa + ia * m * k, m, k}, {pb + ib * k * n, k, n}, T(1), false, py + o * m * n);
    }
  });
}

Status matmul_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  GRIST_TRY(require_same_float_type(ctx.node, a, b));
  MatMulDims d;
  GRIST_TRY(matmul_dims(ctx.node, a.shape(), b.shape(), d));
  Tensor& y = *ctx.output(0);
  y.resize(a.dtype(), d.out);
  dispatch_float(a.dtype(), [&](auto tag) { matmul_forward_typed<decltype(tag)>(a, b, d, y); });
  return Status::ok();
}

// dA = dY·Bᵀ and dB = Aᵀ·dY per batch item, summed over the items an operand was broadcast to.
template <class T>
void matmul_backward_typed(const Tensor& a, const Tensor& b, const Tensor& dy, const MatMulDims& d, Tensor* da,
                           Tensor* db) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const T* pdy = dy.data<T>();
  const int64_t m = d.m, k = d.k, n = d.n;
  if (d.folds()) {
    const int64_t rows = d.batch.numel() * m;
    if (da) gemm<T>({pdy, rows, n}, MatRef<T>{pb, k, n}.t(), T(1), false, da->data<T>());
    if (db) gemm<T>(MatRef<T>{pa, rows, k}.t(), {pdy, rows, n}, T(1), false, db->data<T>());
    return;
  }
  if (da) da->fill_zero();
  if (db) db->fill_zero();
  for_each_batch_item(d, [&](int64_t o, int64_t ia, int64_t ib) {
    const T* dy_item = pdy + o * m * n;
    if (da) gemm<T>({dy_item, m, n}, MatRef<T>{pb + ib * k * n, k, n}.t(), T(1), true, da->data<T>() + ia * m * k);
    if (db) gemm<T>(MatRef<T>{pa + ia * m * k, m, k}.t(), {dy_item, m, n}, T(1), true, db->data<T>() + ib * k * n);
  });
}

Status matmul_backward(BackwardContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  Tensor* da = ctx.grad_input(0);
  Tensor* db = ctx.grad_input(1);
  if (da) da->resize(a.dtype(), a.shape());
  if (db) db->resize(b.dtype(), b.shape());
  const Tensor* dy = ctx.grad_output(0);
  MatMulDims d;
  GRIST_TRY(matmul_dims(ctx.node, a.shape(), b.shape(), d));
  dispatch_float(a.dtype(), [&](auto tag) { matmul_backward_typed<decltype(tag)>(a, b, *dy, d, da, db); });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Gemm

struct GemmParams {
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
  int64_t m = 0, k = 0, n = 0;
};

Status gemm_params(const Node& node, const Tensor& a, const Tensor& b, const Tensor* c, GemmParams& p) {
  GRIST_TRY(require_same_float_type(node, a, b));
  if (a.rank() != 2 || b.rank() != 2)
    return node_error(node, fmt::format("A and B must be matrices, got {} and {}", a.shape().str(), b.shape().str()));
  p.trans_a = node.attr_int("transA", 0) != 0;
  p.trans_b = node.attr_int("transB", 0) != 0;
  p.alpha = node.attr_float("alpha", 1.0);
  p.beta = node.attr_float("beta", 1.0);
  p.m = p.trans_a ? a.shape()[1] : a.shape()[0];
  p.k = p.trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t kb = p.trans_b ? b.shape()[1] : b.shape()[0];
  p.n = p.trans_b ? b.shape()[0] : b.shape()[1];
  if (p.k != kb)
    return node_error(node,
                      fmt::format("inner dimensions differ: op(A) is [{}, {}], op(B) is [{}, {}]", p.m, p.k, kb, p.n));
  if (c) {
    Shape mn{p.m, p.n}, r;
    if (c->dtype() != a.dtype()) return node_error(node, "C must have the dtype of A and B");
    if (!broadcast_shapes(c->shape(), mn, r) || r != mn)
      return node_error(node, fmt::format("C {} does not broadcast to [{}, {}]", c->shape().str(), p.m, p.n));
  }
  return Status::ok();
}

template <class T>
void gemm_forward_typed(const Tensor& a, const Tensor& b, const Tensor* c, const GemmParams& p, Tensor& y) {
  MatRef<T> ma{a.data<T>(), a.shape()[0], a.shape()[1], p.trans_a};
  MatRef<T> mb{b.data<T>(), b.shape()[0], b.shape()[1], p.trans_b};
  T* py = y.data<T>();
  gemm<T>(ma, mb, static_cast<T>(p.alpha), false, py);
  if (!c) return;
  const T beta = static_cast<T>(p.beta);
  const T* pc = c->data<T>();
  std::array<std::array<int64_t, Shape::kMaxRank>, 1> st{broadcast_strides(c->shape(), y.shape())};
  broadcast_loop<1>(y.shape(), st, [&](int64_t i, const std::array<int64_t, 1>& j) { py[i] += beta * pc[j[0]]; });
}

Status gemm_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor* c = ctx.input(2);
  GemmParams p;
  GRIST_TRY(gemm_params(ctx.node, a, b, c, p));
  Tensor& y = *ctx.output(0);
  y.resize(a.dtype(), Shape{p.m, p.n});
  dispatch_float(a.dtype(), [&](auto tag) { gemm_forward_typed<decltype(tag)>(a, b, c, p, y); });
  return Status::ok();
}

// With A' = op(A), B' = op(B): dA' = α·dY·B'ᵀ, dB' = α·A'ᵀ·dY, transposed back where A or B was;
// dC = β·dY summed down to C's shape.
template <class T>
void gemm_backward_typed(const Tensor& a, const Tensor& b, const Tensor& dy, const GemmParams& p, Tensor* da,
                         Tensor* db) {
  const T alpha = static_cast<T>(p.alpha);
  MatRef<T> ma{a.data<T>(), a.shape()[0], a.shape()[1], p.trans_a};
  MatRef<T> mb{b.data<T>(), b.shape()[0], b.shape()[1], p.trans_b};
  MatRef<T> mdy{dy.data<T>(), p.m, p.n};
  if (da) {
    if (p.trans_a) {
      gemm<T>(mb, mdy.t(), alpha, false, da->data<T>());
    } else {
      gemm<T>(mdy, mb.t(), alpha, false, da->data<T>());
    }
  }
  if (db) {
    if (p.trans_b) {
      gemm<T>(mdy.t(), ma, alpha, false, db->data<T>());
    } else {
      gemm<T>(ma.t(), mdy, alpha, false, db->data<T>());
    }
  }
}

Status gemm_backward(BackwardContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor* c = ctx.input(2);
  Tensor* grads[3] = {ctx.grad_input(0), ctx.grad_input(1), c ? ctx.grad_input(2) : nullptr};
  const Tensor* operands[3] = {&a, &b, c};
  for (int i = 0; i < 3; ++i)
    if (grads[i]) grads[i]->resize(operands[i]->dtype(), operands[i]->shape());
  const Tensor* dy = ctx.grad_output(0);
  GemmParams p;
  GRIST_TRY(gemm_params(ctx.node, a, b, c, p));
  dispatch_float(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    gemm_backward_typed<T>(a, b, *dy, p, grads[0], grads[1]);
    if (grads[2]) {
      sum_to_shape(*dy, c->shape(), *grads[2]);
      const T beta = static_cast<T>(p.beta);
      for (T& v : grads[2]->span<T>()) v *= beta;
    }
  });
  return Status::ok();
}

}  // namespace

namespace {
// Interval transfers (grist scan): the bilinear product of ops/bounds.h over the longest dot product.
//
// A large left operand whose rows share their bounds (one interval for all its elements, or blocks per
// column [1, K]: a batch of flattened images or of features) gives the same bounds to every row of the
// output: column j is Σ_k x_k·b_kj (+ c_j), each term's interval product exact, in one pass over b's
// intervals instead of products of the full size. The output keeps one interval per column. b is [K, N]
// (or [N, K] transposed).
bool rows_share_bounds(const IntervalTensor& a) {
  const Shape g = a.grid();
  for (int d = 0; d + 1 < g.rank(); ++d)
    if (g[d] != 1) return false;
  return a.smashed() || a.blocked();
}

Status shared_rows_bounds(BoundsContext& c, const Shape& out_shape, bool trans_b, const IntervalTensor* bias) {
  const IntervalTensor* a = c.partitioned(0);
  const IntervalTensor* b = c.input(1);
  IntervalTensor& y = c.outputs[0];
  y = IntervalTensor::unbounded(a->dtype, out_shape);
  if (!a->bounded() || !b->bounded() || (bias && !bias->bounded())) return Status::ok();
  const int64_t K = trans_b ? b->shape[1] : b->shape[0], N = trans_b ? b->shape[0] : b->shape[1];
  const bool bias_by_column = bias && bias->numel() == N && (bias->shape.rank() == 1 || bias->shape[0] == 1);
  const Interval bias_hull = bias ? bias->hull() : Interval{0, 0};
  std::vector<double> lo(static_cast<size_t>(N)), hi(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) {
    double l = 0, h = 0, mag = 0;
    for (int64_t k = 0; k < K; ++k) {
      const size_t xk = a->lo.size() == 1 ? 0 : static_cast<size_t>(k);
      const Interval x{a->lo[xk], a->hi[xk]};
      const Interval w = b->at(trans_b ? j * K + k : k * N + j);
      const double p[4] = {x.lo * w.lo, x.lo * w.hi, x.hi * w.lo, x.hi * w.hi};
      l += std::min({p[0], p[1], p[2], p[3]});
      h += std::max({p[0], p[1], p[2], p[3]});
      mag += std::max(std::fabs(x.lo), std::fabs(x.hi)) * std::max(std::fabs(w.lo), std::fabs(w.hi));
    }
    const Interval cj = bias_by_column ? bias->at(j) : bias_hull;
    l += cj.lo, h += cj.hi, mag += std::max(std::fabs(cj.lo), std::fabs(cj.hi));
    if (!(mag <= FLT_MAX)) return Status::ok();  // partial sums may overflow: unbounded
    const double err = sum_error_f32(K + 2, mag);
    lo[static_cast<size_t>(j)] = round_down_f32(l - err);
    hi[static_cast<size_t>(j)] = round_up_f32(h + err);
  }
  if (N == 0 || out_shape.numel() == 0) return Status::ok();
  y.lo = std::move(lo);
  y.hi = std::move(hi);
  y.set_grid(Shape{N});
  y.may_be_nan = false;
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Einsum: a direct loop over every combination of the equation's labels (the output's and the summed
// ones), each output element adding its terms in one fixed order. Transformer code writes small
// contractions (bhqd,bhkd->bhqk); large ones belong in MatMul, which exporters use for them.

// The equation resolved against the operands' shapes: one loop variable per label, and for each operand
// (and the output) the stride each label moves it by (0 where a broadcast ellipsis dimension has size 1).
struct EinsumPlan {
  std::vector<int64_t> sizes;                   // per label
  std::vector<std::vector<int64_t>> strides;    // per operand, per label
  std::vector<int64_t> out_strides;             // per label (0 for summed labels)
  Shape out_shape;
  int64_t terms = 1;                            // the loop's length: the product of every label's size
};

// One operand's (or the output's) subscripts: label ids per dimension, -1 where its ellipsis goes.
Status parse_subscripts(const Node& n, std::string_view text, std::vector<int>& labels) {
  labels.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (text.substr(i, 3) != "..." || std::count(labels.begin(), labels.end(), -1))
        return node_error(n, fmt::format("malformed ellipsis in '{}'", text));
      labels.push_back(-1);
      i += 2;
    } else if (ch >= 'a' && ch <= 'z') {
      labels.push_back(ch - 'a');
    } else if (ch >= 'A' && ch <= 'Z') {
      labels.push_back(26 + ch - 'A');
    } else {
      return node_error(n, fmt::format("unexpected '{}' in the equation", ch));
    }
  }
  return Status::ok();
}

Status plan_einsum(const Node& n, std::span<const Shape* const> shapes, EinsumPlan& p) {
  constexpr int kLetters = 52;
  const std::string eq = n.attr_string("equation", "");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> ops;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    ops.emplace_back();
    GRIST_TRY(parse_subscripts(n, std::string_view(lhs).substr(start, comma - start), ops.back()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ops.size() != shapes.size())
    return node_error(n, fmt::format("the equation has {} operands for {} inputs", ops.size(), shapes.size()));
  // Each operand's ellipsis covers the dimensions its letters leave; they align to the right.
  int ellipsis = 0;
  std::vector<int> counts(kLetters, 0);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!shapes[k]) return node_error(n, fmt::format("input {} is missing", k));
    const int letters = static_cast<int>(ops[k].size()) - static_cast<int>(std::count(ops[k].begin(), ops[k].end(), -1));
    const int covered = shapes[k]->rank() - letters;
    const bool has_ellipsis = std::count(ops[k].begin(), ops[k].end(), -1) > 0;
    if (covered < 0 || (!has_ellipsis && covered != 0))
      return node_error(n, fmt::format("operand {} has rank {}, its subscripts name {}", k, shapes[k]->rank(), letters));
    ellipsis = std::max(ellipsis, covered);
    for (int l : ops[k])
      if (l >= 0) ++counts[static_cast<size_t>(l)];
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    GRIST_TRY(parse_subscripts(n, std::string_view(eq).substr(arrow + 2), out));
  } else {  // implicit: the ellipsis, then the letters used once, in alphabetical order
    if (ellipsis > 0) out.push_back(-1);
    for (int l = 0; l < kLetters; ++l)
      if (counts[static_cast<size_t>(l)] == 1) out.push_back(l);
  }
  // Label ids: letters 0..51, ellipsis dimensions 52.. (the rightmost last).
  auto expand = [&](const std::vector<int>& subs, int rank) {
    std::vector<int> ids;
    const int covered = rank - static_cast<int>(subs.size()) + 1;
    for (int l : subs) {
      if (l >= 0) {
        ids.push_back(l);
        continue;
      }
      for (int j = ellipsis - covered; j < ellipsis; ++j) ids.push_back(kLetters + j);
    }
    return ids;
  };
  const int labels = kLetters + ellipsis;
  p.sizes.assign(static_cast<size_t>(labels), -1);  // -1: no operand uses the label
  std::vector<std::vector<int>> dims(ops.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    dims[k] = expand(ops[k], shapes[k]->rank());
    for (int d = 0; d < shapes[k]->rank(); ++d) {
      int64_t& size = p.sizes[static_cast<size_t>(dims[k][static_cast<size_t>(d)])];
      const int64_t here = (*shapes[k])[d];
      const bool broadcast_dim = dims[k][static_cast<size_t>(d)] >= kLetters;
      if (size < 0 || (broadcast_dim && size == 1)) size = here;
      else if (here != size && !(broadcast_dim && here == 1))
        return node_error(n, fmt::format("label of size {} and {} in operand {}", size, here, k));
    }
  }
  const int out_rank = static_cast<int>(out.size()) - (std::count(out.begin(), out.end(), -1) ? 1 - ellipsis : 0);
  const std::vector<int> out_ids = expand(out, out_rank);
  p.out_shape = Shape{};
  for (int64_t& s : p.sizes) s = s < 0 ? 1 : s;  // labels no operand uses do not loop
  for (int l : out_ids) {
    if (l < kLetters && counts[static_cast<size_t>(l)] == 0)
      return node_error(n, fmt::format("output label '{}' is in no operand", static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26)));
    p.out_shape.push_back(p.sizes[static_cast<size_t>(l)]);
  }
  p.strides.assign(ops.size(), std::vector<int64_t>(static_cast<size_t>(labels), 0));
  for (size_t k = 0; k < ops.size(); ++k) {
    const auto st = strides_of(*shapes[k]);
    for (int d = 0; d < shapes[k]->rank(); ++d)
      if ((*shapes[k])[d] != 1 || p.sizes[static_cast<size_t>(dims[k][static_cast<size_t>(d)])] == 1)
        p.strides[k][static_cast<size_t>(dims[k][static_cast<size_t>(d)])] += st[static_cast<size_t>(d)];
  }
  p.out_strides.assign(static_cast<size_t>(labels), 0);
  const auto ost = strides_of(p.out_shape);
  for (size_t d = 0; d < out_ids.size(); ++d) p.out_strides[static_cast<size_t>(out_ids[d])] += ost[d];
  p.terms = 1;
  for (int64_t s : p.sizes) p.terms *= s;
  return Status::ok();
}

// Calls f(output offset, operand offsets) for every term, walking the labels as an odometer.
template <class F>
void for_each_einsum_term(const EinsumPlan& p, F&& f) {
  const size_t labels = p.sizes.size(), n_ops = p.strides.size();
  std::vector<int64_t> index(labels, 0), offsets(n_ops, 0);
  int64_t out = 0;
  for (int64_t t = 0; t < p.terms; ++t) {
    f(out, offsets);
    for (size_t l = labels; l-- > 0;) {
      if (p.sizes[l] == 1) continue;
      ++index[l];
      out += p.out_strides[l];
      for (size_t k = 0; k < n_ops; ++k) offsets[k] += p.strides[k][l];
      if (index[l] < p.sizes[l]) break;
      out -= p.out_strides[l] * index[l];
      for (size_t k = 0; k < n_ops; ++k) offsets[k] -= p.strides[k][l] * index[l];
      index[l] = 0;
    }
  }
}

template <class Ctx>
Result<EinsumPlan> einsum_plan(const Ctx& c) {
  std::vector<Shape> shapes;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    if (!c.input(k)) return node_error(c.node, fmt::format("input {} is missing", k));
    shapes.push_back(c.input(k)->shape());
  }
  std::vector<const Shape*> ptrs;
  for (const Shape& s : shapes) ptrs.push_back(&s);
  EinsumPlan p;
  GRIST_TRY(plan_einsum(c.node, ptrs, p));
  return p;
}

Status einsum_forward(ForwardContext& ctx) {
  auto plan = einsum_plan(ctx);
  if (!plan) return plan.error();
  const DType dt = ctx.input(0)->dtype();
  for (size_t k = 1; k < ctx.inputs.size(); ++k)
    if (ctx.input(k)->dtype() != dt) return node_error(ctx.node, "every operand must have the same element type");
  Tensor& y = *ctx.output(0);
  y.resize_zero(dt, plan->out_shape);
  const bool ok = dispatch_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    std::vector<const T*> xs;
    for (size_t k = 0; k < ctx.inputs.size(); ++k) xs.push_back(ctx.input(k)->data<T>());
    for_each_einsum_term(*plan, [&](int64_t o, const std::vector<int64_t>& off) {
      T term = xs[0][off[0]];
      for (size_t k = 1; k < xs.size(); ++k) term = static_cast<T>(term * xs[k][off[k]]);
      py[o] = static_cast<T>(py[o] + term);
    });
  });
  return ok ? Status::ok() : node_error(ctx.node, fmt::format("unsupported element type {}", dtype_name(dt)));
}

// d/dx_k of Σ terms: each term's output gradient times the other operands' factors, added where x_k was read.
Status einsum_backward(BackwardContext& ctx) {
  auto plan = einsum_plan(ctx);
  if (!plan) return plan.error();
  const Tensor& gy = *ctx.grad_output(0);
  const bool ok = dispatch_float(gy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> xs;
    for (size_t k = 0; k < ctx.inputs.size(); ++k) xs.push_back(ctx.input(k)->data<T>());
    const T* g = gy.data<T>();
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      Tensor* gx = ctx.grad_input(k);
      if (!gx) continue;
      gx->resize_zero(ctx.input(k)->dtype(), ctx.input(k)->shape());
      T* d = gx->data<T>();
      for_each_einsum_term(*plan, [&](int64_t o, const std::vector<int64_t>& off) {
        T others = g[o];
        for (size_t j = 0; j < xs.size(); ++j)
          if (j != k) others *= xs[j][off[j]];
        d[off[k]] += others;
      });
    }
  });
  return ok ? Status::ok() : Status(node_error(ctx.node, fmt::format("no gradient for {}", dtype_name(gy.dtype()))));
}

// The kernel's own loop over intervals: each product and each running sum rounded outward, in the kernel's
// order, so every float32 partial sum lies inside. Up to 2²⁰ terms; beyond, unbounded.
Status einsum_bounds(BoundsContext& c) {
  std::vector<const Shape*> shapes;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const IntervalTensor* x = c.input(k);
    if (!x || !x->shape_known || !is_float(x->dtype)) return bounds_unbounded(c);
    shapes.push_back(&x->shape);
  }
  EinsumPlan p;
  if (c.outputs.empty() || !plan_einsum(c.node, shapes, p) || p.terms > (int64_t{1} << 20) ||
      p.out_shape.numel() > kExpandLimit)
    return bounds_unbounded(c);
  IntervalTensor& y = c.outputs[0];
  y = IntervalTensor::filled(c.input(0)->dtype, p.out_shape, {});
  y.lo.assign(static_cast<size_t>(p.out_shape.numel()), 0);
  y.hi.assign(y.lo.size(), 0);
  bool nan = false;
  for (size_t k = 0; k < c.inputs.size(); ++k) nan |= c.input(k)->may_be_nan;
  for_each_einsum_term(p, [&](int64_t o, const std::vector<int64_t>& off) {
    Interval term = c.input(0)->at(off[0]);
    for (size_t k = 1; k < c.inputs.size(); ++k) term = interval_mul(term, c.input(k)->at(off[k]), nan);
    const size_t i = static_cast<size_t>(o);
    const Interval sum = interval_add({y.lo[i], y.hi[i]}, term, nan);
    y.lo[i] = sum.lo;
    y.hi[i] = sum.hi;
  });
  y.may_be_nan = nan;
  return Status::ok();
}

Status matmul_bounds(BoundsContext& c) {
  const IntervalTensor* a = c.partitioned(0);
  const IntervalTensor* b = c.input(1);
  if (!a || a->shape.rank() == 0) return bounds_unbounded(c);
  if (rows_share_bounds(*a) && a->shape.rank() >= 2 && b && b->shape_known && b->shape.rank() == 2 &&
      a->shape.back() == b->shape[0]) {
    Shape out = a->shape;
    out[out.rank() - 1] = b->shape[1];
    return shared_rows_bounds(c, out, false, nullptr);
  }
  return bounds_bilinear(c, a->shape.back());
}
Status gemm_bounds(BoundsContext& c) {
  const IntervalTensor* a = c.partitioned(0);
  const IntervalTensor* b = c.input(1);
  // Negative alpha/beta would flip the radius runs' signs; no exported model uses them.
  if (!a || a->shape.rank() != 2 || c.node.attr_float("alpha", 1) < 0 || c.node.attr_float("beta", 1) < 0)
    return bounds_unbounded(c);
  const bool trans_b = c.node.attr_int("transB", 0) != 0;
  if (rows_share_bounds(*a) && !c.node.attr_int("transA", 0) && c.node.attr_float("alpha", 1) == 1 &&
      c.node.attr_float("beta", 1) == 1 && b && b->shape_known && b->shape.rank() == 2 &&
      a->shape[1] == (trans_b ? b->shape[1] : b->shape[0]))
    return shared_rows_bounds(c, Shape{a->shape[0], trans_b ? b->shape[0] : b->shape[1]}, trans_b, c.input(2));
  return bounds_bilinear(c, c.node.attr_int("transA", 0) ? a->shape[0] : a->shape[1]);
}
}  // namespace

void register_linalg_ops(OpRegistry& r) {
  r.add(OpDef{"MatMul", "", matmul_forward, matmul_backward, inputs_mask({0, 1}), {}, matmul_bounds});
  r.add(OpDef{"Gemm", "", gemm_forward, gemm_backward, inputs_mask({0, 1, 2}), {}, gemm_bounds});
  r.add(OpDef{"Einsum", "", einsum_forward, einsum_backward, kAllInputs, {}, einsum_bounds});
}

}  // namespace grist
