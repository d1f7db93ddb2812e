// LSTM, GRU and RNN: forward values against the ONNX equations written out for scalar states, the
// structure of directions, sequence_lens and layout (each against a composition of simpler runs),
// activations and clip, error paths, gradients by finite differences (every float input, every direction,
// short sequences, initial states, layout 1, both GRU resets, peepholes, coupled gates, clip), and the
// interval transfer's soundness at points drawn from the input boxes.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "support/op_test_util.h"

namespace grist::testing {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

Tensor values(const Shape& s, std::vector<double> v) {
  Tensor t(DType::Float64, s);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  std::copy(v.begin(), v.end(), t.data<double>());
  return t;
}

Tensor lengths(std::vector<int32_t> v) {
  Tensor t(DType::Int32, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

Attribute attr_strings(std::vector<std::string> v) {
  Attribute a;
  a.type = Attribute::Type::Strings;
  a.strings = std::move(v);
  return a;
}

int gates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
int outputs_of(const std::string& op) { return op == "LSTM" ? 3 : 2; }

Spec recurrent(const std::string& op, int64_t hidden, const std::string& direction = "forward") {
  Spec s(op);
  s.attr("hidden_size", attr_int(hidden)).attr("direction", attr_string(direction)).outputs(outputs_of(op)).opset(14);
  return s;
}

// Random operands for op with the given sizes, in ONNX input order; optional ones left undefined unless asked.
struct Operands {
  bool bias = true, lens = false, initial = false, peepholes = false, batch_first = false;
  std::vector<int32_t> sequence_lens = {};
};

std::vector<Tensor> operands(const std::string& op, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
                             int directions, const Operands& o, uint64_t seed, double scale = 1) {
  Rng rng(seed);
  const int64_t gw = gates(op) * hidden, nd = directions;
  const Shape x = o.batch_first ? Shape{batch, seq, input} : Shape{seq, batch, input};
  const Shape state = o.batch_first ? Shape{batch, nd, hidden} : Shape{nd, batch, hidden};
  std::vector<Tensor> in{random_tensor(rng, x, -scale, scale), random_tensor(rng, {nd, gw, input}, -scale, scale),
                         random_tensor(rng, {nd, gw, hidden}, -scale, scale)};
  in.push_back(o.bias ? random_tensor(rng, {nd, 2 * gw}, -scale, scale) : Tensor());
  in.push_back(o.lens ? lengths(o.sequence_lens) : Tensor());
  in.push_back(o.initial ? random_tensor(rng, state, -scale, scale) : Tensor());
  if (op == "LSTM") {
    in.push_back(o.initial ? random_tensor(rng, state, -scale, scale) : Tensor());
    in.push_back(o.peepholes ? random_tensor(rng, {nd, 3 * hidden}, -scale, scale) : Tensor());
  }
  while (!in.empty() && !in.back().defined()) in.pop_back();
  return in;
}

// ---- forward: the equations, one scalar state --------------------------------------------------------

TEST(Rnn, ScalarStateFollowsTheEquation) {
  // Hₜ = tanh(Xₜ·W + Hₜ₋₁·R + Wb + Rb)
  const std::vector<double> xs = {0.3, -0.7, 1.1};
  auto out = run_node(recurrent("RNN", 1), {values({3, 1, 1}, xs), values({1, 1, 1}, {0.5}), values({1, 1, 1}, {-0.8}),
                                            values({1, 2}, {0.1, 0.2}), Tensor(), values({1, 1, 1}, {0.4})});
  ASSERT_EQ(out.size(), 2u);
  double h = 0.4;
  for (size_t t = 0; t < xs.size(); ++t) {
    h = std::tanh(0.5 * xs[t] - 0.8 * h + 0.3);
    EXPECT_NEAR(out[0].get_as_double(static_cast<int64_t>(t)), h, 1e-15);
  }
  EXPECT_EQ(out[0].shape(), (Shape{3, 1, 1, 1}));
  EXPECT_NEAR(out[1].get_as_double(0), h, 1e-15);
}

TEST(Lstm, ScalarStateWithPeepholesFollowsTheEquations) {
  // Gates in the order i, o, f, c; peepholes i, o, f; o sees the new cell state.
  const double w[4] = {0.5, -0.3, 0.8, 0.2}, r[4] = {-0.4, 0.6, 0.1, 0.9};
  const double wb[4] = {0.1, 0.2, -0.1, 0.05}, rb[4] = {0.0, -0.2, 0.3, 0.1}, p[3] = {0.7, -0.5, 0.25};
  const std::vector<double> xs = {0.9, -0.4};
  auto out = run_node(
      recurrent("LSTM", 1),
      {values({2, 1, 1}, xs), values({1, 4, 1}, {w[0], w[1], w[2], w[3]}), values({1, 4, 1}, {r[0], r[1], r[2], r[3]}),
       values({1, 8}, {wb[0], wb[1], wb[2], wb[3], rb[0], rb[1], rb[2], rb[3]}), Tensor(), values({1, 1, 1}, {0.3}),
       values({1, 1, 1}, {-0.6}), values({1, 3}, {p[0], p[1], p[2]})});
  ASSERT_EQ(out.size(), 3u);
  double h = 0.3, c = -0.6;
  for (size_t t = 0; t < xs.size(); ++t) {
    const double x = xs[t];
    const double i = sigmoid(w[0] * x + r[0] * h + wb[0] + rb[0] + p[0] * c);
    const double f = sigmoid(w[2] * x + r[2] * h + wb[2] + rb[2] + p[2] * c);
    const double g = std::tanh(w[3] * x + r[3] * h + wb[3] + rb[3]);
    c = f * c + i * g;
    const double o = sigmoid(w[1] * x + r[1] * h + wb[1] + rb[1] + p[1] * c);
    h = o * std::tanh(c);
    EXPECT_NEAR(out[0].get_as_double(static_cast<int64_t>(t)), h, 1e-15);
  }
  EXPECT_NEAR(out[1].get_as_double(0), h, 1e-15);
  EXPECT_NEAR(out[2].get_as_double(0), c, 1e-15);
}

TEST(Lstm, InputForgetCouplesTheForgetGateToTheInputGate) {
  const std::vector<double> w = {0.5, -0.3, 9.0, 0.2}, r = {-0.4, 0.6, 9.0, 0.9};  // f's weights are unused
  auto out = run_node(recurrent("LSTM", 1).attr("input_forget", attr_int(1)),
                      {values({1, 1, 1}, {0.7}), values({1, 4, 1}, w), values({1, 4, 1}, r), Tensor(), Tensor(),
                       values({1, 1, 1}, {0.2}), values({1, 1, 1}, {0.5})});
  ASSERT_EQ(out.size(), 3u);
  const double i = sigmoid(0.5 * 0.7 - 0.4 * 0.2), g = std::tanh(0.2 * 0.7 + 0.9 * 0.2);
  const double c = (1 - i) * 0.5 + i * g;
  EXPECT_NEAR(out[2].get_as_double(0), c, 1e-15);
  EXPECT_NEAR(out[1].get_as_double(0), sigmoid(-0.3 * 0.7 + 0.6 * 0.2) * std::tanh(c), 1e-15);
}

void expect_scalar_gru(bool linear_before_reset) {
  // Gates z, r, h. linear_before_reset = 0: ĥ = tanh(X·Wh + (r·H)·Rh + Wbh + Rbh);
  // linear_before_reset = 1: ĥ = tanh(X·Wh + r·(H·Rh + Rbh) + Wbh).
  const double w[3] = {0.5, -0.3, 0.8}, r[3] = {-0.4, 0.6, 0.7}, wb[3] = {0.1, 0.2, -0.1}, rb[3] = {0.3, -0.2, 0.4};
  const std::vector<double> xs = {0.9, -0.4, 0.2};
  auto out =
      run_node(recurrent("GRU", 1).attr("linear_before_reset", attr_int(linear_before_reset)),
               {values({3, 1, 1}, xs), values({1, 3, 1}, {w[0], w[1], w[2]}), values({1, 3, 1}, {r[0], r[1], r[2]}),
                values({1, 6}, {wb[0], wb[1], wb[2], rb[0], rb[1], rb[2]}), Tensor(), values({1, 1, 1}, {-0.5})});
  ASSERT_EQ(out.size(), 2u);
  double h = -0.5;
  for (size_t t = 0; t < xs.size(); ++t) {
    const double x = xs[t];
    const double z = sigmoid(w[0] * x + r[0] * h + wb[0] + rb[0]);
    const double reset = sigmoid(w[1] * x + r[1] * h + wb[1] + rb[1]);
    const double cand = linear_before_reset ? std::tanh(w[2] * x + reset * (r[2] * h + rb[2]) + wb[2])
                                            : std::tanh(w[2] * x + (reset * h) * r[2] + wb[2] + rb[2]);
    h = (1 - z) * cand + z * h;
    EXPECT_NEAR(out[0].get_as_double(static_cast<int64_t>(t)), h, 1e-15) << "step " << t;
  }
  EXPECT_NEAR(out[1].get_as_double(0), h, 1e-15);
}

TEST(Gru, ScalarStateFollowsTheEquationsResettingBeforeTheProduct) { expect_scalar_gru(false); }
TEST(Gru, ScalarStateFollowsTheEquationsWithLinearBeforeReset) { expect_scalar_gru(true); }

// ---- forward: directions, lengths, layout ------------------------------------------------------------

// One batch entry of length L run on its own (X cut to L steps) gives the same Y (then zeros) and Y_h.
TEST(Recurrent, ShortSequencesRunOnTheirOwnStepsInBothDirections) {
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    for (const std::string direction : {"forward", "reverse"}) {
      SCOPED_TRACE(op + " " + direction);
      const std::vector<int32_t> lens = {4, 2, 0};
      auto in = operands(op, 4, 3, 2, 3, 1, {.lens = true, .initial = true, .sequence_lens = lens}, 3);
      auto all = run_node(recurrent(op, 3, direction), in);
      ASSERT_FALSE(all.empty());
      for (int64_t b = 0; b < 3; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)];
        for (int64_t j = 0; j < 3; ++j) {
          const double y_h = all[1].get_as_double(b * 3 + j);
          if (len == 0) {
            EXPECT_EQ(y_h, 0.0);  // an empty sequence has zero final states
          }
          for (int64_t t = len; t < 4; ++t) EXPECT_EQ(all[0].get_as_double((t * 3 + b) * 3 + j), 0.0);
        }
        if (len == 0) continue;
        // The entry alone: X[:len, b], its initial states.
        std::vector<Tensor> one = in;
        one[0] = Tensor(DType::Float64, {len, 1, 2});
        for (int64_t t = 0; t < len; ++t)
          for (int64_t i = 0; i < 2; ++i) one[0].data<double>()[t * 2 + i] = in[0].get_as_double((t * 3 + b) * 2 + i);
        one[4] = Tensor();
        for (size_t k : {size_t{5}, size_t{6}}) {
          if (k >= in.size()) continue;
          one[k] = Tensor(DType::Float64, {1, 1, 3});
          for (int64_t j = 0; j < 3; ++j) one[k].data<double>()[j] = in[k].get_as_double(b * 3 + j);
        }
        auto alone = run_node(recurrent(op, 3, direction), one);
        ASSERT_FALSE(alone.empty());
        for (int64_t j = 0; j < 3; ++j) {
          for (int64_t t = 0; t < len; ++t)
            EXPECT_NEAR(all[0].get_as_double((t * 3 + b) * 3 + j), alone[0].get_as_double(t * 3 + j), 1e-14);
          for (size_t k = 1; k < all.size(); ++k)
            EXPECT_NEAR(all[k].get_as_double(b * 3 + j), alone[k].get_as_double(j), 1e-14);
        }
      }
    }
}

// Reverse equals forward on the time-reversed X, with Y reversed back.
TEST(Recurrent, ReverseRunsForwardOverTheReversedSequence) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto in = operands(op, 3, 2, 2, 2, 1, {.initial = true}, 5);
    auto rev = run_node(recurrent(op, 2, "reverse"), in);
    Tensor flipped = in[0];
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t k = 0; k < 4; ++k) flipped.data<double>()[t * 4 + k] = in[0].get_as_double((2 - t) * 4 + k);
    in[0] = flipped;
    auto fwd = run_node(recurrent(op, 2), in);
    ASSERT_FALSE(rev.empty() || fwd.empty());
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t k = 0; k < 4; ++k)
        EXPECT_NEAR(rev[0].get_as_double(t * 4 + k), fwd[0].get_as_double((2 - t) * 4 + k), 1e-15);
    for (size_t k = 1; k < rev.size(); ++k) EXPECT_TRUE(tensors_close(fwd[k], rev[k], 0, 1e-15));
  }
}

