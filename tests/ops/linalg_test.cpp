// MatMul and Gemm: forward against naive products, numpy shape rules, IEEE products, and gradients
// against finite differences for every transposition, broadcast and bias form. Einsum: the equations
// models write (attention, diagonals, implicit outputs, broadcast ellipses) against MatMul and by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "support/op_test_util.h"

namespace grist::testing {
namespace {

// Naive numpy matmul on already 2-D-or-more operands with equal batch shapes: c[b] = a[b]·b[b].
Tensor naive_batched_product(const Tensor& a, const Tensor& b, int64_t batch, int64_t m, int64_t k, int64_t n,
                             bool broadcast_a, bool broadcast_b, const Shape& out_shape) {
  Tensor c(DType::Float64, out_shape);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += a.get_as_double((broadcast_a ? 0 : t) * m * k + i * k + q) *
               b.get_as_double((broadcast_b ? 0 : t) * k * n + q * n + j);
        c.data<double>()[t * m * n + i * n + j] = s;
      }
  return c;
}

TEST(MatMul, MultipliesMatrices) {
  Tensor a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto out = run_node(node_spec("MatMul"), {a, b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<float>({2, 2}, {58, 64, 139, 154}), out[0]));
}

TEST(MatMul, PromotesOneDimensionalOperandsAndDropsTheirDimension) {
  Rng rng(1);
  auto shape_of = [&](Shape a, Shape b) {
    auto out = run_node(node_spec("MatMul"), {random_tensor(rng, a), random_tensor(rng, b)});
    return out.empty() ? Shape{-1} : out[0].shape();
  };
  EXPECT_EQ(shape_of({3}, {3, 4}), (Shape{4}));
  EXPECT_EQ(shape_of({2, 3}, {3}), (Shape{2}));
  EXPECT_EQ(shape_of({3}, {3}), (Shape{}));
  EXPECT_EQ(shape_of({5, 2, 3}, {3}), (Shape{5, 2}));
  EXPECT_EQ(shape_of({3}, {5, 3, 4}), (Shape{5, 4}));
}

TEST(MatMul, VectorDotProduct) {
  auto out =
      run_node(node_spec("MatMul"), {Tensor::from<double>({3}, {1, 2, 3}), Tensor::from<double>({3}, {4, 5, 6})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].get_as_double(0), 32.0);
}

TEST(MatMul, BroadcastsBatchDimensions) {
  Rng rng(2);
  Tensor a = random_tensor(rng, {2, 1, 3, 4});
  Tensor b = random_tensor(rng, {5, 4, 2});
  auto out = run_node(node_spec("MatMul"), {a, b});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 2; ++c) {
          double s = 0;
          for (int64_t q = 0; q < 4; ++q) s += a.get_as_double(i * 12 + r * 4 + q) * b.get_as_double(j * 8 + q * 2 + c);
          EXPECT_NEAR(out[0].get_as_double(((i * 5 + j) * 3 + r) * 2 + c), s, 1e-12);
        }
}

