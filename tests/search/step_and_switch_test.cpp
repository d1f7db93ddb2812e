// The sign step and the switching rule, on hand-made tensors and histories.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "search/sign_step.h"
#include "search/switching.h"

using namespace grist;

TEST(SignStep, MovesAgainstTheGradientSignByEpsilonOnly) {
  Tensor x = Tensor::from<float>({2, 2}, {1, 1, 1, 1});
  Tensor g = Tensor::from<float>({2, 2}, {3.0f, -1e-30f, 0.0f, -7.0f});
  RowStepStats s = sign_step(x, g, 0.25, std::nullopt);
  EXPECT_EQ(x.data<float>()[0], 0.75f);
  EXPECT_EQ(x.data<float>()[1], 1.25f);
  EXPECT_EQ(x.data<float>()[2], 1.0f);  // zero gradient: no step
  EXPECT_EQ(x.data<float>()[3], 1.25f);
  EXPECT_DOUBLE_EQ(s.updated[0], 1.0);
  EXPECT_DOUBLE_EQ(s.updated[1], 0.5);
}

TEST(SignStep, NanGradientNeverLeaksIntoTheInput) {
  Tensor x = Tensor::from<float>({1, 2}, {1, 2});
  Tensor g = Tensor::from<float>({1, 2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f});
  sign_step(x, g, 0.5, std::nullopt);
  EXPECT_EQ(x.data<float>()[0], 1.0f);
  EXPECT_EQ(x.data<float>()[1], 1.5f);
}

TEST(SignStep, ClipHoldsValuesInRangeAndCountsThem) {
  Tensor x = Tensor::from<double>({1, 2}, {0.1, 0.5});
  Tensor g = Tensor::from<double>({1, 2}, {1.0, 1.0});
  RowStepStats s = sign_step(x, g, 0.15, std::pair{0.0, 1.0});
  EXPECT_DOUBLE_EQ(x.data<double>()[0], 0.0);
  EXPECT_DOUBLE_EQ(x.data<double>()[1], 0.35);
  EXPECT_DOUBLE_EQ(s.clipped[0], 0.5);
  EXPECT_DOUBLE_EQ(s.updated[0], 1.0);
}

// Rows long enough for the vectorised loop (and its scalar tail: 1,003 values a row), gradients of both signs, zero,
// NaN and tiny, values at and beyond the clip bounds: every value and count as the plain per-element rule gives.
template <class T>
void expect_sign_step_matches_the_rule(bool clip) {
  const int64_t rows = 3, per_row = 1003;
  Tensor x(dtype_of<T>(), Shape{rows, per_row}), g(dtype_of<T>(), Shape{rows, per_row});
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  const T specials[] = {T(0), std::numeric_limits<T>::quiet_NaN(), T(-0.0), std::numeric_limits<T>::denorm_min()};
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<T>()[i] = static_cast<T>(next() % 1300) / T(1000) - T(0.15);  // [-0.15, 1.15): some beyond [0, 1]
    g.data<T>()[i] = next() % 7 == 0 ? specials[next() % 4] : static_cast<T>(static_cast<int64_t>(next() % 200) - 100);
  }
  const Tensor x0 = x;
  const double eps = 0.1;
  const auto bounds = clip ? std::optional<std::pair<double, double>>(std::pair{0.0, 1.0}) : std::nullopt;
  RowStepStats s = sign_step(x, g, eps, bounds);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t moved = 0, held = 0;
    for (int64_t j = r * per_row; j < (r + 1) * per_row; ++j) {
      const T gj = g.data<T>()[j], xj = x0.data<T>()[j];
      T want = xj;
      if (gj > T(0) || gj < T(0)) {
        T to = xj - (gj > T(0) ? static_cast<T>(eps) : -static_cast<T>(eps));
        if (clip) {
          const T c = std::min(std::max(to, T(0)), T(1));
          held += c != to;
          to = c;
        }
        moved += to != xj;
        want = to;
      }
      ASSERT_EQ(x.data<T>()[j], want) << "element " << j;
    }
    EXPECT_DOUBLE_EQ(s.updated[static_cast<size_t>(r)], static_cast<double>(moved) / per_row);
    EXPECT_DOUBLE_EQ(s.clipped[static_cast<size_t>(r)], static_cast<double>(held) / per_row);
  }
}

TEST(SignStep, LongRowsFollowTheRuleElementByElement) {
  expect_sign_step_matches_the_rule<float>(true);
  expect_sign_step_matches_the_rule<float>(false);
  expect_sign_step_matches_the_rule<double>(true);
  expect_sign_step_matches_the_rule<double>(false);
}

TEST(Switching, NoSwitchingForBatchesOf19OrFewer) {
  EXPECT_EQ(rows_to_switch(0.05, 19), 0);
  EXPECT_EQ(rows_to_switch(0.05, 20), 1);
  EXPECT_EQ(rows_to_switch(0.05, 100), 5);
}

TEST(Switching, FifoReplacesTheOldestRows) {
  RowHistory h(4);
  h.entered_at(0, 100);
  h.entered_at(2, 50);
  auto rows = choose_rows(h, 200, 2, SwitchScore::Fifo);
  EXPECT_EQ(rows, (std::vector<int64_t>{1, 3}));  // entered at 0, lower index first
}

TEST(Switching, ScoreReplacesRowsThatStoppedMovingOrOnlyHitTheClip) {
  RowHistory h(3);
  h.add({1.0, 0.0, 1.0}, {0.0, 0.0, 1.0});  // row 0 moved freely; row 1 never moved; row 2 moved into the clip
  auto rows = choose_rows(h, 100, 2, SwitchScore::Score);
  EXPECT_EQ(rows, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(h.score(0, 100), 2.0 / (100 + 1e-7));
}
