#include "util/rng.h"

#include <algorithm>

#include "util/eigen.h"

namespace grist {

void Rng::fill_normal(double* out, int64_t n, double mean, double stddev) {
  constexpr int64_t kPairs = 256;
  double u[kPairs], v[kPairs], s[kPairs];
  for (int64_t i = 0; i < n;) {
    const int64_t pairs = std::min(kPairs, (n - i + 1) / 2);
    // Accepted points only, in the order drawn: (u, v) uniform in the disc without its centre. Every point is
    // written and a rejected one (a fifth) overwritten by the next: no branch to mispredict.
    for (int64_t k = 0; k < pairs;) {
      const double a = uniform(-1.0, 1.0), b = uniform(-1.0, 1.0);
      const double q = a * a + b * b;
      u[k] = a, v[k] = b, s[k] = q;
      k += static_cast<int64_t>(q < 1.0 && q != 0.0);
    }
    // f = σ·√(−2 ln s / s), in place of s.
    Eigen::Map<Eigen::ArrayXd> f(s, pairs);
    f = stddev * (-2.0 * f.log() / f).sqrt();
    for (int64_t k = 0; k < pairs; ++k) {
      out[i++] = mean + u[k] * f[k];
      if (i < n) out[i++] = mean + v[k] * f[k];
    }
  }
}

}  // namespace grist