// Bidirectional stacks a forward run with direction 0's weights and a reverse run with direction 1's.
TEST(Recurrent, BidirectionalStacksAForwardAndAReverseRun) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto in =
        operands(op, 3, 2, 2, 2, 2, {.lens = true, .initial = true, .peepholes = true, .sequence_lens = {3, 2}}, 9);
    auto both = run_node(recurrent(op, 2, "bidirectional"), in);
    ASSERT_FALSE(both.empty());
    for (int d = 0; d < 2; ++d) {
      std::vector<Tensor> one = in;
      for (size_t k : {1, 2, 3, 5, 6, 7}) {  // every per-direction operand: its slice d
        if (k >= in.size() || !in[k].defined()) continue;
        Shape s = in[k].shape();
        const int64_t per = in[k].numel() / 2;
        s[0] = 1;
        one[k] = Tensor(DType::Float64, s);
        std::copy(in[k].data<double>() + d * per, in[k].data<double>() + (d + 1) * per, one[k].data<double>());
      }
      auto single = run_node(recurrent(op, 2, d == 0 ? "forward" : "reverse"), one);
      ASSERT_FALSE(single.empty());
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t k = 0; k < 4; ++k)
          EXPECT_NEAR(both[0].get_as_double((t * 2 + d) * 4 + k), single[0].get_as_double(t * 4 + k), 1e-15);
      for (size_t o = 1; o < both.size(); ++o)
        for (int64_t k = 0; k < 4; ++k)
          EXPECT_NEAR(both[o].get_as_double(d * 4 + k), single[o].get_as_double(k), 1e-15);
    }
  }
}

