// The switching rule end to end (GRIST.md §3: every switch_every iterations the k lowest-scoring rows of the
// persistent batch are replaced by fresh ones): zoo subject 3, a softmax regression on 100 Fashion-MNIST
// rows (k = 5) that the inputs alone trigger, hunted with the study's intended score, with its shipped FIFO,
// and without switching. Which rows are replaced decides when log(softmax) fires, so each rule's exact
// iteration is pinned: a change of the rule, the score or the row bookkeeping shows. Seed 1, budgets by
// iteration count. Needs the zoo exported and Fashion-MNIST (make test has both).
#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "search/hunt.h"

using namespace grist;

namespace {

HazardOutcome hunt_subject_3(const std::function<void(SearchConfig&)>& rule) {
  const std::string dir = std::string(GRIST_SOURCE_DIR) + "/zoo/3/";
  auto m = read_manifest(dir + "manifest.toml");
  EXPECT_TRUE(m.is_ok()) << m.message();
  EXPECT_TRUE(std::filesystem::exists(m->model)) << m->model << " missing: run /usr/bin/python3 zoo/zoo_export.py";
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  if (!m || !g) return {};
  HuntOptions h;
  h.manifest = *m;
  h.manifest.search.seed = 1;
  h.manifest.search.weight_change = 0;  // the inputs alone, as GRIST (--reach inputs): no weight steps
  h.manifest.search.training_share = 0;  // and no crafted training batches
  h.manifest.search.max_iterations = 3000;
  h.manifest.search.time_limit = 10;  // minutes, a backstop
  rule(h.manifest.search);
  h.batch_size = m->batch_size;
  auto r = hunt(*g, h);
  EXPECT_TRUE(r.is_ok()) << r.message();
  if (!r || r->outcomes.empty()) return {};
  return r->outcomes.front();
}

}  // namespace

TEST(ZooSwitching, EachRuleReplacesOtherRowsAndFiresAtItsOwnIteration) {
  const HazardOutcome score = hunt_subject_3([](SearchConfig&) {});
  const HazardOutcome fifo = hunt_subject_3([](SearchConfig& c) { c.switch_score = SwitchScore::Fifo; });
  const HazardOutcome none = hunt_subject_3([](SearchConfig& c) {
    c.variant = Variant::GristNs;
    c.switch_data = false;
  });
  for (const HazardOutcome* o : {&score, &fifo, &none}) {
    ASSERT_TRUE(o->triggered);
    EXPECT_EQ(o->event.node_name, "/Log");
    EXPECT_EQ(o->pass, TriggerPass::Monitored);
    EXPECT_EQ(o->weights_from, 0);
  }
  EXPECT_EQ(score.iterations, 1142);  // as in docs/RESULTS.md (subject 3, time budget: no weights joined)
  EXPECT_EQ(fifo.iterations, 984);
  EXPECT_EQ(none.iterations, 2248);  // no fresh rows: the persistent batch must get there by itself
}