TEST(MatMul, SharedRightOperandMatchesPerItemProducts) {
  Rng rng(3);
  Tensor a = random_tensor(rng, {4, 3, 5});
  Tensor b = random_tensor(rng, {5, 2});
  auto out = run_node(node_spec("MatMul"), {a, b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(naive_batched_product(a, b, 4, 3, 5, 2, false, true, {4, 3, 2}), out[0], 1e-12, 1e-12));
}

TEST(MatMul, InfinityTimesZeroIsNaN) {
  auto out = run_node(node_spec("MatMul"),
                      {Tensor::from<float>({1, 2}, {INFINITY, 1.0f}), Tensor::from<float>({2, 1}, {0, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].get_as_double(0)));
}

TEST(MatMul, RejectsMismatchedInnerDimensions) {
  Rng rng(4);
  auto r = try_run_node(node_spec("MatMul"), {random_tensor(rng, {2, 3}), random_tensor(rng, {4, 2})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("inner dimensions"), std::string::npos) << r.message();
}

TEST(MatMul, RejectsIncompatibleBatchDimensions) {
  Rng rng(5);
  EXPECT_FALSE(
      try_run_node(node_spec("MatMul"), {random_tensor(rng, {2, 2, 3}), random_tensor(rng, {3, 3, 2})}).is_ok());
}

TEST(MatMul, RejectsIntegerAndMixedOperands) {
  Tensor i = Tensor::from<int32_t>({1, 1}, {1});
  EXPECT_FALSE(try_run_node(node_spec("MatMul"), {i, i}).is_ok());
  EXPECT_FALSE(
      try_run_node(node_spec("MatMul"), {Tensor::from<float>({1, 1}, {1}), Tensor::from<double>({1, 1}, {1})}).is_ok());
}

TEST(MatMulGradient, Matrices) {
  Rng rng(10);
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {3, 4}), random_tensor(rng, {4, 2})});
}

TEST(MatMulGradient, BatchFoldedIntoOneProduct) {
  Rng rng(11);
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {4, 5})});
}

TEST(MatMulGradient, BroadcastBatchesOnBothSides) {
  Rng rng(12);
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {2, 1, 3, 4}), random_tensor(rng, {3, 4, 2})});
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {3, 4}), random_tensor(rng, {2, 4, 2})});
}

TEST(MatMulGradient, OneDimensionalOperands) {
  Rng rng(13);
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {4}), random_tensor(rng, {2, 4, 3})});
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {4})});
  expect_gradient_matches(node_spec("MatMul"), {random_tensor(rng, {4}), random_tensor(rng, {4})});
}

