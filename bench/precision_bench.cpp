// Times one iteration of grist's executor under each --precision, single-threaded, for the half-precision
// figures of docs/PERFORMANCE.md:
//
//   build/bench/precision_bench [--iters N] [--warmup N] [--rounds R] [--precision P]
//                               [--fixed-weights | --marked-weights] MODEL.onnx[=X.npy] ...
//
// An iteration is, by default, a training step as the hunt's (search/hunt.cpp train_step) takes it: a forward,
// the backward of the first output (the gradient of its sum) to every float weight, a copy of the weights
// before the update (the hunt keeps them: the optimizer may be the producer), and an SGD step (lr 1e-6)
// through engine/scaled_step.h — under amp-* with GradScaler's loss scaling (the seed scaled, the gradients
// unscaled and checked, a step skipped on an inf/NaN), so the weights change as a hunt's do and amp modes round
// them again. --fixed-weights: a forward and a backward to every float input and weight, nothing updated (an
// input-only search). --marked-weights: the same plus every weight marked changed without an update (what this
// benchmark timed before session 9, kept to compare builds). Inputs: X.npy for the first float input, else
// uniform [0, 1) noise of the declared shapes (batch 1). One JSON line per model and precision:
// {"model", "precision", "iterations", "median_ms", "median_cpu_ms", "ratio", "skipped_steps"}, the ratio against
// fp32's median CPU time, skipped_steps the loss scaler's over all iterations (warm-up included). --rounds R
// splits the N timed iterations into R rounds in which the precisions take turns, so that the load of other work
// falls on all of them alike; --precision P times P alone (for callgrind).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/executor.h"
#include "engine/grad_scaler.h"
#include "engine/optimizers.h"
#include "engine/scaled_step.h"
#include "onnx/import.h"
#include "bench_inputs.h"
#include "timing.h"

using namespace grist;

namespace {

using Clock = std::chrono::steady_clock;

using bench::median;
using bench::thread_cpu_ms;

enum class Mode { TrainingStep, FixedWeights, MarkedWeights };

struct Options {
  int iters = 10, warmup = 2, rounds = 1;
  Mode mode = Mode::TrainingStep;
  std::optional<Precision> only;
};

// One precision's executor and training state.
struct Runner {
  Precision precision;
  Executor ex;
  std::vector<ValueId> weights;
  Optimizer opt;
  GradScaler scaler;
  Tensor seed;
  std::vector<Tensor> before;
  std::vector<double> wall, cpu;
};

// One iteration (its own function, so that `valgrind --tool=callgrind --toggle-collect='*run_iteration*'`
// counts the iterations' instructions alone).
[[gnu::noinline]] Status run_iteration(Runner& r, ValueId loss, Mode mode) {
  GRIST_TRY(r.ex.forward());
  if (mode == Mode::TrainingStep) {
    GradScaler* scaling = is_autocast(r.precision) ? &r.scaler : nullptr;
    GRIST_TRY(training_backward(r.ex, loss, r.weights, scaling, r.seed));
    for (size_t k = 0; k < r.weights.size(); ++k) r.before[k].copy_from(r.ex.value(r.weights[k]));
    auto stepped = training_update(r.ex, r.opt, scaling);
    if (!stepped) return stepped.error();
    return Status::ok();
  }
  GRIST_TRY(r.ex.backward(loss));
  if (mode == Mode::MarkedWeights)
    for (ValueId id : r.weights) (void)r.ex.mutable_value(id);
  return Status::ok();
}

Status timed_iteration(Runner& r, ValueId loss, Mode mode, bool keep) {
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_ms();
  GRIST_TRY(run_iteration(r, loss, mode));
  if (keep) {
    r.wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    r.cpu.push_back(thread_cpu_ms() - c0);
  }
  return Status::ok();
}

Status time_model(const std::string& arg, const Options& o) {
  const size_t eq = arg.find('=');
  const std::string path = arg.substr(0, eq);
  const std::string input = eq == std::string::npos ? "" : arg.substr(eq + 1);
  auto graph = import_onnx_file(path);
  if (!graph) return graph.error();
  const Graph& g = *graph;
  GRIST_CHECK(!g.outputs.empty(), "{}: no output", path);
  const ValueId loss = g.outputs.front();
  std::vector<ValueId> weights;
  for (ValueId id : g.initializers)
    if (is_float(g.value(id).dtype)) weights.push_back(id);
  OptimizerConfig sgd = OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch);
  sgd.lr = 1e-6;
  std::vector<std::unique_ptr<Runner>> runners;
  for (Precision p : {Precision::Fp32, Precision::Fp16, Precision::Bf16, Precision::AmpFp16, Precision::AmpBf16}) {
    if (o.only && p != *o.only) continue;
    ExecutorOptions eo;
    eo.precision = p;
    auto created = Executor::create(g, eo);
    if (!created) return created.error();
    runners.push_back(std::unique_ptr<Runner>(
        new Runner{p, std::move(created).value(), weights, Optimizer(sgd, weights), GradScaler(), Tensor(),
                   std::vector<Tensor>(weights.size()), {}, {}}));
    GRIST_TRY(bench::feed_inputs(g, runners.back()->ex, path, input));
  }
  for (auto& r : runners)
    for (int i = 0; i < o.warmup; ++i) GRIST_TRY(timed_iteration(*r, loss, o.mode, false));
  // The timed iterations in rounds, the precisions taking turns (load from other work falls on all alike); each
  // turn starts with one untimed iteration, so that none is timed on the caches another precision left.
  const int per_round = std::max(1, o.iters / std::max(1, o.rounds));
  for (int round = 0; round < o.rounds; ++round)
    for (auto& r : runners) {
      if (o.rounds > 1) GRIST_TRY(timed_iteration(*r, loss, o.mode, false));
      for (int i = 0; i < per_round; ++i) GRIST_TRY(timed_iteration(*r, loss, o.mode, true));
    }
  double fp32_cpu = 0;
  for (auto& r : runners) {
    const double m = median(r->cpu);
    if (r->precision == Precision::Fp32) fp32_cpu = m;
    nlohmann::json j{{"model", path},
                     {"precision", std::string(precision_name(r->precision))},
                     {"iterations", r->cpu.size()},
                     {"median_ms", median(r->wall)},
                     {"median_cpu_ms", m},
                     {"ratio", fp32_cpu > 0 ? m / fp32_cpu : 0.0},
                     {"skipped_steps", r->scaler.skipped_steps()}};
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
    } else if (a == "--rounds" && i + 1 < argc) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--precision" && i + 1 < argc) {
      auto p = parse_precision(argv[++i]);
      if (!p) {
        std::fprintf(stderr, "precision_bench: %s\n", p.message().c_str());
        return 2;
      }
      o.only = *p;
    } else if (a == "--fixed-weights") {
      o.mode = Mode::FixedWeights;
    } else if (a == "--marked-weights") {
      o.mode = Mode::MarkedWeights;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "precision_bench: unknown option %s\n", a.c_str());
      return 2;
    } else {
      models.push_back(a);
    }
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: precision_bench [--iters N] [--warmup N] [--rounds R] [--precision P] "
                 "[--fixed-weights | --marked-weights] MODEL.onnx[=X.npy]...\n");
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
