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