// Products large enough for tile_product's path (tiled_gemm: at least 2^16 multiply-adds, the cached operand within
// 512 KB): the forward a·b and the weight gradient aᵀ·dY through it, the data gradient dY·bᵀ on Eigen's, checked
// against finite differences in float64 and, in float32, against the float64 result of the same values (the
// float tiles' masked column tails: 30 and 13 columns).
TEST(MatMulGradient, ProductsOnTheTiledPath) {
  Rng rng(14);
  for (const auto& [as, bs] : {std::pair{Shape{64, 40}, Shape{40, 30}}, std::pair{Shape{3, 70, 45}, Shape{45, 13}}}) {
    SCOPED_TRACE(as.str() + " · " + bs.str());
    const std::vector<Tensor> f64{random_tensor(rng, as), random_tensor(rng, bs)};
    expect_gradient_matches(node_spec("MatMul"), f64);
    std::vector<Tensor> f32(2);
    for (size_t i = 0; i < 2; ++i) cast_tensor(f64[i], DType::Float32, f32[i]);
    const std::vector<Tensor> y32 = run_node(node_spec("MatMul"), f32), y64 = run_node(node_spec("MatMul"), f64);
    const std::vector<Tensor> g32 = gradients_of(node_spec("MatMul"), f32), g64 = gradients_of(node_spec("MatMul"), f64);
    Tensor widened;
    cast_tensor(y32[0], DType::Float64, widened);
    EXPECT_TRUE(tensors_close(y64[0], widened, 1e-5, 1e-5));
    for (size_t i = 0; i < 2; ++i) {
      cast_tensor(g32[i], DType::Float64, widened);
      EXPECT_TRUE(tensors_close(g64[i], widened, 1e-5, 1e-5)) << "gradient of input " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------------

NodeSpec gemm_spec(int trans_a, int trans_b, double alpha, double beta) {
  return node_spec("Gemm", {{"transA", attr_int(trans_a)},
                            {"transB", attr_int(trans_b)},
                            {"alpha", attr_float(alpha)},
                            {"beta", attr_float(beta)}});
}

// alpha·op(A)·op(B) + beta·C with C broadcast, computed naively.
Tensor naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha, double beta) {
  const int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  Tensor y(DType::Float64, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += a.get_as_double(ta ? q * m + i : i * k + q) * b.get_as_double(tb ? j * k + q : q * n + j);
      double bias = 0;
      if (c) {
        const Shape& cs = c->shape();
        int64_t ci = cs.rank() == 0   ? 0
                     : cs.rank() == 1 ? (cs[0] == 1 ? 0 : j)
                                      : (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j);
        bias = beta * c->get_as_double(ci);
      }
      y.data<double>()[i * n + j] = alpha * s + bias;
    }
  return y;
}

TEST(Gemm, AllAttributesMatchNaiveProduct) {
  Rng rng(20);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Tensor a = random_tensor(rng, ta ? Shape{4, 3} : Shape{3, 4});
      Tensor b = random_tensor(rng, tb ? Shape{5, 4} : Shape{4, 5});
      Tensor c = random_tensor(rng, {1, 5});
      auto out = run_node(gemm_spec(ta, tb, 0.25, 0.35), {a, b, c});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(tensors_close(naive_gemm(a, b, &c, ta, tb, 0.25, 0.35), out[0], 1e-12, 1e-12))
          << "transA " << ta << " transB " << tb;
    }
}

TEST(Gemm, BroadcastsEveryBiasForm) {
  Rng rng(21);
  Tensor a = random_tensor(rng, {3, 4});
  Tensor b = random_tensor(rng, {4, 2});
  for (Shape cs : {Shape{}, Shape{1}, Shape{2}, Shape{1, 2}, Shape{3, 1}, Shape{3, 2}}) {
    Tensor c = random_tensor(rng, cs);
    auto out = run_node(gemm_spec(0, 0, 1.0, 2.0), {a, b, c});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(tensors_close(naive_gemm(a, b, &c, false, false, 1.0, 2.0), out[0], 1e-12, 1e-12)) << cs.str();
  }
}

TEST(Gemm, WorksWithoutBias) {
  Rng rng(22);
  Tensor a = random_tensor(rng, {2, 3});
  Tensor b = random_tensor(rng, {3, 2});
  auto out = run_node(node_spec("Gemm"), {a, b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(naive_gemm(a, b, nullptr, false, false, 1, 1), out[0], 1e-12, 1e-12));
}

TEST(Gemm, ZeroBetaStillPropagatesNaNBias) {
  // beta·C is computed as written: 0·NaN = NaN, as in the ONNX reference.
  auto out = run_node(gemm_spec(0, 0, 1.0, 0.0), {Tensor::from<float>({1, 1}, {1}), Tensor::from<float>({1, 1}, {1}),
                                                  Tensor::from<float>({1}, {NAN})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].get_as_double(0)));
}

TEST(Gemm, RejectsBadShapes) {
  Rng rng(23);
  EXPECT_FALSE(try_run_node(node_spec("Gemm"), {random_tensor(rng, {2, 3}), random_tensor(rng, {2, 3})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Gemm"), {random_tensor(rng, {2, 3, 1}), random_tensor(rng, {3, 2})}).is_ok());
  EXPECT_FALSE(
      try_run_node(node_spec("Gemm"), {random_tensor(rng, {2, 3}), random_tensor(rng, {3, 2}), random_tensor(rng, {3})})
          .is_ok());
}

// Every transposition of A [m, k] and B [k, n], small (Eigen's product) and large enough for the tiled path (alpha 1,
// at least 2^16 multiply-adds: tiled_gemm), C a matrix and a row.
void expect_every_transposition_matches(int64_t m, int64_t k, int64_t n, double alpha, double beta, const Shape& c) {
  Rng rng(30);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(::testing::Message() << "transA " << ta << " transB " << tb << ", m k n " << m << " " << k << " "
                                        << n);
      Tensor a = random_tensor(rng, ta ? Shape{k, m} : Shape{m, k});
      Tensor b = random_tensor(rng, tb ? Shape{n, k} : Shape{k, n});
      expect_gradient_matches(gemm_spec(ta, tb, alpha, beta), {a, b, random_tensor(rng, c)});
    }
}

TEST(GemmGradient, EveryTransposition) {
  expect_every_transposition_matches(3, 4, 2, 0.7, -1.3, {3, 2});
  expect_every_transposition_matches(48, 50, 29, 1.0, 1.0, {29});
}

TEST(GemmGradient, BroadcastBiasForms) {
  Rng rng(31);
  for (Shape cs : {Shape{}, Shape{2}, Shape{3, 1}, Shape{1, 2}}) {
    SCOPED_TRACE(cs.str());
    expect_gradient_matches(gemm_spec(0, 1, 1.5, 0.5),
                            {random_tensor(rng, {3, 4}), random_tensor(rng, {2, 4}), random_tensor(rng, cs)});
  }
}

TEST(GemmGradient, NoBias) {
  Rng rng(32);
  expect_gradient_matches(node_spec("Gemm"), {random_tensor(rng, {3, 4}), random_tensor(rng, {4, 2})});
}

TEST(LinalgSteadyState, RepeatedPassesAllocateNothing) {
  Rng rng(40);
  // Backward from every float output, each seeded with its own value; two passes after the first.
  constexpr BackwardFrom kEveryFloatOutput = BackwardFrom::FloatOutputsSeededWithValues;
  EXPECT_EQ(allocations_after_first_pass(node_spec("MatMul"),
                                         {random_tensor(rng, {2, 1, 3, 4}), random_tensor(rng, {3, 4, 2})},
                                         kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(
      allocations_after_first_pass(gemm_spec(1, 0, 0.5, 2.0),
                                   {random_tensor(rng, {4, 3}), random_tensor(rng, {4, 2}), random_tensor(rng, {2})},
                                   kEveryFloatOutput, 2),
      0u);
}

// ---- Einsum ---------------------------------------------------------------------------------------------

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  auto out = run_node(Spec("Einsum").attr("equation", attr_string(equation)).opset(12), inputs);
  return out.empty() ? Tensor() : out[0];
}

TEST(Einsum, AttentionScoresEqualTheBatchedMatMul) {
  Rng rng(3);
  const Tensor q = random_tensor(rng, {2, 3, 4, 5}), k = random_tensor(rng, {2, 3, 6, 5});
  const Tensor kt = run_node(Spec("Transpose").attr("perm", attr_ints({0, 1, 3, 2})), {k})[0];
  EXPECT_TRUE(tensors_close(run_node(Spec("MatMul"), {q, kt})[0], einsum("bhqd,bhkd->bhqk", {q, k}), 1e-12, 1e-12));
}

TEST(Einsum, DiagonalsTracesOuterProductsAndImplicitOutputs) {
  const Tensor m = Tensor::from<double>(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{3}, {1, 5, 9}), einsum("ii->i", {m})));
  EXPECT_TRUE(tensors_close(Tensor::scalar<double>(15), einsum("ii", {m})));      // implicit: the trace
  EXPECT_TRUE(tensors_close(run_node(Spec("Transpose"), {m})[0], einsum("ji", {m})));  // implicit: ij order
  const Tensor a = Tensor::from<double>(Shape{2}, {1, 2}), b = Tensor::from<double>(Shape{3}, {1, 10, 100});
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{2, 3}, {1, 10, 100, 2, 20, 200}), einsum("i,j->ij", {a, b})));
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{3}, {3, 30, 300}), einsum("i,j->j", {a, b})));
}

