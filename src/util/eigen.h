// Eigen's core, included once for everyone, and the row-major maps the kernels use. GCC 12's AVX-512
// intrinsics trip -Wmaybe-uninitialized inside Eigen's products (GCC bug 105593, fixed in GCC 13), so the
// warning is silenced for Eigen's headers only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
#else
#include <Eigen/Core>
#endif

namespace grist {

// Row-major views of tensor buffers, the layout grist's tensors use.
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMajorMatrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix<T>>;

}  // namespace grist
