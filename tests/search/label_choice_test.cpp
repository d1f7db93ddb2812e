// Crafted batches' labels (search/label_choice.h): each one-hot row moves to the class of the largest gain when
// that beats its own class, never to a NaN, and only float one-hot labels are accepted.
#include "search/label_choice.h"

#include <limits>

#include <gtest/gtest.h>

namespace grist {
namespace {

TEST(LabelChoice, EachRowTakesTheClassOfTheLargestGainWhenItBeatsItsOwn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor labels = Tensor::from<float>({4, 3}, {1, 0, 0,  //
                                               0, 1, 0,  //
                                               0, 0, 1,  //
                                               1, 0, 0});
  const Tensor gain = Tensor::from<float>({4, 3}, {0.1f, 0.5f, 0.2f,    // → class 1
                                                   0.3f, 0.9f, 0.2f,    // its own class is best: stays
                                                   nan, 0.0f, -1.0f,    // a NaN never wins: → class 1
                                                   nan, 7.0f, 8.0f});   // its own gain is NaN: stays
  auto changed = choose_one_hot_labels(labels, gain);
  ASSERT_TRUE(changed.is_ok()) << changed.message();
  EXPECT_EQ(*changed, 2);
  const std::vector<float> want{0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(labels.data<float>()[i], want[i]) << "element " << i;
}

TEST(LabelChoice, RefusesWhatIsNotAFloatOneHotTable) {
  Tensor ids = Tensor::from<int64_t>({2, 2}, {1, 0, 0, 1});
  EXPECT_FALSE(choose_one_hot_labels(ids, Tensor::from<int64_t>({2, 2}, {0, 0, 0, 0})).is_ok());
  Tensor labels = Tensor::from<float>({2, 2}, {1, 0, 0, 1});
  EXPECT_FALSE(choose_one_hot_labels(labels, Tensor::from<float>({2, 1}, {0, 0})).is_ok());
}

}  // namespace
}  // namespace grist
