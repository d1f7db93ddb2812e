#include "search/weights_race.h"

#include <utility>

namespace grist {

HazardOutcome settle_weights_race(HazardOutcome course, HazardOutcome twin, bool by_iterations) {
  if (!twin.triggered) return course;
  const bool twin_first = !course.triggered || (by_iterations ? twin.iterations < course.iterations
                                                              : twin.seconds < course.seconds);
  if (course.triggered && (course.finding_class != FindingClass::WeightsPerturbed || !twin_first)) {
    if (twin_first && twin.finding_class == FindingClass::WeightsPerturbed) {
      course.race_seconds = twin.seconds;
      course.race_iterations = twin.iterations;
    }
    return course;
  }
  twin.weights_race = true;
  twin.course_iterations = course.iterations;
  if (course.stopped == "interrupted") twin.stopped = course.stopped;
  return twin;
}

}  // namespace grist
