// sum_of_squares: the typed loop gives the sum a loop over get_as_double gives, bit for bit, from any start value,
// for float32, float64 and the 16-bit types (which take the get_as_double loop itself).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/tensor.h"
#include "util/rng.h"

namespace grist {
namespace {

double reference(const Tensor& t, double start) {
  double sum = start;
  for (int64_t i = 0; i < t.numel(); ++i) sum += t.get_as_double(i) * t.get_as_double(i);
  return sum;
}

TEST(SumOfSquares, IsTheSumOfGetAsDoublesSquaresInOrder) {
  Rng rng(31);
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    for (int64_t n : {0, 1, 7, 1000}) {
      Tensor wide(DType::Float64, Shape{n});
      // Magnitudes over 30 binades: the order of the additions shows in the low bits of the sum.
      for (int64_t i = 0; i < n; ++i)
        wide.data<double>()[i] = (rng.next() % 2 ? 1.0 : -1.0) * std::ldexp(1.0 + static_cast<double>(rng.next() % 1000) / 997.0,
                                                                         static_cast<int>(rng.next() % 30) - 15);
      Tensor t;
      cast_tensor(wide, dtype, t);
      for (double start : {0.0, 0.1, 1e6}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " n=" << n << " start=" << start);
        EXPECT_EQ(sum_of_squares(t, start), reference(t, start));
      }
    }
}

TEST(SumOfSquares, AnInfinityOrNaNMakesTheSumSo) {
  Tensor t = Tensor::from<float>({3}, {1.0f, std::numeric_limits<float>::infinity(), 2.0f});
  EXPECT_EQ(sum_of_squares(t), std::numeric_limits<double>::infinity());
  t.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(sum_of_squares(t)));
}

}  // namespace
}  // namespace grist
