// What a hunt's text report says of a race's finding (report/hunt_report.h): which twin found it, and how.
#include <gtest/gtest.h>

#include "report/hunt_report.h"
#include "support/graph_builder.h"

using namespace grist;

namespace {
std::string race_line(const HazardOutcome& o) {
  const Graph g =
      grist::testing::GraphBuilder().input("x", DType::Float32, {1}).node("Log", {"x"}, {"y"}).output("y").build();
  HuntReport r;
  const std::string text = outcome_text(g, r, o, HuntContext{}, nullptr);
  const auto at = text.find("  race: ");
  return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
}

HazardOutcome training_race_finding(FindingClass c, int64_t training_from) {
  HazardOutcome o;
  o.triggered = true;
  o.finding_class = c;
  o.training_race = true;
  o.training_from = training_from;
  o.course_iterations = 50;
  return o;
}
}  // namespace

TEST(RaceReport, TheTrainingRacesCraftedFindingSaysWhereCraftingBegan) {
  EXPECT_EQ(race_line(training_race_finding(FindingClass::TrainingReached, 2)),
            "  race: the training race found it (crafted training batches from iteration 2, on a second thread); the "
            "inputs, beside it, had reached nothing of their own in 50 iterations");
}

// After an undone attempt the twin's own inputs and training may reach it (input-reached, training_from 0): the
// line must not claim crafted batches from an iteration 0.
TEST(RaceReport, TheTrainingRacesInputReachedFindingSaysItsAttemptsWereUndone) {
  const std::string line = race_line(training_race_finding(FindingClass::InputReached, 0));
  EXPECT_NE(line.find("by its inputs and the program's own training, its crafted attempts undone"),
            std::string::npos) << line;
  EXPECT_EQ(line.find("iteration 0"), std::string::npos) << line;
}