// layout = 1 takes X as [batch, seq, input] and states as [batch, directions, hidden], and gives Y as
// [batch, seq, directions, hidden]: the layout-0 results transposed.
TEST(Recurrent, BatchFirstLayoutTransposesOperandsAndResults) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    const int64_t S = 3, B = 2, I = 2, H = 2, D = 2;
    auto in = operands(op, S, B, I, H, D, {.lens = true, .initial = true, .sequence_lens = {3, 1}}, 11);
    auto ref = run_node(recurrent(op, H, "bidirectional"), in);
    std::vector<Tensor> bf = in;
    bf[0] = Tensor(DType::Float64, {B, S, I});
    for (int64_t t = 0; t < S; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < I; ++i)
          bf[0].data<double>()[(b * S + t) * I + i] = in[0].get_as_double((t * B + b) * I + i);
    for (size_t k : {size_t{5}, size_t{6}}) {
      if (k >= in.size()) continue;
      bf[k] = Tensor(DType::Float64, {B, D, H});
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j)
            bf[k].data<double>()[(b * D + d) * H + j] = in[k].get_as_double((d * B + b) * H + j);
    }
    auto out = run_node(recurrent(op, H, "bidirectional").attr("layout", attr_int(1)), bf);
    ASSERT_FALSE(ref.empty() || out.empty());
    EXPECT_EQ(out[0].shape(), (Shape{B, S, D, H}));
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j)
            EXPECT_EQ(out[0].get_as_double(((b * S + t) * D + d) * H + j),
                      ref[0].get_as_double(((t * D + d) * B + b) * H + j));
    for (size_t o = 1; o < out.size(); ++o) {
      EXPECT_EQ(out[o].shape(), (Shape{B, D, H}));
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j)
            EXPECT_EQ(out[o].get_as_double((b * D + d) * H + j), ref[o].get_as_double((d * B + b) * H + j));
    }
  }
}

