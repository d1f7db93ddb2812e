// Rng::fill_normal, the polar method's bulk normals: the moments and tails of a standard normal, the two values
// of a pair independent of each other, the mean and deviation applied, exactly n values written, and a stream
// that a seed replays.
#include "util/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace grist {
namespace {

struct Moments {
  double mean = 0, sd = 0, skew = 0, kurtosis = 0, beyond_1_96 = 0, beyond_3 = 0;
};

Moments moments_of(const std::vector<double>& x) {
  Moments m;
  const double n = static_cast<double>(x.size());
  for (double v : x) m.mean += v / n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (double v : x) {
    const double d = v - m.mean;
    m2 += d * d / n, m3 += d * d * d / n, m4 += d * d * d * d / n;
    m.beyond_1_96 += (std::fabs(v) > 1.96) / n;
    m.beyond_3 += (std::fabs(v) > 3.0) / n;
  }
  m.sd = std::sqrt(m2);
  m.skew = m3 / (m2 * m.sd);
  m.kurtosis = m4 / (m2 * m2);
  return m;
}

TEST(FillNormal, HasTheMomentsAndTailsOfAStandardNormal) {
  Rng rng(7);
  std::vector<double> x(400001);  // an odd count: the last pair gives one value
  rng.fill_normal(x.data(), static_cast<int64_t>(x.size()));
  const Moments m = moments_of(x);
  // Standard errors at n = 400,001: mean 0.0016, sd 0.0011, skew 0.004, kurtosis 0.008, tails 0.0003 and 0.00008.
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.sd, 1.0, 0.01);
  EXPECT_NEAR(m.skew, 0.0, 0.03);
  EXPECT_NEAR(m.kurtosis, 3.0, 0.05);
  EXPECT_NEAR(m.beyond_1_96, 0.05, 0.002);
  EXPECT_NEAR(m.beyond_3, 0.0027, 0.0005);
}

// A pair's two values share s = u² + v²: they must still be uncorrelated, and so must their squares (which a
// shared radius without the right factor would tie together).
TEST(FillNormal, TheTwoValuesOfAPairAreIndependent) {
  Rng rng(3);
  std::vector<double> x(400000);
  rng.fill_normal(x.data(), static_cast<int64_t>(x.size()));
  double xy = 0, x2y2 = 0;
  const double pairs = static_cast<double>(x.size() / 2);
  for (size_t i = 0; i + 1 < x.size(); i += 2) {
    xy += x[i] * x[i + 1] / pairs;
    x2y2 += x[i] * x[i] * x[i + 1] * x[i + 1] / pairs;
  }
  EXPECT_NEAR(xy, 0.0, 0.01);    // E[xy] = 0, standard error 0.0022
  EXPECT_NEAR(x2y2, 1.0, 0.03);  // E[x²y²] = E[x²]E[y²] = 1, standard error 0.0066
}

TEST(FillNormal, AppliesTheMeanAndDeviationAndWritesExactlyN) {
  Rng rng(11);
  std::vector<double> x(10001, -1e300);
  rng.fill_normal(x.data(), 10000, 5.0, 2.0);
  EXPECT_EQ(x.back(), -1e300);  // nothing past n
  x.pop_back();
  const Moments m = moments_of(x);
  EXPECT_NEAR(m.mean, 5.0, 0.1);  // standard error 0.02
  EXPECT_NEAR(m.sd, 2.0, 0.1);
}

TEST(FillNormal, ASeedReplaysTheStream) {
  std::vector<double> a(1001), b(1001), c(1001);
  Rng(5).fill_normal(a.data(), 1001);
  Rng(5).fill_normal(b.data(), 1001);
  Rng(6).fill_normal(c.data(), 1001);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // One value drawn alone is the first of a longer fill's.
  double one = 0;
  Rng(5).fill_normal(&one, 1);
  EXPECT_EQ(one, a[0]);
}

}  // namespace
}  // namespace grist
