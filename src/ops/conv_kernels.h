// Conv's dot-product kernel: the weights read as stored, with no per-call packing (Eigen's GEMM packs the whole
// weight matrix on every call, which costs more than the product when the grid has few points).
#pragma once

#include <cstdint>

namespace grist {

// y (m × p) += w (m × k) · tᵀ for row-major w (m × k) and t (p × k): each output gains the dot product of a weight
// row and a row of t, every term a product added in (none skipped: a zero weight times an infinity is NaN).
// Blocks of weight rows are read once, from contiguous memory, for every row of t; t should fit in the L2 cache.
template <class T>
void dot_product_rows(const T* w, const T* t, int64_t m, int64_t k, int64_t p, T* y);

extern template void dot_product_rows<float>(const float*, const float*, int64_t, int64_t, int64_t, float*);
extern template void dot_product_rows<double>(const double*, const double*, int64_t, int64_t, int64_t, double*);

}  // namespace grist
