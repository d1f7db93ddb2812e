#include "ops/kernel_util.h"

#include <cstring>

namespace grist {

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  const int rank = std::max(a.rank(), b.rank());
  Shape r;
  r.resize(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i;
    int ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1;
    int64_t db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) {
      r[i] = da;
    } else if (da == 1) {
      r[i] = db;
    } else {
      return false;
    }
  }
  out = r;
  return true;
}

std::array<int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, Shape::kMaxRank> st{};
  auto own = strides_of(in);
  const int off = out.rank() - in.rank();
  for (int i = 0; i < out.rank(); ++i) {
    int j = i - off;
    st[i] = (j >= 0 && in[j] != 1) ? own[j] : 0;
  }
  return st;
}

void sum_to_shape(const Tensor& grad, const Shape& target, Tensor& out) {
  out.resize(grad.dtype(), target);
  if (grad.shape() == target) {
    if (&out != &grad) std::memcpy(out.raw(), grad.raw(), grad.nbytes());
    return;
  }
  out.fill_zero();
  std::array<std::array<int64_t, Shape::kMaxRank>, 1> st{broadcast_strides(target, grad.shape())};
  dispatch_float(grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = grad.data<T>();
    T* o = out.data<T>();
    broadcast_loop<1>(grad.shape(), st, [&](int64_t i, const std::array<int64_t, 1>& j) { o[j[0]] += g[i]; });
  });
}

std::array<int64_t, Shape::kMaxRank> unravel(int64_t i, const Shape& s) {
  std::array<int64_t, Shape::kMaxRank> idx{};
  for (int d = s.rank() - 1; d >= 0; --d) {
    if (s[d] > 0) {
      idx[d] = i % s[d];
      i /= s[d];
    }
  }
  return idx;
}

}  // namespace grist
