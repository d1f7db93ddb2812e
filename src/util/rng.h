// The one seeded random generator every random draw in a run goes through, so a seed replays a run.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>

namespace grist {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : engine_(seed) {}
  void reseed(uint64_t seed) { engine_.seed(seed); }

  // Uniform in [lo, hi).
  double uniform(double lo = 0.0, double hi = 1.0) {
    // 53 random bits → [0,1); written out so the stream is the same on every standard library.
    double u = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
  }
  // Normal via Box–Muller (portable, unlike std::normal_distribution).
  double normal(double mean = 0.0, double stddev = 1.0) {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Normals for a whole tensor, by Marsaglia's polar method: each pair of uniforms in the unit disc gives two
  // values, u·f and v·f with f = σ·√(−2 ln s / s), s = u² + v², and no cos or sin; the logarithms and roots are
  // taken a block of pairs at a time, vectorised (rng.cpp). A stream of its own, not normal()'s: zoo 48a draws
  // 78,400 noise values an iteration, and normal() a value was a quarter of its hunt.
  void fill_normal(double* out, int64_t n, double mean = 0.0, double stddev = 1.0);
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : engine_() % n; }
  uint64_t next() { return engine_(); }

  // The full generator state as text, to replay a pass with the same random draws.
  std::string state() const {
    std::ostringstream os;
    os << engine_;
    return os.str();
  }
  bool set_state(const std::string& s) {
    std::istringstream is(s);
    std::mt19937_64 e;
    if (!(is >> e)) return false;
    engine_ = e;
    return true;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace grist
