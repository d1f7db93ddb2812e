// Conv's dot-product kernel: the weights read as stored, with no per-call packing (Eigen's GEMM packs the whole
// weight matrix on every call, which costs more than the product when the grid has few points).
#pragma once

#include <cstdint>

namespace grist {

// Both kernels write each output row r as start[r] (0 where start is null: Conv's bias) plus the row's products,
// so that the bias needs no pass of its own over the output (a fill, then a load of it into the accumulators).

// y (m × p) = start + w (m × k) · tᵀ for row-major w (m × k) and t (p × k): each output is its row's start value
// plus the dot product of a weight row and a row of t, every term a product added in (none skipped: a zero weight
// times an infinity is NaN). Blocks of weight rows are read once, from contiguous memory, for every row of t; t
// should fit in the L2 cache.
template <class T>
void dot_product_rows(const T* w, const T* t, int64_t m, int64_t k, int64_t p, const T* start, T* y);

// y (m × n) = start + w (m × k) · b (k × n), row-major, b's and y's rows `ldb` and `ldy` apart: register tiles of
// weight rows × grid columns, each output summed over k in order from its row's start value (every term added in,
// as above). The weights are read as stored, b row by row for each tile: meant for b in the L2 cache (a few
// hundred KB).
template <class T>
void tile_product(const T* w, const T* b, int64_t ldb, int64_t m, int64_t k, int64_t n, const T* start, T* y,
                  int64_t ldy);

extern template void dot_product_rows<float>(const float*, const float*, int64_t, int64_t, int64_t, const float*,
                                             float*);
extern template void dot_product_rows<double>(const double*, const double*, int64_t, int64_t, int64_t, const double*,
                                              double*);

extern template void tile_product<float>(const float*, const float*, int64_t, int64_t, int64_t, int64_t, const float*,
                                         float*, int64_t);
extern template void tile_product<double>(const double*, const double*, int64_t, int64_t, int64_t, int64_t,
                                          const double*, double*, int64_t);

}  // namespace grist
