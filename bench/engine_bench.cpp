// Engine micro-benchmarks (Google Benchmark): forward+backward of an MLP 784-128-10 at batch 1 and 64,
// of an MNIST-sized CNN at batch 50, and a plain Eigen 512×512 float product as the yardstick for the
// CNN's achieved GFLOP/s. Run: build/bench/engine_bench  (see docs/PERFORMANCE.md).
#include <benchmark/benchmark.h>

#include "util/eigen.h"

#include "engine/executor.h"
#include "graph/graph.h"
#include "util/rng.h"

using namespace grist;

namespace {

// Builds graphs in code: the CNN's weights (13 MB) are not worth a file.
class Builder {
 public:
  Builder() { g_.opsets[""] = 17; }
  std::string input(const std::string& name, DType dt, std::vector<int64_t> dims) {
    Value v;
    v.name = name;
    v.kind = ValueKind::Input;
    v.dtype = dt;
    std::vector<Dim> shape;
    for (int64_t d : dims) shape.push_back(Dim{d, {}});
    v.shape = shape;
    g_.inputs.push_back(g_.add_value(std::move(v)));
    return name;
  }
  std::string weight(const std::string& name, std::vector<int64_t> dims, double scale) {
    Tensor t(DType::Float32, Shape(dims));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng_.uniform(-scale, scale));
    return constant(name, std::move(t));
  }
  std::string constant(const std::string& name, Tensor t) {
    Value v;
    v.name = name;
    v.kind = ValueKind::Initializer;
    v.dtype = t.dtype();
    v.initial = std::make_shared<const Tensor>(std::move(t));
    g_.initializers.push_back(g_.add_value(std::move(v)));
    return name;
  }
  std::string node(const std::string& op, std::vector<std::string> ins,
                   std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = op + std::to_string(g_.nodes.size());
    n.opset = 17;
    n.attributes = std::move(attrs);
    for (const auto& in : ins) n.inputs.push_back(ensure(in));
    std::string out = n.name + "_out";
    n.outputs.push_back(ensure(out));
    g_.nodes.push_back(std::move(n));
    return out;
  }
  Graph finish(const std::string& out) {
    g_.outputs.push_back(g_.find_value(out));
    if (!g_.sort_topologically()) std::abort();
    return std::move(g_);
  }

 private:
  ValueId ensure(const std::string& name) {
    ValueId id = g_.find_value(name);
    if (id != kNoValue) return id;
    Value v;
    v.name = name;
    return g_.add_value(std::move(v));
  }
  Graph g_;
  Rng rng_{42};
};

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute integer(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::Int;
  a.i = v;
  return a;
}

// x[B,784] → Gemm 128 → Relu → Gemm 10 → SoftmaxCrossEntropyLoss(labels)
Graph mlp(int64_t batch) {
  Builder b;
  auto x = b.input("x", DType::Float32, {batch, 784});
  auto y = b.input("y", DType::Int64, {batch});
  auto h = b.node("Relu", {b.node("Gemm", {x, b.weight("w1", {128, 784}, 0.036), b.weight("b1", {128}, 0.036)},
                                  {{"transB", integer(1)}})});
  auto logits = b.node("Gemm", {h, b.weight("w2", {10, 128}, 0.088), b.weight("b2", {10}, 0.088)}, {{"transB", integer(1)}});
  return b.finish(b.node("SoftmaxCrossEntropyLoss", {logits, y}));
}

// x[B,1,28,28] → conv 5×5×32 → relu → pool → conv 5×5×64 → relu → pool → FC 1024 → relu → FC 10 → loss
Graph cnn(int64_t batch) {
  Builder b;
  auto x = b.input("x", DType::Float32, {batch, 1, 28, 28});
  auto y = b.input("y", DType::Int64, {batch});
  auto conv = [&](const std::string& in, const std::string& name, int64_t cin, int64_t cout) {
    auto c = b.node("Conv", {in, b.weight(name + ".w", {cout, cin, 5, 5}, 0.1), b.weight(name + ".b", {cout}, 0.1)},
                    {{"pads", ints({2, 2, 2, 2})}});
    return b.node("MaxPool", {b.node("Relu", {c})}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  };
  auto p2 = conv(conv(x, "conv1", 1, 32), "conv2", 32, 64);
  auto flat = b.node("Flatten", {p2}, {{"axis", integer(1)}});
  auto fc1 = b.node("Relu", {b.node("Gemm", {flat, b.weight("fc1.w", {1024, 3136}, 0.018), b.weight("fc1.b", {1024}, 0.018)},
                                    {{"transB", integer(1)}})});
  auto logits = b.node("Gemm", {fc1, b.weight("fc2.w", {10, 1024}, 0.03), b.weight("fc2.b", {10}, 0.03)}, {{"transB", integer(1)}});
  return b.finish(b.node("SoftmaxCrossEntropyLoss", {logits, y}));
}

Tensor random_floats(const Shape& s, Rng& rng) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.uniform());
  return t;
}

Tensor random_labels(int64_t n, Rng& rng) {
  Tensor t(DType::Int64, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng.below(10));
  return t;
}

void run_forward_backward(benchmark::State& state, const Graph& g, const Shape& x_shape, double flops_per_iter,
                          bool scan) {
  ExecutorOptions o;
  o.scan_nonfinite = scan;
  auto ex = Executor::create(g, o);
  if (!ex) {
    state.SkipWithError(ex.message().c_str());
    return;
  }
  Rng rng(1);
  if (!ex->set_input("x", random_floats(x_shape, rng)) || !ex->set_input("y", random_labels(x_shape[0], rng))) {
    state.SkipWithError("set_input failed");
    return;
  }
  ValueId loss = g.outputs[0];
  uint64_t allocs_before = 0;
  bool first = true;
  for (auto _ : state) {
    if (!ex->forward() || !ex->backward(loss)) {
      state.SkipWithError("forward/backward failed");
      return;
    }
    if (first) {
      allocs_before = Tensor::allocation_count();
      first = false;
    }
  }
  state.counters["tensor_allocs_after_first"] = static_cast<double>(Tensor::allocation_count() - allocs_before);
  if (flops_per_iter > 0)
    state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MlpForwardBackward(benchmark::State& state) {
  const int64_t batch = state.range(0);
  static Graph g1 = mlp(1), g64 = mlp(64);
  run_forward_backward(state, batch == 1 ? g1 : g64, Shape{batch, 784}, 0, state.range(1) != 0);
}
BENCHMARK(BM_MlpForwardBackward)->ArgsProduct({{1, 64}, {1, 0}})->ArgNames({"batch", "scan"})->Unit(benchmark::kMicrosecond);

// Multiply-adds of the CNN's convolutions and FC layers, ×2 for FLOPs, ×3 for forward + two backward products.
double cnn_flops(int64_t batch) {
  double conv1 = 28.0 * 28 * 32 * 25 * 1, conv2 = 14.0 * 14 * 64 * 25 * 32, fc = 3136.0 * 1024 + 1024.0 * 10;
  return 2.0 * 3.0 * batch * (conv1 + conv2 + fc);
}

void BM_CnnForwardBackward(benchmark::State& state) {
  static Graph g = cnn(50);
  run_forward_backward(state, g, Shape{50, 1, 28, 28}, cnn_flops(50), true);
}
BENCHMARK(BM_CnnForwardBackward)->Unit(benchmark::kMillisecond);

void BM_EigenGemm512(benchmark::State& state) {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  M a = M::Random(512, 512), b = M::Random(512, 512), c(512, 512);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 512 * 512 * 512 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_EigenGemm512)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
