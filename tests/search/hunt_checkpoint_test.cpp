// A hunt resumed from a manifest's train.checkpoint (engine/checkpoint.h): the model's weights are the
// checkpoint's for the whole hunt, a checkpoint of the model's own weights changes nothing, and the witness
// carries the checkpoint's weights so that it replays on the model's own file.
#include <gtest/gtest.h>

#include "config/manifest.h"
#include "data/npz.h"
#include "data/test_files.h"
#include "search/hunt.h"
#include "support/test_models.h"

namespace grist {
namespace {

HazardOutcome hunt_logreg(const std::function<void(Manifest&)>& tweak) {
  const auto l = testing::load_test_model("logreg_toy");
  HuntOptions o;
  o.manifest = l.manifest;
  o.manifest.search.faithful = true;
  o.manifest.search.time_limit = 10.0;  // minutes: a backstop; the budget is the iteration count
  o.manifest.search.max_iterations = 5000;
  tweak(o.manifest);
  o.batch_size = o.manifest.batch_size;
  auto r = hunt(l.graph, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() && !r->outcomes.empty() ? r->outcomes.front() : HazardOutcome{};
}

TEST(HuntCheckpoint, TheHuntStartsFromTheCheckpointsWeights) {
  testing::ScratchDir dir;
  // The model's own (zero) weights at step 0: the hunt is the one without a checkpoint (iteration 235).
  ASSERT_TRUE(write_npz(dir.path("same.npz"), {{"weight:W", Tensor::from<float>(Shape{2, 1}, {0, 0})},
                                               {"weight:b", Tensor::from<float>(Shape{1}, {0})},
                                               {"optimizer.steps", Tensor::scalar<int64_t>(0)}}));
  const HazardOutcome same = hunt_logreg([&](Manifest& m) { m.train.checkpoint = dir.path("same.npz"); });
  ASSERT_TRUE(same.triggered);
  EXPECT_EQ(same.iterations, 235);

  // Weights a program had trained further, b held fixed (only W trains): another run, whose witness holds the
  // checkpoint's b as well as the trained W.
  ASSERT_TRUE(write_npz(dir.path("trained.npz"), {{"weight:W", Tensor::from<float>(Shape{2, 1}, {2, -1})},
                                                  {"weight:b", Tensor::from<float>(Shape{1}, {-3})},
                                                  {"optimizer.steps", Tensor::scalar<int64_t>(100)}}));
  const HazardOutcome resumed = hunt_logreg([&](Manifest& m) {
    m.train.checkpoint = dir.path("trained.npz");
    m.train.all_params = false;
    m.train.params = {"W"};
  });
  ASSERT_TRUE(resumed.triggered);
  EXPECT_NE(resumed.iterations, 235);
  ASSERT_EQ(resumed.witness.weights.count("b"), 1u);
  EXPECT_EQ(resumed.witness.weights.at("b").get_as_double(0), -3.0);
  EXPECT_EQ(resumed.witness.weights.count("W"), 1u);
  EXPECT_GE(resumed.training_steps, 100 + resumed.iterations - 1) << "the optimizer counts on from the checkpoint's";
  EXPECT_LE(resumed.training_steps, 100 + resumed.iterations);

  // A checkpoint that does not fit is an error of the hunt, naming the file.
  ASSERT_TRUE(write_npz(dir.path("bad.npz"), {{"weight:W", Tensor::from<float>(Shape{2}, {0, 0})}}));
  const auto l = testing::load_test_model("logreg_toy");
  HuntOptions o;
  o.manifest = l.manifest;
  o.manifest.train.checkpoint = dir.path("bad.npz");
  o.batch_size = 6;
  auto bad = hunt(l.graph, o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message(), dir.path("bad.npz") + ": weight:W is float32 [2], but the model's is float32 [2, 1]");
}

}  // namespace
}  // namespace grist
