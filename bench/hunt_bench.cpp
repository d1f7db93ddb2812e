// Search speed (this thread's CPU time): iterations per second of the GRIST loop on the known-answer models and on an MNIST CNN
// with training on (zoo subject 24, when exported), and the loop's overhead over the engine passes each
// iteration needs anyway (monitored forward + objective backward, and training forward + backward +
// optimizer step). Run: build/bench/hunt_bench  (docs/PERFORMANCE.md); the overhead itself, from paired runs:
// build/bench/hunt_bench --benchmark_filter=Paired.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "analysis/hazards.h"
#include "config/manifest.h"
#include "data/dataset.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "onnx/import.h"
#include "search/hunt.h"
#include "timing.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

struct Subject {
  Graph graph;
  Manifest manifest;
};

const Subject* load(const std::string& manifest_path) {
  static std::map<std::string, Subject> cache;
  auto it = cache.find(manifest_path);
  if (it != cache.end()) return &it->second;
  if (!fs::exists(manifest_path)) return nullptr;
  auto m = read_manifest(manifest_path);
  if (!m || !fs::exists(m->model)) return nullptr;
  auto g = import_onnx_file(m->model);
  if (!g) return nullptr;
  return &cache.emplace(manifest_path, Subject{std::move(g).value(), std::move(m).value()}).first->second;
}

std::string path_of(const char* rel) { return (fs::path(GRIST_SOURCE_DIR) / rel).string(); }

// The hunt itself: K iterations of the first hazard alone (no trigger within K on these settings), less a hunt
// of one iteration, so the per-hunt setup (data, executor, interval scan) is not charged to the loop. Seconds of
// this thread's CPU time, or a negative value with `error` set.
double hunt_loop_seconds(const Subject& s, int64_t iterations, double change, std::string& error) {
  auto timed_hunt = [&](int64_t k, int64_t& ran) {
    HuntOptions o;
    o.manifest = s.manifest;
    o.manifest.search.max_iterations = k;
    o.manifest.search.time_limit = 60;
    if (change > 0) o.manifest.search.change = change;
    o.manifest.search.weight_change = 0;  // the GRIST loop, as the passes below: inputs stepped, not weights,
    o.manifest.search.training_share = 0;  // and no crafted training batches
    o.batch_size = s.manifest.batch_size > 0 ? s.manifest.batch_size : 1;
    // The hazard the engine passes below take: a model with two (the logistic toy) would otherwise hunt the
    // second for K iterations too, charged to the first's.
    o.manifest.target = std::to_string(find_hazards(s.graph).at(0).id);
    // This thread's CPU time: on cores shared with other builds the time descheduled does not count.
    const double start_ms = bench::thread_cpu_ms();
    auto r = hunt(s.graph, o);
    const double seconds = (bench::thread_cpu_ms() - start_ms) / 1e3;
    ran = r && !r->outcomes.empty() ? r->outcomes[0].iterations : -1;
    return seconds;
  };
  int64_t ran_k = 0, ran_1 = 0;
  const double t_k = timed_hunt(iterations, ran_k);
  const double t_1 = timed_hunt(1, ran_1);
  if (ran_k != iterations || ran_1 != 1) {
    error = "the hunt triggered or failed before K iterations";
    return -1;
  }
  return std::max(t_k - t_1, 1e-9);
}

// The engine passes alone, the same K times from a fresh model (as the hunt starts from one: a model trained on
// for ever goes non-finite): what any GRIST implementation must compute. Seconds of this thread's CPU time, the
// executor's creation left out, or a negative value with `error` set.
double engine_passes_seconds(const Subject& s, int64_t iterations, std::string& error) {
  const Manifest& m = s.manifest;
  const int64_t batch_size = m.batch_size > 0 ? m.batch_size : 1;
  auto hazards = find_hazards(s.graph);
  auto data = Dataset::create(m, s.graph, batch_size, 0);
  Batch batch;
  auto ex = Executor::create(s.graph, {});
  if (hazards.empty() || !data || !data->next_batch(batch) || !ex) {
    error = "setup failed";
    return -1;
  }
  for (const auto& [name, t] : batch)
    if (!ex->set_input(name, t)) {
      error = "setup failed";
      return -1;
    }
  ValueId loss = m.loss.empty() ? kNoValue : s.graph.find_value(m.loss);
  std::vector<ValueId> params;
  for (ValueId id : s.graph.initializers)
    if (is_float(s.graph.value(id).dtype)) params.push_back(id);
  const ValueId target = hazards[0].objective_value;
  std::vector<ValueId> data_ids;
  for (const auto& name : data->input_names())
    if (data->spec(name).role == InputRole::Data) data_ids.push_back(s.graph.find_value(name));
  Optimizer opt(m.train.optimizer, params);
  Tensor seed;
  const double start_ms = bench::thread_cpu_ms();
  for (int64_t k = 0; k < iterations; ++k) {
    (void)ex->forward();
    evaluate_objective(hazards[0].objective, ex->value(target), seed);
    const Tensor* sp = &seed;
    (void)ex->backward(std::span<const ValueId>(&target, 1), std::span<const Tensor* const>(&sp, 1), data_ids);
    if (m.train.enabled) {
      if (m.train.on_updated_batch) (void)ex->forward();
      (void)ex->backward(loss, params);
      (void)opt.step(*ex);
    } else if (loss != kNoValue) {
      (void)ex->backward(loss, data_ids);  // the loss's gradient is scanned even without training
    }
  }
  return std::max((bench::thread_cpu_ms() - start_ms) / 1e3, 1e-9);
}

