// Times grist's forward on ONNX models, single-threaded, for bench/real_models.py (which runs ONNX Runtime and
// PyTorch beside it) and for finding where the time goes:
//
//   build/bench/model_bench [--iters N] [--warmup N] [--threads N] [--no-scan] [--forward-only]
//                           [--profile | --profile-in-order] MODEL.onnx[=INPUT.npy] ...
//
// Each model is loaded once; its first float input is INPUT.npy (or uniform [0, 1) noise of its declared
// shape, batch 1). It prints one JSON line per model: {"model", "samples_ms", "median_ms", "cpu_ms",
// "median_cpu_ms"}: wall-clock and this thread's CPU time of N warm forwards after `warmup` untimed ones (on
// shared cores the CPU time leaves out the time other work held the core). --profile adds "nodes": each node's
// median CPU time, measured by re-running its kernel alone on the inputs the full forward left (so it excludes
// the non-finite scan, and its caches are warm), and "ops": those medians summed per op type. --profile-in-order
// gives the same fields, but each node is timed as part of N whole passes over the graph in order (each node
// reading the outputs the pass gave it, so its caches hold what a real forward leaves them), plus "pass_ms", the
// median pass: what a node costs inside a forward, which warm repeats understate. --forward-only times the forward
// `grist run` makes (ExecutorOptions::release_dead_values: dead values freed, elementwise tails in place); --profile
// then re-runs its nodes on a second, full forward's values. Errors print one line on stderr and exit 2.
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
  bool scan = true, profile = false, in_order = false, forward_only = false;
};

// One node's kernel with its operands, outputs and scratch, for profile_nodes.
struct NodeRun {
  const OpDef* op;
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  NodeState state;
};

// Each node's kernel, `iters` times, into private outputs. Alone (in_order false): each node repeated on the values
// the executor's last forward left. In order: `iters` whole passes over the graph, each node reading the private
// outputs of the nodes before it in the same pass (graph inputs and initializers from the executor).
Result<nlohmann::json> profile_nodes(const Graph& g, const Executor& ex, int iters, bool in_order) {
  const OpRegistry& reg = OpRegistry::global();
  Rng rng(0);
  std::vector<Tensor> produced(g.values.size());
  std::vector<uint8_t> is_produced(g.values.size(), 0);
  std::vector<NodeRun> runs(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    NodeRun& r = runs[n];
    r.op = reg.find(node.op_type, node.domain);
    GRIST_CHECK(r.op, "{}: no kernel for {}", node.name, node.op_type);
    for (ValueId id : node.inputs) {
      const auto i = static_cast<size_t>(id);
      r.in.push_back(id == kNoValue ? nullptr : in_order && is_produced[i] ? &produced[i] : &ex.value(id));
    }
    for (ValueId id : node.outputs) {
      if (id != kNoValue) is_produced[static_cast<size_t>(id)] = 1;
      r.out.push_back(id == kNoValue ? nullptr : &produced[static_cast<size_t>(id)]);
    }
  }
  std::vector<std::vector<double>> samples(g.nodes.size());
  std::vector<double> passes;
  auto run_node = [&](size_t n, bool timed) -> Status {
    NodeRun& r = runs[n];
    ForwardContext ctx{g.nodes[n], r.in, r.out, r.state, rng, std::nullopt};
    const double c0 = thread_cpu_ms();
    GRIST_TRY(r.op->forward(ctx));
    if (timed) samples[n].push_back(thread_cpu_ms() - c0);
    return Status::ok();
  };
  // In both, the first run sizes the outputs and scratch: not timed.
  if (in_order) {
    for (int i = 0; i <= iters; ++i) {
      const double c0 = thread_cpu_ms();
      for (size_t n = 0; n < runs.size(); ++n) GRIST_TRY(run_node(n, i > 0));
      if (i > 0) passes.push_back(thread_cpu_ms() - c0);
    }
  } else {
    for (size_t n = 0; n < runs.size(); ++n)
      for (int i = 0; i <= iters; ++i) GRIST_TRY(run_node(n, i > 0));
  }
  nlohmann::json nodes = nlohmann::json::array();
  std::map<std::string, double> per_op;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const double m = median(samples[n]);
    per_op[node.op_type] += m;
    const std::string shape = runs[n].out.empty() || !runs[n].out[0] ? "" : runs[n].out[0]->shape().str();
    nodes.push_back({{"name", node.name}, {"op", node.op_type}, {"shape", shape}, {"median_ms", m}});
  }
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, ms] : per_op) ops[op] = ms;
  nlohmann::json j{{"nodes", nodes}, {"ops", ops}};
  if (in_order) j["pass_ms"] = median(passes);
  return j;
}

Result<nlohmann::json> time_model(const std::string& spec, const Options& o) {
  const size_t eq = spec.find('=');
  const std::string path = spec.substr(0, eq), input = eq == std::string::npos ? "" : spec.substr(eq + 1);
  auto graph = import_onnx_file(path);
  if (!graph) return graph.error();
  const Graph& g = *graph;
  ExecutorOptions eo;
  eo.scan_nonfinite = o.scan;
  eo.release_dead_values = o.forward_only;
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
  if (o.profile || o.in_order) {
    if (o.forward_only) {  // the kernels alone re-run on the values a full forward keeps
      ex.options().release_dead_values = false;
      GRIST_TRY(ex.forward());
    }
    auto p = profile_nodes(g, ex, o.iters, o.in_order);
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
    } else if (a == "--forward-only") {
      o.forward_only = true;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--profile-in-order") {
      o.in_order = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "model_bench: unknown option %s\n", a.c_str());
      return 2;
    } else {
      models.push_back(a);
    }
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: model_bench [--iters N] [--warmup N] [--threads N] [--no-scan] [--forward-only] [--profile | --profile-in-order] "
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
