#include "cli/hunt_progress.h"

#include <algorithm>
#include <cstdio>

namespace grist::cli {

void HuntProgress::progress(const Progress& p) {
  if (mode_ == Mode::Off) return;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.iteration) / p.elapsed_s : 0;
  const double left = std::max(0.0, p.budget_s - p.elapsed_s);
  // SearchConfig::race_weights, race_training: a twin's finding waits for the inputs' (and training's) turn; say
  // that it is there.
  const char* race = p.training_race_triggered ? ", the training race triggered (training-reached)"
                     : p.race_triggered        ? ", the weights race triggered (weights-perturbed)"
                                               : "";
  if (mode_ == Mode::Terminal) {
    std::fprintf(stderr, "\r\033[K[%d/%d] %s  iteration %lld  %.0f it/s  objective %.4g  %.0f s left  %d triggered%s",
                 p.hazard_index, p.hazard_count, p.hazard.c_str(), static_cast<long long>(p.iteration), rate,
                 p.objective, left, triggered_, race);
    std::fflush(stderr);
    shown_ = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (p.hazard_index != hazard_index_) {
    hazard_index_ = p.hazard_index;
    last_heartbeat_ = now;
    std::fprintf(stderr, "grist hunt: [%d/%d] hunting %s (budget %.1f s)\n", p.hazard_index, p.hazard_count,
                 p.hazard.c_str(), p.budget_s);
  } else if (now - last_heartbeat_ >= std::chrono::seconds(10)) {
    last_heartbeat_ = now;
    std::fprintf(stderr,
                 "grist hunt: [%d/%d] %s: iteration %lld, %.0f it/s, objective %.4g, %.0f s left, %d triggered%s\n",
                 p.hazard_index, p.hazard_count, p.hazard.c_str(), static_cast<long long>(p.iteration), rate,
                 p.objective, left, triggered_, race);
  }
  std::fflush(stderr);
}

void HuntProgress::finding(const HazardOutcome& o) {
  if (!o.triggered) return;
  ++triggered_;
  if (mode_ != Mode::Log) return;
  std::fprintf(stderr, "grist hunt: %s TRIGGERED (%s) at iteration %lld after %.3f s: %s '%s'\n", o.site.label().c_str(),
               std::string(finding_class_name(o.finding_class)).c_str(), static_cast<long long>(o.iterations),
               o.seconds, o.event.op_type.c_str(), o.event.node_name.c_str());
  std::fflush(stderr);
}

void HuntProgress::clear() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace grist::cli
