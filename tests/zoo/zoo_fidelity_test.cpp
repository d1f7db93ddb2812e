// The project's fidelity claim (docs/RESULTS.md): the eleven PyTorch toys whose scripts the study replayed
// trigger at exactly the study's iteration, in its counting ([expect] counter_offset), by default (through
// the benchmark runner, as `grist bench` hunts them) and with the study's own loop (--faithful), and on the
// op the subject's facts name. Budgets by iteration count: nothing here depends on the machine's speed.
// Needs the zoo exported (make test does it: /usr/bin/python3 zoo/zoo_export.py).
#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "search/benchmark.h"
#include "search/hunt.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kZoo = fs::path(GRIST_SOURCE_DIR) / "zoo";
const char* const kFaithfulToys[] = {"23", "26", "27", "32", "33", "37", "38", "46", "54", "56", "57"};
constexpr int64_t kMaxIterations = 5000;  // every toy fires before 900; the weights would join at 1,251

}  // namespace

TEST(ZooFidelity, TheStudysReplayedToysTriggerAtItsExactIterationThroughTheBenchmark) {
  int checked = 0;
  for (const char* id : kFaithfulToys) {
    SCOPED_TRACE(std::string("zoo subject ") + id);
    BenchOptions o;
    o.zoo_dir = kZoo.string();
    o.runs = 1;
    o.time_limit_s = 600;  // a backstop only: max_iterations bounds the run
    o.max_iterations = kMaxIterations;
    int done = 0;
    const SubjectResult r = run_subject(id, o, done, 1);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_TRUE(r.study_iterations.has_value());
    ASSERT_EQ(r.triggered, 1);
    EXPECT_EQ(r.expected_op_hits, 1) << r.producer;
    EXPECT_EQ(r.median_study_count(), *r.study_iterations) << r.producer;
    EXPECT_EQ(r.weight_search_hits, 0);  // the inputs and the model's own training, as in the study
    ++checked;
  }
  EXPECT_EQ(checked, 11);
}

TEST(ZooFidelity, TheStudysOwnLoopGivesTheSameExactIterations) {
  int checked = 0;
  for (const char* id : kFaithfulToys) {
    SCOPED_TRACE(std::string("zoo subject ") + id);
    auto m = read_manifest((kZoo / id / "manifest.toml").string());
    ASSERT_TRUE(m.is_ok()) << m.message();
    ASSERT_TRUE(fs::exists(m->model)) << m->model << " missing: run /usr/bin/python3 zoo/zoo_export.py";
    auto g = import_onnx_file(m->model);
    ASSERT_TRUE(g.is_ok()) << g.message();
    HuntOptions h;
    h.manifest = *m;
    h.manifest.search.time_limit = 10;  // minutes, a backstop
    h.manifest.search.max_iterations = kMaxIterations;
    h.manifest.search.faithful = true;  // as --faithful sets it
    h.manifest.search.weight_change = 0;
    h.manifest.search.switch_score = SwitchScore::Fifo;
    h.batch_size = m->batch_size > 0 ? m->batch_size : 1;
    auto report = hunt(*g, h);
    ASSERT_TRUE(report.is_ok()) << report.message();
    const HazardOutcome* fired = nullptr;
    for (const HazardOutcome& out : report->outcomes)
      if (out.triggered) fired = &out;
    ASSERT_NE(fired, nullptr);
    EXPECT_EQ(fired->event.op_type, m->expect.op);
    EXPECT_EQ(fired->pass, TriggerPass::Monitored);
    ASSERT_TRUE(m->expect.study_iterations.has_value());
    EXPECT_EQ(m->expect.study_count(fired->iterations), *m->expect.study_iterations);
    ++checked;
  }
  EXPECT_EQ(checked, 11);
}
