// Crafted batches' labels (search/label_choice.h): each one-hot row moves to the class of the largest gain when
// that beats its own class, never to a NaN, writing the values the input's preprocessing gives a label; rows that
// are not one class are left alone, and only float one-hot tables are accepted.
#include "search/label_choice.h"

#include <limits>

#include <gtest/gtest.h>

namespace grist {
namespace {

OneHotValues plain(int64_t classes) {
  InputSpec spec;
  spec.one_hot = classes;
  auto v = one_hot_values(spec, classes, 2);
  EXPECT_TRUE(v.has_value());
  return v.value_or(OneHotValues{});
}

TEST(LabelChoice, EachRowTakesTheClassOfTheLargestGainWhenItBeatsItsOwn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor labels = Tensor::from<float>({5, 3}, {1, 0, 0,  //
                                               0, 1, 0,  //
                                               0, 0, 1,  //
                                               1, 0, 0,  //
                                               0, 0, 0});
  const Tensor gain = Tensor::from<float>({5, 3}, {0.1f, 0.5f, 0.2f,    // → class 1
                                                   0.3f, 0.9f, 0.2f,    // its own class is best: stays
                                                   nan, 0.0f, -1.0f,    // a NaN never wins: → class 1
                                                   nan, 7.0f, 8.0f,     // its own gain is NaN: stays
                                                   0.0f, 5.0f, 0.0f});  // no class (an ignored row): stays
  auto changed = choose_one_hot_labels(labels, gain, plain(3));
  ASSERT_TRUE(changed.is_ok()) << changed.message();
  EXPECT_EQ(*changed, 2);
  const std::vector<float> want{0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(labels.data<float>()[i], want[i]) << "element " << i;
}

// Label smoothing written as preprocessing (scale 0.9, offset 0.05): a chosen row holds 0.95 and 0.05, as the
// data's rows do, never a raw 1 and 0.
TEST(LabelChoice, AChosenRowHoldsThePreprocessedValuesOfTheLabelSet) {
  InputSpec spec;
  spec.one_hot = 2;
  spec.scale = 0.9;
  spec.offset = 0.05;
  const auto values = one_hot_values(spec, 2, 2);
  ASSERT_TRUE(values.has_value());
  Tensor labels = Tensor::from<double>({1, 2}, {0.05, 0.95});
  auto changed = choose_one_hot_labels(labels, Tensor::from<double>({1, 2}, {1.0, 0.0}), *values);
  ASSERT_TRUE(changed.is_ok()) << changed.message();
  EXPECT_EQ(*changed, 1);
  EXPECT_DOUBLE_EQ(labels.data<double>()[0], 0.95);
  EXPECT_DOUBLE_EQ(labels.data<double>()[1], 0.05);
  // Per-class mean/std along the class axis give each class its own values; along another axis there is no
  // label set to choose from per row.
  spec.mean = {0.5, 0.25};
  spec.channel_axis = -1;
  const auto per_class = one_hot_values(spec, 2, 2);
  ASSERT_TRUE(per_class.has_value());
  EXPECT_DOUBLE_EQ(per_class->on[1], 0.95 - 0.25);
  EXPECT_DOUBLE_EQ(per_class->off[0], 0.05 - 0.5);
  spec.channel_axis = 0;
  EXPECT_FALSE(one_hot_values(spec, 2, 2).has_value());
}

TEST(LabelChoice, RefusesWhatIsNotAFloatOneHotTable) {
  Tensor ids = Tensor::from<int64_t>({2, 2}, {1, 0, 0, 1});
  EXPECT_FALSE(choose_one_hot_labels(ids, Tensor::from<int64_t>({2, 2}, {0, 0, 0, 0}), plain(2)).is_ok());
  Tensor labels = Tensor::from<float>({2, 2}, {1, 0, 0, 1});
  EXPECT_FALSE(choose_one_hot_labels(labels, Tensor::from<float>({2, 1}, {0, 0}), plain(2)).is_ok());
  EXPECT_FALSE(choose_one_hot_labels(labels, Tensor::from<float>({2, 2}, {0, 0, 0, 0}), plain(3)).is_ok());
}

}  // namespace
}  // namespace grist
