// ExecutorOptions::release_dead_values (grist run's forward-only pass): each activation is freed after its last
// consumer, the outputs and the first-producer report stay as a full forward gives them.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>
#include <limits>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "support/graph_builder.h"

using namespace grist;
using grist::testing::GraphBuilder;

namespace {

// a = exp(x), b = log(a - 3) (NaN for small x), c = a * b read again by the output, d unused by anything.
Graph diamond() {
  return GraphBuilder()
      .input("x", DType::Float32, {4})
      .constant("three", Tensor::from<float>({1}, {3.0f}))
      .node("Exp", {"x"}, {"a"})
      .node("Sub", {"a", "three"}, {"s"})
      .node("Log", {"s"}, {"b"})
      .node("Neg", {"b"}, {"d"})
      .node("Mul", {"a", "b"}, {"c"})
      .node("Add", {"c", "a"}, {"y"})
      .output("y")
      .build();
}

Executor forward(const Graph& g, bool release, const Tensor& x) {
  ExecutorOptions o;
  o.release_dead_values = release;
  auto ex = Executor::create(g, o);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  EXPECT_TRUE(ex->set_input("x", x).is_ok());
  EXPECT_TRUE(ex->forward().is_ok());
  return std::move(ex).value();
}

}  // namespace

TEST(ReleaseDeadValues, SameOutputAndFirstProducerWithOnlyTheOutputHeld) {
  const Graph g = diamond();
  const Tensor x = Tensor::from<float>({4}, {0.5f, 2.0f, -1.0f, 3.0f});  // exp < 3 at 0.5 and -1: log of < 0
  Executor full = forward(g, false, x), freed = forward(g, true, x);
  const ValueId y = g.find_value("y");
  for (int64_t i = 0; i < 4; ++i) {
    const float a = full.value(y).data<float>()[i], b = freed.value(y).data<float>()[i];
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << i << ": " << a << " vs " << b;
  }
  EXPECT_TRUE(std::isnan(freed.value(y).data<float>()[0]));
  ASSERT_TRUE(freed.forward_event().found);
  EXPECT_EQ(freed.forward_event().op_type, full.forward_event().op_type);
  EXPECT_EQ(freed.forward_event().value_name, "b");
  EXPECT_EQ(freed.forward_event().first_index, full.forward_event().first_index);
  for (const char* name : {"a", "s", "b", "c", "d"}) {
    EXPECT_TRUE(full.value(g.find_value(name)).defined()) << name;
    EXPECT_FALSE(freed.value(g.find_value(name)).defined()) << name << " was not freed";
  }
  EXPECT_TRUE(freed.value(g.find_value("x")).defined());
  EXPECT_TRUE(freed.value(g.find_value("three")).defined());
  EXPECT_FALSE(freed.backward(y).is_ok());
}

TEST(ReleaseDeadValues, ASecondForwardRecomputesFromNewInputs) {
  const Graph g = diamond();
  Executor ex = forward(g, true, Tensor::from<float>({4}, {2.0f, 2.0f, 2.0f, 2.0f}));
  EXPECT_FALSE(ex.forward_event().found);
  ASSERT_FALSE(ex.value(g.find_value("a")).defined());  // the second pass starts from freed values
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({4}, {3.0f, 2.0f, 2.0f, 2.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  const float a = std::exp(3.0f), want = a * std::log(a - 3.0f) + a;
  EXPECT_FLOAT_EQ(ex.value(g.find_value("y")).data<float>()[0], want);
}

// A forward-only pass keeps small node scratch for the next (BatchNormalization's statistics and factors: 12 KB a
// node over 1,000 channels), within 1 MiB over the graph: 100 such nodes keep 86 of theirs. Nodes of 2,000 channels
// (24 KB each) keep none. Every pass gives what a pass keeping every value gives.
TEST(ReleaseDeadValues, SmallScratchIsKeptWithinItsBudget) {
  for (int64_t channels : {1000, 2000}) {
    SCOPED_TRACE(channels);
    std::vector<float> ones(static_cast<size_t>(channels), 1.0f), halves(static_cast<size_t>(channels), 0.5f);
    auto filled = [&](const std::vector<float>& v) {
      Tensor t(DType::Float32, {channels});
      std::copy(v.begin(), v.end(), t.data<float>());
      return t;
    };
    GraphBuilder b;
    b.input("x", DType::Float32, {1, channels, 1, 1})
        .constant("scale", filled(halves))
        .constant("bias", filled(ones))
        .constant("mean", filled(halves))
        .constant("var", filled(ones));
    std::string prev = "x";
    for (int i = 0; i < 100; ++i) {
      const std::string next = "b" + std::to_string(i);
      b.node("BatchNormalization", {prev, "scale", "bias", "mean", "var"}, {next});
      prev = next;
    }
    const Graph g = b.output(prev).build();
    Tensor x(DType::Float32, {1, channels, 1, 1});
    for (int64_t i = 0; i < channels; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
    const Executor full = forward(g, false, x);
    Executor freed = forward(g, true, x);
    const size_t node_bytes = 3 * ((static_cast<size_t>(channels) * sizeof(float) + 63) / 64 * 64);  // 64-byte rounded
    if (channels == 1000) {
      EXPECT_EQ(freed.kept_scratch_bytes(), (size_t{1} << 20) / node_bytes * node_bytes);
    } else {
      EXPECT_EQ(freed.kept_scratch_bytes(), 0u);
    }
    const ValueId y = g.find_value(prev);
    for (int pass = 0; pass < 2; ++pass) {
      ASSERT_TRUE(freed.forward().is_ok());
      ASSERT_EQ(std::memcmp(full.value(y).raw(), freed.value(y).raw(), full.value(y).nbytes()), 0) << "pass " << pass;
    }
  }
}
