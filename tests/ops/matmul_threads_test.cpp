// Gemm and MatMul with several kernel threads (util/thread_pool.h) against the same ops on one: products split by
// output rows and by output columns, transposed operands, a batch folded into one product, broadcast batch items
// in chunks, and the backward's products, with NaN and infinities in an input reaching the same outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/op_test_util.h"
#include "util/thread_pool.h"

namespace grist::testing {
namespace {

struct ProductCase {
  const char* name;
  const char* op;
  Shape a, b;
  std::vector<std::pair<std::string, Attribute>> attrs;
  bool bias = false;  // Gemm's C, one per output column
  // What the kernel splits (output rows, output columns or broadcast items) and the multiply-adds per item:
  // the case must give more than one chunk under three threads, or it tests nothing.
  int64_t split_items = 0, work_per_item = 0;
};

void PrintTo(const ProductCase& c, std::ostream* os) { *os << c.name; }

std::vector<ProductCase> cases() {
  return {
      // 300 rows of 150 columns, 200 deep: split by rows.
      {"gemm_rows", "Gemm", {300, 200}, {200, 150}, {}, true, 300, 150 * 200},
      // 20 rows of 900 columns: split by columns.
      {"gemm_columns", "Gemm", {20, 256}, {256, 900}, {}, true, 900, 20 * 256},
      {"gemm_transposed_a", "Gemm", {200, 300}, {200, 150}, {{"transA", attr_int(1)}, {"alpha", attr_float(0.5)}},
       false, 300, 150 * 200},
      {"gemm_transposed_b", "Gemm", {30, 256}, {700, 256}, {{"transB", attr_int(1)}}, true, 700, 30 * 256},
      {"gemm_transposed_both", "Gemm", {256, 40}, {600, 256}, {{"transA", attr_int(1)}, {"transB", attr_int(1)}},
       false, 600, 40 * 256},
      // [16, 50, 64] · [64, 80]: one [800, 64] · [64, 80] product, split by rows.
      {"matmul_folded", "MatMul", {16, 50, 64}, {64, 80}, {}, false, 800, 80 * 64},
      // 18 broadcast items of [40, 64] · [64, 50].
      {"matmul_broadcast", "MatMul", {6, 1, 40, 64}, {3, 64, 50}, {}, false, 18, 40 * 64 * 50},
  };
}

std::vector<Tensor> inputs_for(const ProductCase& c, DType dtype, bool nonfinite) {
  Rng rng(47);
  Tensor a = random_tensor(rng, c.a, -1, 1, dtype), b = random_tensor(rng, c.b, -1, 1, dtype);
  if (nonfinite) {
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()};
    for (int i = 0; i < 9; ++i) {
      const auto at = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(a.numel()));
      if (dtype == DType::Float32) {
        a.data<float>()[at] = static_cast<float>(specials[i % 3]);
      } else {
        a.data<double>()[at] = specials[i % 3];
      }
    }
  }
  std::vector<Tensor> inputs{a, b};
  if (c.bias) {
    const bool trans_b = !c.attrs.empty() && c.attrs[0].first == "transB";
    inputs.push_back(random_tensor(rng, {trans_b ? c.b[0] : c.b[1]}, -1, 1, dtype));
  }
  return inputs;
}

// Outputs (forward) or input gradients (backward) with `threads` kernel threads.
std::vector<Tensor> run_with_threads(const ProductCase& c, const std::vector<Tensor>& inputs, int threads,
                                     bool backward) {
  set_kernel_threads(threads);
  auto out = backward ? gradients_of(node_spec(c.op, c.attrs), inputs) : run_node(node_spec(c.op, c.attrs), inputs);
  set_kernel_threads(1);
  return out;
}

void expect_agree(const Tensor& one, const Tensor& three, DType dtype, const std::string& what) {
  ASSERT_EQ(one.shape(), three.shape()) << what;
  for (int64_t i = 0; i < one.numel(); ++i) {
    const double a = one.get_as_double(i), t = three.get_as_double(i);
    if (!std::isfinite(a) || !std::isfinite(t)) {
      EXPECT_TRUE((std::isnan(a) && std::isnan(t)) || a == t) << what << " element " << i << ": " << a << " vs " << t;
    }
  }
  const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
  EXPECT_TRUE(tensors_close(one, three, tol, tol)) << what;
}

class ProductThreads : public ::testing::TestWithParam<ProductCase> {};

TEST_P(ProductThreads, TheCaseIsSplitUnderThreeThreads) {
  const ProductCase& c = GetParam();
  set_kernel_threads(3);
  const int64_t chunks = chunk_count(c.split_items, grain_for(c.work_per_item));
  set_kernel_threads(1);
  EXPECT_GT(chunks, 1) << c.name;
}

TEST_P(ProductThreads, ForwardAgreesWithOneThread) {
  const ProductCase& c = GetParam();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (bool nonfinite : {false, true}) {
      const auto inputs = inputs_for(c, dtype, nonfinite);
      auto one = run_with_threads(c, inputs, 1, false);
      auto three = run_with_threads(c, inputs, 3, false);
      ASSERT_EQ(one.size(), 1u);
      ASSERT_EQ(three.size(), 1u);
      int64_t nonfinite_outputs = 0;
      for (int64_t i = 0; i < one[0].numel(); ++i) nonfinite_outputs += !std::isfinite(one[0].get_as_double(i));
      EXPECT_EQ(nonfinite_outputs > 0, nonfinite) << c.name;
      expect_agree(one[0], three[0], dtype, std::string(c.name) + (nonfinite ? " non-finite" : ""));
    }
  }
}

TEST_P(ProductThreads, GradientsAgreeWithOneThread) {
  const ProductCase& c = GetParam();
  const auto inputs = inputs_for(c, DType::Float64, false);
  auto one = run_with_threads(c, inputs, 1, true);
  auto three = run_with_threads(c, inputs, 3, true);
  ASSERT_EQ(one.size(), inputs.size());
  ASSERT_EQ(three.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    expect_agree(one[i], three[i], DType::Float64, std::string(c.name) + " gradient " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Cases, ProductThreads, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace grist::testing
