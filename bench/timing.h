// Timing helpers shared by the benchmark binaries: this thread's CPU time and a median.
#pragma once

#include <algorithm>
#include <ctime>
#include <vector>

namespace grist::bench {

// This thread's CPU time: on cores shared with other work, the time it was descheduled does not count.
inline double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace grist::bench
