// Times grist's forward on ONNX models, single-threaded, for bench/real_models.py (which runs ONNX Runtime and
// PyTorch beside it) and for finding where the time goes:
//
//   build/bench/model_bench [--iters N] [--warmup N] [--threads N] [--no-scan] [--profile] MODEL.onnx[=INPUT.npy] ...
//
// Each model is loaded once; its first float input is INPUT.npy (or uniform [0, 1) noise of its declared
// shape, batch 1). It prints one JSON line per model: {"model", "samples_ms", "median_ms", "cpu_ms",
// "median_cpu_ms"}: wall-clock and this thread's CPU time of N warm forwards after `warmup` untimed ones (on
// shared cores the CPU time leaves out the time other work held the core). --profile adds "nodes": each node's
// median CPU time, measured by re-running its kernel alone on the inputs the full forward left (so it excludes
// the non-finite scan, and its caches are warm), and "ops": those medians summed per op type. Errors print one
// line on stderr and exit 2.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/executor.h"
#include "onnx/import.h"
#include "ops/registry.h"
#include "util/thread_pool.h"
#include "bench_inputs.h"
#include "timing.h"

using namespace grist;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

using bench::median;
using bench::thread_cpu_ms;

struct Options {
  int iters = 20, warmup = 3;
  bool scan = true, profile = false;
};

// Each node's kernel alone, `iters` times on the values the executor's last forward left, into private outputs.
Result<nlohmann::json> profile_nodes(const Graph& g, const Executor& ex, int iters) {
  const OpRegistry& reg = OpRegistry::global();
  Rng rng(0);
  nlohmann::json nodes = nlohmann::json::array();
  std::map<std::string, double> per_op;
  for (const Node& node : g.nodes) {
    const OpDef* op = reg.find(node.op_type, node.domain);
    GRIST_CHECK(op, "{}: no kernel for {}", node.name, node.op_type);
    std::vector<const Tensor*> in;
    for (ValueId id : node.inputs) in.push_back(id == kNoValue ? nullptr : &ex.value(id));
    std::vector<Tensor> out_storage(node.outputs.size());
    std::vector<Tensor*> out;
    for (size_t o = 0; o < node.outputs.size(); ++o)
      out.push_back(node.outputs[o] == kNoValue ? nullptr : &out_storage[o]);
    NodeState state;
    std::vector<double> samples;
    for (int i = 0; i <= iters; ++i) {  // the first run sizes the outputs and scratch: not timed
      ForwardContext ctx{node, in, out, state, rng, std::nullopt};
      const double c0 = thread_cpu_ms();
      GRIST_TRY(op->forward(ctx));
      if (i > 0) samples.push_back(thread_cpu_ms() - c0);
    }
    const double m = median(samples);
    per_op[node.op_type] += m;
    std::string shape = out_storage.empty() ? "" : out_storage[0].shape().str();
    nodes.push_back({{"name", node.name}, {"op", node.op_type}, {"shape", shape}, {"median_ms", m}});
  }
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, ms] : per_op) ops[op] = ms;
  return nlohmann::json{{"nodes", nodes}, {"ops", ops}};
}

Result<nlohmann::json> time_model(const std::string& spec, const Options& o) {
  const size_t eq = spec.find('=');
  const std::string path = spec.substr(0, eq), input = eq == std::string::npos ? "" : spec.substr(eq + 1);
  auto graph = import_onnx_file(path);
  if (!graph) return graph.error();
  const Graph& g = *graph;
  ExecutorOptions eo;
  eo.scan_nonfinite = o.scan;
  auto created = Executor::create(g, eo);
  if (!created) return created.error();
  Executor& ex = *created;
  GRIST_TRY(bench::feed_inputs(g, ex, path, input));
  std::vector<double> samples, cpu;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ms();
    GRIST_TRY(ex.forward());
    if (i >= o.warmup) {
      samples.push_back(ms_since(t0));
      cpu.push_back(thread_cpu_ms() - c0);
    }
  }
  nlohmann::json j{{"model", path}, {"samples_ms", samples}, {"median_ms", median(samples)}, {"cpu_ms", cpu},
                   {"median_cpu_ms", median(cpu)}};
  if (o.profile) {
    auto p = profile_nodes(g, ex, o.iters);
    if (!p) return p.error();
    j.update(*p);
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--iters" || a == "--warmup") && i + 1 < argc) {
      (a == "--iters" ? o.iters : o.warmup) = std::max(a == "--iters" ? 1 : 0, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      set_kernel_threads(std::atoi(argv[++i]));
    } else if (a == "--no-scan") {
      o.scan = false;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "model_bench: unknown option %s\n", a.c_str());
      return 2;
    } else {
      models.push_back(a);
    }
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: model_bench [--iters N] [--warmup N] [--threads N] [--no-scan] [--profile] "
                 "MODEL.onnx[=X.npy]...\n");
    return 2;
  }
  for (const std::string& m : models) {
    auto j = time_model(m, o);
    if (!j) {
      std::fprintf(stderr, "model_bench: %s\n", j.message().c_str());
      return 2;
    }
    std::printf("%s\n", j->dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}
