// broadcast_loop (ops/kernel_util.h) against the definition: every output index once, in order, each operand's
// index the dot product of the output's multi-index with the operand's broadcast strides. Random shapes of rank 0
// to 5 with size-1 and broadcast dimensions, for one to three operands: the merged dimensions and the inner loops
// specialised to steps of 0 or 1 (every mask of operands) must give what the plain odometer gave.
#include <gtest/gtest.h>

#include <vector>

#include "ops/kernel_util.h"
#include "util/rng.h"

namespace grist {
namespace {

// An operand of `out`: each dimension kept or broadcast (1), sometimes dropped from the front (lower rank).
Shape random_operand(const Shape& out, Rng& rng) {
  Shape s;
  const int drop = out.rank() > 0 ? static_cast<int>(rng.below(2) * rng.below(static_cast<uint64_t>(out.rank()) + 1)) : 0;
  for (int d = drop; d < out.rank(); ++d) s.push_back(rng.below(3) == 0 ? 1 : out[d]);
  return s;
}

template <int N>
void expect_definition(const Shape& out, const std::array<Shape, N>& operands) {
  std::array<std::array<int64_t, Shape::kMaxRank>, N> strides;
  for (int k = 0; k < N; ++k) strides[k] = broadcast_strides(operands[k], out);
  std::vector<std::array<int64_t, N>> seen;
  int64_t next = 0;
  broadcast_loop<N>(out, strides, [&](int64_t o, const std::array<int64_t, N>& idx) {
    ASSERT_EQ(o, next++) << out.str();
    seen.push_back(idx);
  });
  ASSERT_EQ(static_cast<int64_t>(seen.size()), out.numel()) << out.str();
  for (int64_t o = 0; o < out.numel(); ++o) {
    const auto at = unravel(o, out);
    for (int k = 0; k < N; ++k) {
      int64_t want = 0;
      for (int d = 0; d < out.rank(); ++d) want += at[d] * strides[k][d];
      ASSERT_EQ(seen[static_cast<size_t>(o)][k], want)
          << "output " << out.str() << " operand " << k << " " << operands[k].str() << " at " << o;
    }
  }
}

TEST(BroadcastLoop, VisitsEveryOutputInOrderWithTheDefinitionsIndices) {
  Rng rng(2026);
  for (int trial = 0; trial < 400; ++trial) {
    Shape out;
    const auto rank = static_cast<int>(rng.below(6));  // 0 to 5
    for (int d = 0; d < rank; ++d) out.push_back(rng.below(4) == 0 ? 1 : 1 + static_cast<int64_t>(rng.below(5)));
    expect_definition<1>(out, {random_operand(out, rng)});
    expect_definition<2>(out, {random_operand(out, rng), random_operand(out, rng)});
    expect_definition<3>(out, {random_operand(out, rng), random_operand(out, rng), random_operand(out, rng)});
  }
  // A per-channel bias over [N, C, H, W], and an empty output.
  expect_definition<2>(Shape{2, 3, 4, 5}, {Shape{2, 3, 4, 5}, Shape{1, 3, 1, 1}});
  expect_definition<1>(Shape{2, 0, 3}, {Shape{1, 0, 3}});
}

}  // namespace
}  // namespace grist
