#include "search/race.h"

#include <utility>

namespace grist {

namespace {
bool twin_first(const HazardOutcome& course, const HazardOutcome& twin, bool by_iterations) {
  return !course.triggered ||
         (by_iterations ? twin.iterations < course.iterations : twin.seconds < course.seconds);
}

// The twin's finding, reported: the course's extent and an interruption of it are said.
HazardOutcome twin_reported(HazardOutcome twin, const HazardOutcome& course) {
  twin.course_iterations = course.iterations;
  if (course.stopped == "interrupted") twin.stopped = course.stopped;
  return twin;
}
}  // namespace

HazardOutcome settle_weights_race(HazardOutcome course, HazardOutcome twin, bool by_iterations) {
  if (!twin.triggered) return course;
  const bool first = twin_first(course, twin, by_iterations);
  if (course.triggered && (course.finding_class != FindingClass::WeightsPerturbed || !first)) {
    if (first && twin.finding_class == FindingClass::WeightsPerturbed) {
      course.race_seconds = twin.seconds;
      course.race_iterations = twin.iterations;
    }
    return course;
  }
  twin.weights_race = true;
  return twin_reported(std::move(twin), course);
}

HazardOutcome settle_training_race(HazardOutcome course, HazardOutcome twin, bool by_iterations) {
  if (!twin.triggered) return course;
  if (course.triggered && (course.finding_class == FindingClass::InputReached ||
                           (course.finding_class == FindingClass::TrainingReached &&
                            !twin_first(course, twin, by_iterations))))
    return course;
  twin.training_race = true;
  return twin_reported(std::move(twin), course);
}

}  // namespace grist
