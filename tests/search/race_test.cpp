// Which finding a hunt with the races reports (search/race.h). Against the weights twin, the program's course keeps
// an input- or training-reached finding however late; against the training twin, an input-reached one however late
// and a training-reached one when first; otherwise the first trigger wins, the course on a tie.
#include <gtest/gtest.h>

#include "search/race.h"

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

TEST(TrainingRace, WithoutATwinFindingTheCourseIsReported) {
  HazardOutcome o = settle_training_race(found(FindingClass::WeightsPerturbed, 500, 40), none(300, 60), false);
  EXPECT_FALSE(o.training_race);
  EXPECT_EQ(o.iterations, 500);
}

TEST(TrainingRace, AnInputReachedFindingOfTheCourseWinsHoweverLate) {
  HazardOutcome o = settle_training_race(found(FindingClass::InputReached, 900, 12.5),
                                         found(FindingClass::TrainingReached, 10, 0.75), false);
  EXPECT_EQ(o.finding_class, FindingClass::InputReached);
  EXPECT_FALSE(o.training_race);
  EXPECT_DOUBLE_EQ(o.seconds, 12.5);
}

TEST(TrainingRace, BetweenTwoTrainingReachedFindingsTheFirstWins) {
  HazardOutcome twin = settle_training_race(found(FindingClass::TrainingReached, 60, 10.5),
                                            found(FindingClass::TrainingReached, 10, 0.75), false);
  EXPECT_TRUE(twin.training_race);
  EXPECT_EQ(twin.iterations, 10);
  EXPECT_EQ(twin.course_iterations, 60);
  HazardOutcome course = settle_training_race(found(FindingClass::TrainingReached, 9, 2.0),
                                              found(FindingClass::TrainingReached, 10, 0.75), true);
  EXPECT_FALSE(course.training_race);  // judged in iterations: 9 before 10, whatever the seconds
  HazardOutcome tie = settle_training_race(found(FindingClass::TrainingReached, 10, 2.0),
                                           found(FindingClass::TrainingReached, 10, 0.75), true);
  EXPECT_FALSE(tie.training_race);
}

TEST(TrainingRace, ItsTrainingReachedFindingStandsOverTheCoursesWeightsPerturbedOneOrNone) {
  for (HazardOutcome course : {found(FindingClass::WeightsPerturbed, 5, 0.1), none(400, 30)}) {
    HazardOutcome o = settle_training_race(course, found(FindingClass::TrainingReached, 10, 0.75), false);
    EXPECT_TRUE(o.training_race);
    EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  }
}

// The hunt settles the training race first, then the weights race: the weights twin's earlier trigger is noted
// beside the training twin's finding, which is reported.
TEST(TrainingRace, ThenTheWeightsRaceNotesItsEarlierTrigger) {
  HazardOutcome o = settle_weights_race(
      settle_training_race(none(400, 10), found(FindingClass::TrainingReached, 30, 2.5), false),
      found(FindingClass::WeightsPerturbed, 6, 0.4), false);
  EXPECT_TRUE(o.training_race);
  EXPECT_FALSE(o.weights_race);
  EXPECT_EQ(o.race_iterations, 6);
  EXPECT_EQ(o.course_iterations, 400);
}