TEST(Einsum, ThreeOperandsAndBroadcastEllipses) {
  Rng rng(4);
  const Tensor a = random_tensor(rng, {2, 3}), b = random_tensor(rng, {3, 4}), c = random_tensor(rng, {4, 5});
  const Tensor ab = run_node(Spec("MatMul"), {a, b})[0];
  EXPECT_TRUE(tensors_close(run_node(Spec("MatMul"), {ab, c})[0], einsum("ij,jk,kl->il", {a, b, c}), 1e-12, 1e-12));
  // A batch of one against a batch of three: the ellipsis broadcasts as MatMul's batch dimensions do.
  const Tensor x = random_tensor(rng, {1, 2, 3}), y = random_tensor(rng, {3, 3, 4});
  EXPECT_TRUE(tensors_close(run_node(Spec("MatMul"), {x, y})[0], einsum("...ij,...jk->...ik", {x, y}), 1e-12, 1e-12));
  EXPECT_EQ(einsum("...ij,...jk", {x, y}).shape(), (Shape{3, 2, 4}));  // implicit output keeps the ellipsis first
}

TEST(Einsum, BadEquationsAreErrorsNamingTheProblem) {
  const Tensor m(DType::Float64, Shape{2, 3}), v(DType::Float64, Shape{4});
  auto fails = [&](const std::string& eq, const std::vector<Tensor>& in, const std::string& says) {
    auto r = try_run_node(Spec("Einsum").attr("equation", attr_string(eq)).opset(12), in);
    ASSERT_FALSE(r.is_ok()) << eq;
    EXPECT_NE(r.message().find(says), std::string::npos) << eq << ": " << r.message();
  };
  fails("ij,j->i", {m, v}, "label of size 3 and 4");
  fails("ij->i", {m, v}, "2 inputs");
  fails("ijk->i", {m}, "has rank 2");
  fails("i1->i", {m}, "unexpected '1'");
  fails("ij->k", {m}, "output label 'k' is in no operand");
}