// ---- forward: activations, clip, float32, errors -----------------------------------------------------

TEST(Rnn, ActivationsTakeTheirAlphaAndBetaInOrder) {
  // The forward direction's LeakyRelu takes the first alpha; the reverse direction's HardSigmoid the second and the
  // beta.
  auto in = operands("RNN", 2, 1, 1, 1, 2, {.bias = false}, 2, 2.0);
  NodeSpec spec = recurrent("RNN", 1, "bidirectional")
                      .attr("activations", attr_strings({"LeakyRelu", "HardSigmoid"}))
                      .attr("activation_alpha", attr_floats({0.1, 0.3}))
                      .attr("activation_beta", attr_floats({0.4}));
  auto out = run_node(spec, in);
  ASSERT_EQ(out.size(), 2u);
  const double* x = in[0].data<double>();
  const double *w = in[1].data<double>(), *r = in[2].data<double>();
  double h = 0;
  for (int t = 0; t < 2; ++t) {
    const double a = w[0] * x[t] + r[0] * h;
    h = a >= 0 ? a : 0.1 * a;
    EXPECT_NEAR(out[0].get_as_double(t * 2), h, 1e-15);
  }
  h = 0;
  for (int t = 1; t >= 0; --t) {
    h = std::clamp(0.3 * (w[1] * x[t] + r[1] * h) + 0.4, 0.0, 1.0);
    EXPECT_NEAR(out[0].get_as_double(t * 2 + 1), h, 1e-15);
  }
}

