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

// y (m × n) += w (m × k) · b (k × n), row-major, b's and y's rows `ldb` and `ldy` apart: register tiles of weight
// rows × grid columns, each output summed over k in order from its start value (every term added in, as above).
// The weights are read as stored, b row by row for each tile: meant for b in the L2 cache (a few hundred KB).
template <class T>
void tile_product(const T* w, const T* b, int64_t ldb, int64_t m, int64_t k, int64_t n, T* y, int64_t ldy);

extern template void dot_product_rows<float>(const float*, const float*, int64_t, int64_t, int64_t, float*);
extern template void dot_product_rows<double>(const double*, const double*, int64_t, int64_t, int64_t, double*);

extern template void tile_product<float>(const float*, const float*, int64_t, int64_t, int64_t, int64_t, float*,
                                         int64_t);
extern template void tile_product<double>(const double*, const double*, int64_t, int64_t, int64_t, int64_t, double*,
                                          int64_t);

}  // namespace grist