TEST(Einsum, GradientsMatchFiniteDifferences) {
  Rng rng(5);
  expect_gradient_matches(Spec("Einsum").attr("equation", attr_string("bhqd,bhkd->bhqk")).opset(12),
                          {random_tensor(rng, {1, 2, 3, 2}), random_tensor(rng, {1, 2, 4, 2})});
  expect_gradient_matches(Spec("Einsum").attr("equation", attr_string("ij,jk,kl->il")).opset(12),
                          {random_tensor(rng, {2, 3}), random_tensor(rng, {3, 2}), random_tensor(rng, {2, 2})});
  expect_gradient_matches(Spec("Einsum").attr("equation", attr_string("ii->i")).opset(12), {random_tensor(rng, {3, 3})});
  expect_gradient_matches(Spec("Einsum").attr("equation", attr_string("...ij,...jk->...ik")).opset(12),
                          {random_tensor(rng, {1, 2, 3}), random_tensor(rng, {2, 3, 2})});
}

TEST(Einsum, IntervalTransferEnclosesTheKernel) {
  const NodeSpec spec = Spec("Einsum").attr("equation", attr_string("bij,bjk->bik")).opset(12);
  const std::vector<Tensor> shapes{Tensor(DType::Float32, Shape{2, 3, 4}), Tensor(DType::Float32, Shape{2, 4, 2})};
  for (const auto& boxes : std::vector<std::vector<Interval>>{{{-1, 2}, {0.5, 3}}, {{-1e3, 1e3}, {-2, -1}}})
    expect_bounds_sound(spec, shapes, boxes, 17, BoxLayout::PerElement);
  // A point box gives the product itself, within roundings.
  const auto bounds = expect_bounds_sound(Spec("Einsum").attr("equation", attr_string("ij,j->i")).opset(12),
                                          {Tensor(DType::Float32, Shape{2, 3}), Tensor(DType::Float32, Shape{3})},
                                          {{1, 1}, {2, 2}}, 18);
  ASSERT_FALSE(bounds.empty());
  EXPECT_NEAR(bounds[0].hull().lo, 6, 1e-5);
  EXPECT_NEAR(bounds[0].hull().hi, 6, 1e-5);
}

}  // namespace
}  // namespace grist::testing
