// Redrawn fixed inputs end to end: zoo subject 15, a Value Iteration Network whose state positions S1 and S2 are fed
// from the dataset's current position and advance every iteration while X and the labels stay the first batch (the
// study's loop, SUBJECTS.md). Under TensorFlow's flush-to-zero the inputs alone reach log(softmax) = −inf; the
// iteration is pinned, so a change of the redraw, of the flush or of the search shows. Before commit c13ab3a S1 and
// S2 were never redrawn and it fired at 327; with denormals kept it needs crafted training (docs/RESULTS.md,
// session 14). Seed 1, a budget by iteration count. Needs the zoo exported (make test does it).
#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "search/hunt.h"

using namespace grist;

namespace {

HazardOutcome hunt_subject_15(bool ftz) {
  const std::string dir = std::string(GRIST_SOURCE_DIR) + "/zoo/15/";
  auto m = read_manifest(dir + "manifest.toml");
  EXPECT_TRUE(m.is_ok()) << m.message();
  EXPECT_TRUE(std::filesystem::exists(m->model)) << m->model << " missing: run /usr/bin/python3 zoo/zoo_export.py";
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  if (!m || !g) return {};
  HuntOptions h;
  h.manifest = *m;
  h.manifest.ftz = ftz;
  h.manifest.search.seed = 1;
  h.manifest.search.weight_change = 0;   // the inputs alone (--reach inputs)
  h.manifest.search.training_share = 0;  // and no crafted training batches
  h.manifest.search.max_iterations = 1500;
  h.manifest.search.time_limit = 10;  // minutes, a backstop
  h.batch_size = m->batch_size;
  auto r = hunt(*g, h);
  EXPECT_TRUE(r.is_ok()) << r.message();
  if (!r || r->outcomes.empty()) return {};
  return r->outcomes.front();
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
