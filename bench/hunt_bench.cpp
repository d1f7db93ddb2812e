// Search speed: iterations per second of the GRIST loop on the known-answer models and on an MNIST CNN
// with training on (zoo subject 24, when exported), and the loop's overhead over the engine passes each
// iteration needs anyway (monitored forward + objective backward, and training forward + backward +
// optimizer step). Run: build/bench/hunt_bench  (docs/PERFORMANCE.md).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "analysis/hazards.h"
#include "config/manifest.h"
#include "data/dataset.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "onnx/import.h"
#include "search/hunt.h"

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

// The hunt itself: K iterations of the first hazard (no trigger within K on these settings).
void BM_HuntIterations(benchmark::State& state, const char* manifest, int64_t iterations) {
  const Subject* s = load(path_of(manifest));
  if (!s) {
    state.SkipWithError("model not available (export the zoo: /usr/bin/python3 zoo/zoo_export.py)");
    return;
  }
  for (auto _ : state) {
    HuntOptions o;
    o.manifest = s->manifest;
    o.manifest.search.max_iterations = iterations;
    o.manifest.search.time_limit = 60;
    o.batch_size = s->manifest.batch_size > 0 ? s->manifest.batch_size : 1;
    auto r = hunt(s->graph, o);
    if (!r || r->outcomes.empty()) {
      state.SkipWithError("hunt failed");
      return;
    }
    state.counters["iterations"] = static_cast<double>(r->outcomes[0].iterations);
  }
  state.counters["it/s"] = benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsIterationInvariantRate);
}

// The engine passes alone, the same K times: what any GRIST implementation must compute.
void BM_EnginePassesOnly(benchmark::State& state, const char* manifest, int64_t iterations) {
  const Subject* s = load(path_of(manifest));
  if (!s) {
    state.SkipWithError("model not available (export the zoo: /usr/bin/python3 zoo/zoo_export.py)");
    return;
  }
  const Manifest& m = s->manifest;
  const int64_t batch_size = m.batch_size > 0 ? m.batch_size : 1;
  auto hazards = find_hazards(s->graph);
  auto data = Dataset::create(m, s->graph, batch_size, 0);
  auto ex = Executor::create(s->graph, {});
  if (hazards.empty() || !data || !ex) {
    state.SkipWithError("setup failed");
    return;
  }
  Batch batch;
  if (!data->next_batch(batch)) return;
  for (const auto& [name, t] : batch)
    if (!ex->set_input(name, t)) return;
  ValueId loss = m.loss.empty() ? kNoValue : s->graph.find_value(m.loss);
  std::vector<ValueId> params;
  for (ValueId id : s->graph.initializers)
    if (is_float(s->graph.value(id).dtype)) params.push_back(id);
  Optimizer opt(m.train.optimizer, params);
  const ValueId target = hazards[0].objective_value;
  Tensor seed;
  for (auto _ : state) {
    for (int64_t k = 0; k < iterations; ++k) {
      (void)ex->forward();
      evaluate_objective(hazards[0].objective, ex->value(target), seed);
      const Tensor* sp = &seed;
      (void)ex->backward(std::span<const ValueId>(&target, 1), std::span<const Tensor* const>(&sp, 1));
      if (m.train.enabled) {
        if (m.train.on_updated_batch) (void)ex->forward();
        (void)ex->backward(loss);
        (void)opt.step(*ex);
      }
    }
  }
  state.counters["it/s"] = benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_HuntIterations, free_logits_3x5, "tests/models/free_logits.toml", 300)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, free_logits_3x5, "tests/models/free_logits.toml", 300)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_HuntIterations, logreg_toy_sgd, "tests/models/logreg_toy.toml", 200)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, logreg_toy_sgd, "tests/models/logreg_toy.toml", 200)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_HuntIterations, mnist_cnn_adam_24, "zoo/24/manifest.toml", 20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EnginePassesOnly, mnist_cnn_adam_24, "zoo/24/manifest.toml", 20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
