// Redrawn fixed inputs end to end: zoo subject 15, a Value Iteration Network whose state positions S1 and S2 are fed
// from the dataset's current position and advance every iteration while X and the labels stay the first batch (the
// study's loop, SUBJECTS.md). Under TensorFlow's flush-to-zero the inputs alone reach log(softmax) = −inf; the
// iteration is pinned, so a change of the redraw, of the flush or of the search shows. Before commit c13ab3a S1 and
// S2 were never redrawn and it fired at 327; with denormals kept it needs crafted training (docs/RESULTS.md,
// session 14). Seed 1, a budget by iteration count. Needs the zoo exported (make test does it).
#include <gtest/gtest.h>

#include "config/manifest.h"
#include "support/zoo_hunt.h"

using namespace grist;

namespace {

HazardOutcome hunt_subject_15(bool ftz) {
  return grist::testing::hunt_zoo_inputs_only("15", 1500, [&](Manifest& m) { m.ftz = ftz; });
}

}  // namespace

TEST(ZooRedrawnInputs, Subject15FiresFromTheInputsUnderFlushToZeroAtItsIteration) {
  auto m = read_manifest(std::string(GRIST_SOURCE_DIR) + "/zoo/15/manifest.toml");
  ASSERT_TRUE(m.is_ok()) << m.message();
  EXPECT_TRUE(m->ftz) << "the manifest runs the TensorFlow program with its CPU kernels' flush-to-zero";
  const HazardOutcome flushed = hunt_subject_15(true);
  EXPECT_TRUE(flushed.triggered);
  EXPECT_EQ(flushed.finding_class, FindingClass::InputReached);
  EXPECT_EQ(flushed.iterations, 942);
  const HazardOutcome kept = hunt_subject_15(false);  // the softmax must reach exp(−103.9): not in 1,500
  EXPECT_FALSE(kept.triggered);
}
