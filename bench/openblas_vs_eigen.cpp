// Eigen's GEMM against OpenBLAS's cblas_sgemm on the conv GEMMs of resnet18 at 1×3×64×64 (y += W·cols, as
// src/ops/conv_pool.cpp's split_product runs them), and whether OpenBLAS keeps 0·Inf = NaN. An evaluation, not
// part of the build (libopenblas-dev is not a dependency: see docs/PERFORMANCE.md, "OpenBLAS"):
//
//   apt-get install libopenblas-dev
//   g++ -O2 -march=native -ffp-contract=off -DNDEBUG -I/usr/include/eigen3 bench/openblas_vs_eigen.cpp \
//       -o /tmp/openblas_vs_eigen -lopenblas
//   /tmp/openblas_vs_eigen 100                              # OpenBLAS's own choice of kernel
//   OPENBLAS_CORETYPE=SkylakeX /tmp/openblas_vs_eigen 100   # its AVX-512 kernels, forced
//
// Prints each shape's median thread CPU time over N runs, and the sum weighted by how often resnet18 runs it.
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <Eigen/Core>

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

void sgemm(const float* w, const float* c, int m, int k, int p, float* y) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, p, k, 1.f, w, k, c, p, 1.f, y, p);
}

// Zero weights against an Inf column entry, and the operands swapped (reference BLAS once skipped a zero
// B(l, j) outright): y[0] must be NaN each time.
int nonfinite_failures() {
  int bad = 0;
  for (int n = 1; n <= 64; n *= 4) {
    std::vector<float> zeros(n * n, 0.f), ones(n * n, 1.f), y(n * n);
    ones[0] = INFINITY;
    for (int swapped = 0; swapped < 2; ++swapped) {
      std::fill(y.begin(), y.end(), 0.f);
      sgemm(swapped ? ones.data() : zeros.data(), swapped ? zeros.data() : ones.data(), n, n, n, y.data());
      if (!std::isnan(y[0])) std::printf("n=%d%s: 0·inf gave %g\n", n, swapped ? " (swapped)" : "", y[0]), ++bad;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 50;
  std::printf("OpenBLAS kernel: %s; 0·inf cases not NaN: %d of 6\n", openblas_get_corename(), nonfinite_failures());
  struct Shape { int m, k, p, count; };
  const Shape shapes[] = {{64, 147, 1024, 1}, {64, 576, 256, 4}, {128, 576, 64, 1}, {128, 1152, 64, 3},
                          {128, 64, 64, 1},   {256, 1152, 16, 1}, {256, 2304, 16, 3}, {256, 128, 16, 1}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  double total[2] = {0, 0};
  for (const Shape& s : shapes) {
    std::vector<float> w(s.m * s.k), c(s.k * s.p), y(s.m * s.p);
    for (float& v : w) v = u(rng);
    for (float& v : c) v = u(rng);
    double med[2];
    for (int impl = 0; impl < 2; ++impl) {
      std::vector<double> t;
      for (int i = 0; i < iters; ++i) {
        std::fill(y.begin(), y.end(), 0.f);
        const double t0 = cpu_ns();
        if (impl == 0)
          Eigen::Map<RowMajor>(y.data(), s.m, s.p).noalias() +=
              Eigen::Map<const RowMajor>(w.data(), s.m, s.k) * Eigen::Map<const RowMajor>(c.data(), s.k, s.p);
        else
          sgemm(w.data(), c.data(), s.m, s.k, s.p, y.data());
        t.push_back(cpu_ns() - t0);
      }
      std::sort(t.begin(), t.end());
      med[impl] = t[t.size() / 2];
      total[impl] += med[impl] * s.count;
    }
    std::printf("m=%d k=%d p=%d (x%d): Eigen %.1f us (%.0f GFLOP/s), OpenBLAS %.1f us (%.0f GFLOP/s)\n", s.m, s.k, s.p,
                s.count, med[0] / 1e3, 2.0 * s.m * s.k * s.p / med[0], med[1] / 1e3, 2.0 * s.m * s.k * s.p / med[1]);
  }
  std::printf("resnet18's GEMM convs: Eigen %.2f ms, OpenBLAS %.2f ms\n", total[0] / 1e6, total[1] / 1e6);
}