TEST(Rnn, ClipBoundsTheActivationsInput) {
  auto out = run_node(recurrent("RNN", 1).attr("clip", attr_float(0.5)).attr("activations", attr_strings({"Relu"})),
                      {values({2, 1, 1}, {3.0, 0.2}), values({1, 1, 1}, {1.0}), values({1, 1, 1}, {0.0})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].get_as_double(0), 0.5);
  EXPECT_DOUBLE_EQ(out[0].get_as_double(1), 0.2);
}

TEST(Recurrent, Float32MatchesFloat64) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto in =
        operands(op, 4, 2, 3, 3, 2, {.lens = true, .initial = true, .peepholes = true, .sequence_lens = {4, 3}}, 13);
    std::vector<Tensor> in32(in.size());
    for (size_t k = 0; k < in.size(); ++k)
      if (in[k].defined()) {
        if (is_float(in[k].dtype()))
          cast_tensor(in[k], DType::Float32, in32[k]);
        else
          in32[k] = in[k];
      }
    auto out = run_node(recurrent(op, 3, "bidirectional"), in);
    auto out32 = run_node(recurrent(op, 3, "bidirectional"), in32);
    ASSERT_EQ(out.size(), out32.size());
    for (size_t k = 0; k < out.size(); ++k) {
      ASSERT_EQ(out32[k].dtype(), DType::Float32);
      Tensor widened;
      cast_tensor(out32[k], DType::Float64, widened);
      EXPECT_TRUE(tensors_close(out[k], widened, 1e-5, 1e-6));
    }
  }
}

