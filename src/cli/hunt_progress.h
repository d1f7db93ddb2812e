// What `grist hunt` tells a person while it runs, on stderr. On a terminal: one live line (hazard, iteration,
// rate, objective, time left, what has triggered so far). Elsewhere (CI, a pipe, a log file): a line when a
// hazard's search starts, one per finding, and a heartbeat at most every 10 s.
#pragma once

#include <chrono>
#include <string>

#include "search/hunt.h"

namespace grist::cli {

class HuntProgress {
 public:
  enum class Mode { Off, Terminal, Log };
  explicit HuntProgress(Mode mode) : mode_(mode) {}
  ~HuntProgress() { clear(); }

  void progress(const Progress& p);
  void finding(const HazardOutcome& o);
  void clear();  // removes the live line before the report's own lines are printed

 private:
  Mode mode_;
  bool shown_ = false;
  int triggered_ = 0;
  int hazard_index_ = 0;  // the hazard whose start was logged
  std::chrono::steady_clock::time_point last_heartbeat_ = std::chrono::steady_clock::now();
};

}  // namespace grist::cli
