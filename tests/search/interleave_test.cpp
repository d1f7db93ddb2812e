// hunt --all's turns (search/interleave.h), with a stand-in for the searches: who gets which turn and budget,
// where a trigger is counted, and what the next turn starts from.
#include "search/interleave.h"

#include <gtest/gtest.h>

namespace grist {
namespace {

struct Scripted {
  std::vector<HazardSite> sites;
  std::vector<PlannedHazard> plan;
  HuntOptions options;
  std::vector<Turn> turns;              // as asked for
  std::vector<bool> started_carried;    // whether each turn started from a carried state

  explicit Scripted(int hazards, int64_t max_iterations) {
    sites.resize(static_cast<size_t>(hazards));
    for (int i = 0; i < hazards; ++i) {
      sites[static_cast<size_t>(i)].id = i + 1;
      sites[static_cast<size_t>(i)].node_name = "/h" + std::to_string(i + 1);
    }
    for (const auto& s : sites) plan.push_back({&s, 1.0});
    options.manifest.search.time_limit = 10;  // minutes: never the limit here
    options.manifest.search.max_iterations = max_iterations;
  }

  // `fires(turn number, hazard index)` → the site id its node produced (0: no trigger).
  Result<HuntReport> run(const std::function<int(size_t, size_t)>& fires) {
    HuntReport report;
    RunTurn turn_fn = [&](const Turn& t, CarriedState& carried) -> Result<HazardOutcome> {
      const size_t number = turns.size();
      turns.push_back(t);
      started_carried.push_back(carried.valid);
      HazardOutcome out;
      out.site = *plan[t.hazard].site;
      out.iterations = t.max_iterations;
      const int fired = fires(number, t.hazard);
      if (fired) {
        out.triggered = true;
        out.fired_site = fired;
        out.iterations = 1;
      }
      carried.valid = true;
      return out;
    };
    GRIST_TRY(hunt_interleaved(plan, options, std::chrono::steady_clock::now(), turn_fn, report));
    return report;
  }
};

TEST(HuntInterleaved, TwoRoundsSplitEachHazardsIterationsAndCarryTheStateForward) {
  Scripted s(3, 101);
  auto r = s.run([](size_t, size_t) { return 0; });
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(s.turns.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(s.turns[k].hazard, k % 3);
    EXPECT_EQ(s.turns[k].max_iterations, k < 3 ? 51 : 50);  // 101 in all, as a hunt of that hazard alone
  }
  EXPECT_FALSE(s.started_carried[0]);
  for (size_t k = 1; k < 6; ++k) EXPECT_TRUE(s.started_carried[k]) << k;
  ASSERT_EQ(r->outcomes.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(r->outcomes[i].triggered);
    EXPECT_EQ(r->outcomes[i].site.id, static_cast<int>(i) + 1);  // never triggered: in plan order, at the end
    EXPECT_EQ(r->outcomes[i].iterations, 101);
  }
}

TEST(HuntInterleaved, ATriggerCountsForTheHazardWhoseNodeProducedItAndThatHazardLosesItsTurn) {
  Scripted s(3, 10);
  // The first turn (hazard 1's objective) fires at hazard 3's node; hazard 2's first turn fires at its own.
  auto r = s.run([](size_t turn, size_t hazard) { return turn == 0 ? 3 : (hazard == 1 ? 2 : 0); });
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->outcomes.size(), 3u);
  EXPECT_EQ(r->outcomes[0].site.id, 3);
  EXPECT_TRUE(r->outcomes[0].triggered);
  EXPECT_EQ(r->outcomes[1].site.id, 2);
  EXPECT_TRUE(r->outcomes[1].triggered);
  EXPECT_EQ(r->outcomes[2].site.id, 1);
  EXPECT_FALSE(r->outcomes[2].triggered);
  // Turns: hazard 1 (fires at 3 in its first iteration), hazard 2 (fires), then hazard 1 alone gets all of its
  // iterations left.
  ASSERT_EQ(s.turns.size(), 3u);
  EXPECT_EQ(s.turns[2].hazard, 0u);
  EXPECT_EQ(s.turns[2].max_iterations, 9);
  EXPECT_EQ(r->outcomes[2].iterations, 10);
}

TEST(HuntInterleaved, AFailureOfAHazardAlreadyFoundIsNoFindingAndTheNextTurnStartsFresh) {
  Scripted s(2, 10);
  // Hazard 1 fires at once; hazard 2's turns keep meeting hazard 1's failure.
  auto r = s.run([](size_t turn, size_t) { return turn == 0 ? 1 : (turn == 1 ? 1 : 0); });
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->outcomes.size(), 2u);
  EXPECT_EQ(r->outcomes[0].site.id, 1);
  EXPECT_TRUE(r->outcomes[0].triggered);
  EXPECT_EQ(r->outcomes[1].site.id, 2);
  EXPECT_FALSE(r->outcomes[1].triggered);
  EXPECT_EQ(r->outcomes[1].fired_site, 0);
  ASSERT_EQ(s.turns.size(), 3u);
  EXPECT_TRUE(s.started_carried[1]);
  EXPECT_FALSE(s.started_carried[2]);  // after the repeat: from the initial model
}

}  // namespace
}  // namespace grist