TEST(Recurrent, RejectsMalformedNodes) {
  auto in = operands("LSTM", 2, 2, 3, 2, 1, {.lens = true, .sequence_lens = {2, 3}}, 1);
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 2), in).is_ok());  // a length beyond the sequence
  in = operands("LSTM", 2, 2, 3, 2, 1, {}, 1);
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 3), in).is_ok());  // hidden_size disagrees with W
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 2, "sideways"), in).is_ok());
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 2, "bidirectional"), in).is_ok());  // W has one direction
  EXPECT_FALSE(
      try_run_node(recurrent("LSTM", 2).attr("activations", attr_strings({"Sigmoid", "Cosh", "Tanh"})), in).is_ok());
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 2).attr("layout", attr_int(2)), in).is_ok());
  in[1] = Tensor(DType::Float64, {1, 8, 2});
  EXPECT_FALSE(try_run_node(recurrent("LSTM", 2), in).is_ok());  // W's input size is not X's
}

// ---- gradients -----------------------------------------------------------------------------------------

void expect_gradients(const std::string& op, const std::string& direction, Spec spec, const Operands& o,
                      uint64_t seed) {
  SCOPED_TRACE(op + " " + direction);
  const int directions = direction == "bidirectional" ? 2 : 1;
  expect_gradient_matches(spec, operands(op, 3, 3, 2, 2, directions, o, seed),
                          {.rel_tol = 1e-6, .abs_tol = 1e-8, .wrt = {}});
}

TEST(RecurrentGradient, EveryInputInEveryDirectionWithShortSequencesAndInitialStates) {
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    for (const std::string direction : {"forward", "reverse", "bidirectional"})
      expect_gradients(op, direction, recurrent(op, 2, direction),
                       {.lens = true, .initial = true, .peepholes = true, .sequence_lens = {3, 1, 2}}, 21);
}

TEST(RecurrentGradient, WithoutOptionalInputs) {
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    expect_gradients(op, "forward", recurrent(op, 2), {.bias = false}, 22);
}

TEST(RecurrentGradient, BatchFirstLayout) {
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    expect_gradients(
        op, "bidirectional", recurrent(op, 2, "bidirectional").attr("layout", attr_int(1)),
        {.lens = true, .initial = true, .peepholes = true, .batch_first = true, .sequence_lens = {2, 3, 1}}, 23);
}

TEST(RecurrentGradient, GruWithAndWithoutLinearBeforeReset) {
  for (int lbr : {0, 1})
    for (const std::string direction : {"forward", "bidirectional"})
      expect_gradients("GRU", direction, recurrent("GRU", 2, direction).attr("linear_before_reset", attr_int(lbr)),
                       {.lens = true, .initial = true, .sequence_lens = {1, 3, 2}}, 24 + static_cast<uint64_t>(lbr));
}

TEST(RecurrentGradient, LstmWithPeepholesAndCoupledGates) {
  expect_gradients("LSTM", "bidirectional", recurrent("LSTM", 2, "bidirectional").attr("input_forget", attr_int(1)),
                   {.lens = true, .initial = true, .peepholes = true, .sequence_lens = {3, 2, 3}}, 26);
}

TEST(RecurrentGradient, OtherActivationsAndClip) {
  // Smooth activations (no kink for the finite differences to straddle); clip 0.8 cuts some gate inputs.
  expect_gradients("LSTM", "forward",
                   recurrent("LSTM", 2)
                       .attr("activations", attr_strings({"HardSigmoid", "Softsign", "ScaledTanh"}))
                       .attr("activation_alpha", attr_floats({0.3, 1.5}))
                       .attr("activation_beta", attr_floats({0.5, 0.7})),
                   {.initial = true, .peepholes = true}, 27);
  expect_gradients(
      "GRU", "forward",
      recurrent("GRU", 2).attr("activations", attr_strings({"Sigmoid", "Softplus"})).attr("clip", attr_float(0.8)),
      {.initial = true}, 28);
  expect_gradients("RNN", "reverse", recurrent("RNN", 2, "reverse").attr("activations", attr_strings({"Elu"})),
                   {.initial = true}, 29);
}

// ---- interval transfer ---------------------------------------------------------------------------------


