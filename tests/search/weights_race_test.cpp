// Which finding a hunt with the weights race reports (search/weights_race.h): the program's course keeps an
// input- or training-reached finding however late; otherwise the first trigger wins, the course on a tie.
#include <gtest/gtest.h>

#include "search/weights_race.h"

using namespace grist;

namespace {
HazardOutcome found(FindingClass c, int64_t iterations, double seconds) {
  HazardOutcome o;
  o.triggered = true;
  o.finding_class = c;
  o.iterations = iterations;
  o.seconds = seconds;
  return o;
}
HazardOutcome none(int64_t iterations, double seconds) {
  HazardOutcome o;
  o.iterations = iterations;
  o.seconds = seconds;
  return o;
}
}  // namespace

TEST(WeightsRace, WithoutATwinFindingTheCourseIsReported) {
  HazardOutcome o = settle_weights_race(none(500, 60), none(300, 60), false);
  EXPECT_FALSE(o.triggered);
  EXPECT_FALSE(o.weights_race);
  EXPECT_EQ(o.iterations, 500);
}

TEST(WeightsRace, TheTwinsFindingStandsWhenTheCourseReachesNothing) {
  HazardOutcome o = settle_weights_race(none(400, 30), found(FindingClass::WeightsPerturbed, 10, 0.75), false);
  ASSERT_TRUE(o.triggered);
  EXPECT_TRUE(o.weights_race);
  EXPECT_EQ(o.iterations, 10);
  EXPECT_DOUBLE_EQ(o.seconds, 0.75);
  EXPECT_EQ(o.course_iterations, 400);
}

TEST(WeightsRace, AnInputOrTrainingReachedFindingOfTheCourseWinsHoweverLate) {
  for (FindingClass c : {FindingClass::InputReached, FindingClass::TrainingReached}) {
    HazardOutcome o = settle_weights_race(found(c, 900, 12.5), found(FindingClass::WeightsPerturbed, 10, 0.75), false);
    EXPECT_EQ(o.finding_class, c);
    EXPECT_FALSE(o.weights_race);
    EXPECT_DOUBLE_EQ(o.seconds, 12.5);
    EXPECT_DOUBLE_EQ(o.race_seconds, 0.75);  // noted: the race triggered first
    EXPECT_EQ(o.race_iterations, 10);
  }
  HazardOutcome first = settle_weights_race(found(FindingClass::InputReached, 5, 0.1),
                                            found(FindingClass::WeightsPerturbed, 10, 0.75), false);
  EXPECT_DOUBLE_EQ(first.race_seconds, 0);  // the course was first: nothing to note
}

TEST(WeightsRace, BetweenTwoWeightsPerturbedFindingsTheFirstWins) {
  HazardOutcome twin = settle_weights_race(found(FindingClass::WeightsPerturbed, 130, 31),
                                           found(FindingClass::WeightsPerturbed, 10, 0.75), false);
  EXPECT_TRUE(twin.weights_race);
  EXPECT_EQ(twin.iterations, 10);
  HazardOutcome course = settle_weights_race(found(FindingClass::WeightsPerturbed, 9, 2.0),
                                             found(FindingClass::WeightsPerturbed, 10, 0.75), true);
  EXPECT_FALSE(course.weights_race);  // judged in iterations: 9 before 10, whatever the seconds
  EXPECT_EQ(course.iterations, 9);
  HazardOutcome tie = settle_weights_race(found(FindingClass::WeightsPerturbed, 10, 2.0),
                                          found(FindingClass::WeightsPerturbed, 10, 0.75), true);
  EXPECT_FALSE(tie.weights_race);
}

TEST(WeightsRace, AnInterruptedCourseKeepsTheTwinsFindingAndSaysSo) {
  HazardOutcome interrupted = none(50, 3);
  interrupted.stopped = "interrupted";
  HazardOutcome o = settle_weights_race(interrupted, found(FindingClass::WeightsPerturbed, 10, 0.75), false);
  EXPECT_TRUE(o.triggered);
  EXPECT_EQ(o.stopped, "interrupted");
}
