// Times one training-like iteration of grist's executor under each --precision, single-threaded, for the
// half-precision figures of docs/PERFORMANCE.md:
//
//   build/bench/precision_bench [--iters N] [--warmup N] [--fixed-weights] MODEL.onnx[=INPUT.npy] ...
//
// An iteration is a forward, a backward from the first output (the gradient of its sum) to every float input and
// weight, and every float weight marked changed, as an optimizer step leaves them (amp modes round them again);
// --fixed-weights leaves them unchanged (an input-only search). Inputs: INPUT.npy for the first float input,
// else uniform [0, 1) noise of the declared shapes (batch 1). One JSON line per model and precision:
// {"model", "precision", "median_ms", "median_cpu_ms", "ratio"}, the ratio against fp32's median CPU time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/executor.h"
#include "onnx/import.h"
#include "bench_inputs.h"
#include "timing.h"

using namespace grist;

namespace {

using Clock = std::chrono::steady_clock;

using bench::median;
using bench::thread_cpu_ms;

struct Options {
  int iters = 10, warmup = 2;
  bool fixed_weights = false;
};

Status time_model(const std::string& arg, const Options& o) {
  const size_t eq = arg.find('=');
  const std::string path = arg.substr(0, eq);
  const std::string input = eq == std::string::npos ? "" : arg.substr(eq + 1);
  auto graph = import_onnx_file(path);
  if (!graph) return graph.error();
  const Graph& g = *graph;
  GRIST_CHECK(!g.outputs.empty(), "{}: no output", path);
  double fp32_cpu = 0;
  for (Precision p : {Precision::Fp32, Precision::Fp16, Precision::Bf16, Precision::AmpFp16, Precision::AmpBf16}) {
    ExecutorOptions eo;
    eo.precision = p;
    auto created = Executor::create(g, eo);
    if (!created) return created.error();
    Executor& ex = *created;
    GRIST_TRY(bench::feed_inputs(g, ex, path, input));
    std::vector<double> wall, cpu;
    for (int i = 0; i < o.warmup + o.iters; ++i) {
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_ms();
      GRIST_TRY(ex.forward());
      GRIST_TRY(ex.backward(g.outputs.front()));
      if (!o.fixed_weights)
        for (ValueId id : g.initializers)
          if (is_float(g.value(id).dtype)) (void)ex.mutable_value(id);
      if (i >= o.warmup) {
        wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        cpu.push_back(thread_cpu_ms() - c0);
      }
    }
    const double m = median(cpu);
    if (p == Precision::Fp32) fp32_cpu = m;
    nlohmann::json j{{"model", path},
                     {"precision", std::string(precision_name(p))},
                     {"median_ms", median(wall)},
                     {"median_cpu_ms", m},
                     {"ratio", fp32_cpu > 0 ? m / fp32_cpu : 0.0}};
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--iters" || a == "--warmup") && i + 1 < argc) {
      (a == "--iters" ? o.iters : o.warmup) = std::max(a == "--iters" ? 1 : 0, std::atoi(argv[++i]));
    } else if (a == "--fixed-weights") {
      o.fixed_weights = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "precision_bench: unknown option %s\n", a.c_str());
      return 2;
    } else {
      models.push_back(a);
    }
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: precision_bench [--iters N] [--warmup N] [--fixed-weights] MODEL.onnx[=X.npy]...\n");
    return 2;
  }
  for (const std::string& m : models) {
    if (auto st = time_model(m, o); !st) {
      std::fprintf(stderr, "precision_bench: %s\n", st.message().c_str());
      return 2;
    }
  }
  return 0;
}