TEST(RecurrentBounds, HiddenStatesOfSaturatingCellsStayInTheirRangeForAnyInputs) {
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    for (const std::string direction : {"forward", "bidirectional"}) {
      SCOPED_TRACE(op + " " + direction);
      const int nd = direction == "bidirectional" ? 2 : 1;
      auto shapes =
          operands(op, 5, 2, 3, 3, nd, {.lens = true, .initial = true, .peepholes = true, .sequence_lens = {5, 2}}, 1);
      // Wide boxes: the gates saturate, the cell state grows by up to one a step.
      std::vector<Interval> boxes(shapes.size(), Interval{-4, 4});
      auto bounds = expect_bounds_sound(recurrent(op, 3, direction), shapes, boxes, 31);
      ASSERT_EQ(bounds.size(), static_cast<size_t>(outputs_of(op)));
      for (size_t o = 0; o < 2; ++o) {
        const Interval h = bounds[o].hull();
        EXPECT_FALSE(bounds[o].may_be_nan);
        // LSTM and RNN: within [−1, 1] exactly; GRU's convex combinations of the candidates and the initial
        // state within a few roundings of [−4, 4].
        EXPECT_GE(h.lo, op == "GRU" ? -4.0001 : -1.0);
        EXPECT_LE(h.hi, op == "GRU" ? 4.0001 : 1.0);
        EXPECT_GE(h.hi, 0.99);
      }
      if (op == "LSTM") {
        const Interval c = bounds[2].hull();
        EXPECT_FALSE(bounds[2].may_be_nan);
        EXPECT_LE(c.hi, 4 + 5 + 0.01);  // |initial_c| + one per step
        EXPECT_GE(c.hi, 9.0);
      }
    }
}

TEST(RecurrentBounds, LayoutOneAndUnboundedInputsKeepShapesAndAdmitNaN) {
  for (const std::string op : {"GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto shapes = operands(op, 4, 3, 2, 2, 2, {.initial = true, .batch_first = true}, 2);
    std::vector<Interval> boxes(shapes.size(), Interval{-2, 2});
    boxes[0] = {-kInf, kInf};  // X unbounded: inf − inf may make NaN, the hidden states still in range
    auto bounds = expect_bounds_sound(recurrent(op, 2, "bidirectional").attr("layout", attr_int(1)), shapes, boxes, 32);
    ASSERT_GE(bounds.size(), 2u);
    EXPECT_EQ(bounds[0].shape, (Shape{3, 4, 2, 2}));
    EXPECT_EQ(bounds[1].shape, (Shape{3, 2, 2}));
    EXPECT_TRUE(bounds[0].may_be_nan);
    EXPECT_LE(bounds[1].hull().hi, op == "GRU" ? 2.0001 : 1.0);  // GRU: within the initial state's [−2, 2]
  }
}

TEST(RecurrentBounds, UnboundedActivationsGiveUnboundedStatesOfTheRightShape) {
  auto shapes = operands("RNN", 3, 2, 2, 4, 1, {}, 3);
  std::vector<Interval> boxes(shapes.size(), Interval{-1, 1});
  auto bounds = expect_bounds_sound(recurrent("RNN", 4).attr("activations", attr_strings({"Relu"})), shapes, boxes, 33);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].shape, (Shape{3, 1, 2, 4}));
  EXPECT_FALSE(bounds[1].hull().finite());
  // LSTM with Relu as g: Y stays within o·tanh(C), the cell state is unbounded.
  shapes = operands("LSTM", 3, 2, 2, 2, 1, {}, 4);
  boxes.assign(shapes.size(), Interval{-1, 1});
  bounds = expect_bounds_sound(recurrent("LSTM", 2).attr("activations", attr_strings({"Sigmoid", "Relu", "Tanh"})),
                               shapes, boxes, 34);
  ASSERT_EQ(bounds.size(), 3u);
  EXPECT_LE(bounds[0].hull().hi, 1.0);
  EXPECT_FALSE(bounds[2].hull().finite());
}

}  // namespace
}  // namespace grist::testing