const Subject* load_or_skip(benchmark::State& state, const char* manifest) {
  const Subject* s = load(path_of(manifest));
  if (!s) state.SkipWithError("model not available (export the zoo: /usr/bin/python3 zoo/zoo_export.py)");
  return s;
}

void BM_HuntIterations(benchmark::State& state, const char* manifest, int64_t iterations, double change) {
  const Subject* s = load_or_skip(state, manifest);
  if (!s) return;
  std::string error;
  for (auto _ : state) {
    const double seconds = hunt_loop_seconds(*s, iterations, change, error);
    if (seconds < 0) return state.SkipWithError(error.c_str());
    state.SetIterationTime(seconds);
  }
  state.counters["it/s"] =
      benchmark::Counter(static_cast<double>(iterations - 1), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EnginePassesOnly(benchmark::State& state, const char* manifest, int64_t iterations, double) {
  const Subject* s = load_or_skip(state, manifest);
  if (!s) return;
  std::string error;
  for (auto _ : state) {
    const double seconds = engine_passes_seconds(*s, iterations, error);
    if (seconds < 0) return state.SkipWithError(error.c_str());
    state.SetIterationTime(seconds);
  }
  state.counters["it/s"] = benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsIterationInvariantRate);
}

// The loop's overhead from paired runs: each benchmark iteration times the hunt's loop and then the engine passes
// alone, on the same model and K, one right after the other, and the counters compare the fastest of each
// (interference on a shared machine only lengthens a run, and pairing keeps a slow phase of the machine from
// landing on one side only). Run with --benchmark_min_time or repetitions enough for several pairs.
void BM_LoopOverheadPaired(benchmark::State& state, const char* manifest, int64_t iterations, double change) {
  const Subject* s = load_or_skip(state, manifest);
  if (!s) return;
  std::string error;
  double best_hunt = 1e300, best_engine = 1e300;
  for (auto _ : state) {
    const double hunt_s = hunt_loop_seconds(*s, iterations, change, error);
    const double engine_s = hunt_s < 0 ? -1 : engine_passes_seconds(*s, iterations, error);
    if (engine_s < 0) return state.SkipWithError(error.c_str());
    best_hunt = std::min(best_hunt, hunt_s);
    best_engine = std::min(best_engine, engine_s);
    state.SetIterationTime(hunt_s + engine_s);
  }
  state.counters["hunt_ms"] = best_hunt * 1e3;
  state.counters["engine_ms"] = best_engine * 1e3;
  state.counters["overhead_%"] = 100 * (best_hunt / best_engine - 1);
}

// ε is lowered on the toys so that K iterations run without a trigger; the work per iteration is the same.
BENCHMARK_CAPTURE(BM_HuntIterations, free_logits_3x5, "tests/models/free_logits.toml", 2000, 0.01)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, free_logits_3x5, "tests/models/free_logits.toml", 2000, 0.01)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_HuntIterations, logreg_toy_sgd, "tests/models/logreg_toy.toml", 200, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, logreg_toy_sgd, "tests/models/logreg_toy.toml", 200, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_HuntIterations, mnist_cnn_adam_24, "zoo/24/manifest.toml", 20, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, mnist_cnn_adam_24, "zoo/24/manifest.toml", 20, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoopOverheadPaired, free_logits_3x5, "tests/models/free_logits.toml", 2000, 0.01)
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(15);
BENCHMARK_CAPTURE(BM_LoopOverheadPaired, logreg_toy_sgd, "tests/models/logreg_toy.toml", 200, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(15);
BENCHMARK_CAPTURE(BM_LoopOverheadPaired, mnist_cnn_adam_24, "zoo/24/manifest.toml", 20, 0.0)
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
