// Soundness and precision of the interval transfers (ops/bounds.h). Soundness: random boxes per element (or
// one box for a whole tensor, or per block, as large tensors hold them), random float32 points inside, the
// op's own kernel on those points; every output must lie inside the computed interval, or the interval must
// admit NaN. Precision, where the exact range is known: on point boxes (every element's box one value, the
// first point drawn) the interval must hold the kernel's value within a few roundings of it, and for
// monotone element-wise ops on any box it must lie within rounding of the kernel's values at the corners;
// a transfer returning [−inf, inf] passes no precision check. Every property runs 100 cases from a fixed
// seed, printed (GRIST_PROPERTY_SEED=S runs another), and states and asserts how many points, elements and
// point boxes it checked. Then whole graphs: guards that `grist scan` must prove safe, and the unguarded
// forms it must flag.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "analysis/intervals.h"
#include "analysis/scan.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

namespace grist::testing {
namespace {

// ---- how much each property checked ---------------------------------------------------------------

constexpr uint64_t kDefaultPropertySeed = 20261201;
constexpr int kCasesPerProperty = 100;

uint64_t property_seed() {
  const char* env = std::getenv("GRIST_PROPERTY_SEED");
  return env ? std::strtoull(env, nullptr, 10) : kDefaultPropertySeed;
}

struct Tally {
  int cases = 0;           // property bodies run (shrinking included, which happens only on a failure)
  int points = 0;          // points whose kernel output was checked against the bounds
  int64_t elements = 0;    // output elements checked
  int point_boxes = 0;     // point boxes whose bounds were held to the kernel's value (OnPoints::Tight)
  int hull_boxes = 0;      // ... to the hull of the operands' values (OnPoints::WithinHull)
  int finite_boxes = 0;    // ... to finite bounds (OnPoints::Finite)
  int sound_boxes = 0;     // point boxes with no precision to hold (OnPoints::SoundOnly)
  int64_t precise = 0;     // output elements those checks held
};
Tally* g_tally = nullptr;

// Runs a property body kCasesPerProperty times from the fixed seed as a gtest, then prints and asserts
// what it checked: at least half of the points drawn (the kernel may reject some inputs, e.g. an index out
// of range), and point boxes in at least a tenth of the cases (the others hold subnormal or large values).
void run_property(const char* name, void (*body)()) {
  Tally tally;
  g_tally = &tally;
  rc::detail::TestParams params;
  params.seed = property_seed();
  params.maxSuccess = kCasesPerProperty;
  rc::detail::TestMetadata metadata;
  metadata.id = std::string("IntervalSoundness/") + name;
  metadata.description = name;
  const auto result = rc::detail::checkTestable(
      [body] {
        ++g_tally->cases;
        body();
      },
      metadata, params);
  g_tally = nullptr;
  if (!result.template is<rc::detail::SuccessResult>()) {
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    FAIL() << "seed " << params.seed << ": " << ss.str();
  }
  const int boxes = tally.point_boxes + tally.hull_boxes + tally.finite_boxes;
  std::printf("%s: seed %llu, %d cases, %d points (%lld elements) inside the bounds; %d point boxes (%lld elements) "
              "precise: %d tight, %d within the hull or channel, %d finite\n",
              name, static_cast<unsigned long long>(params.seed), tally.cases, tally.points,
              static_cast<long long>(tally.elements), boxes, static_cast<long long>(tally.precise), tally.point_boxes,
              tally.hull_boxes, tally.finite_boxes);
  EXPECT_EQ(tally.cases, kCasesPerProperty);
  EXPECT_GE(tally.points, tally.cases * 6 / 2) << "most drawn points were rejected by the kernel: nothing checked";
  EXPECT_GT(tally.elements, 0);
  EXPECT_GE(boxes, tally.cases / 10) << "too few point boxes held to the kernel's value";
  EXPECT_GT(tally.precise, 0);
}

// A property: a gtest named IntervalSoundness.NAME running the body below it as a rapidcheck property.
#define INTERVAL_PROPERTY(Name)                                                       \
  void interval_property_##Name();                                                    \
  TEST(IntervalSoundness, Name) { run_property(#Name, &interval_property_##Name); }   \
  void interval_property_##Name()

// ---- random cases ---------------------------------------------------------------------------------

struct Random {
  std::mt19937_64 rng;
  explicit Random(uint64_t seed) : rng(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }
  double uniform(double a, double b) { return a == b ? a : std::uniform_real_distribution<double>(a, b)(rng); }
};

// How wide the boxes of one case are: near-degenerate to wide, optionally reaching ±inf or overflow.
struct BoxStyle {
  double scale = 1;
  bool infinite = false;  // some bounds ±inf (values upstream of an overflow)
  bool positive = false;  // boxes in (0, scale] (Log, Sqrt, Pow bases)
};

BoxStyle random_style(Random& r, bool allow_inf = true) {
  // Tiny scales reach underflow, flushed and subnormal results (1e-39 is below FLT_MIN).
  static const double scales[] = {1e-39, 1e-20, 1e-3, 1, 10, 50, 1e4, 1e20, 1e38};
  BoxStyle s;
  s.scale = scales[r.pick(9)];
  s.infinite = allow_inf && r.coin(0.1);
  s.positive = r.coin(0.25);
  return s;
}

float to_f(double v) { return static_cast<float>(v); }

Interval random_box(Random& r, const BoxStyle& s) {
  const double m = s.scale;
  double a = s.positive ? r.uniform(0, m) : r.uniform(-m, m);
  double b = a;
  switch (r.pick(5)) {
    case 0: break;                                              // degenerate
    case 1: b = a + std::fabs(a) * 1e-6 + 1e-30; break;         // narrow
    case 2: b = s.positive ? r.uniform(0, m) : r.uniform(-m, m); break;
    case 3: a = s.positive ? 0 : -m, b = m; break;              // the whole range
    default: b = a + r.uniform(0, m); break;
  }
  Interval box{std::min<double>(to_f(a), to_f(b)), std::max<double>(to_f(a), to_f(b))};
  if (!std::isfinite(box.lo)) box.lo = -FLT_MAX;
  if (!std::isfinite(box.hi)) box.hi = FLT_MAX;
  if (s.infinite && r.coin(0.3)) box.lo = s.positive ? box.lo : -kInf;
  if (s.infinite && r.coin(0.3)) box.hi = kInf;
  return box;
}

float random_point(Random& r, Interval box) {
  if (box.lo == box.hi) return to_f(box.lo);
  switch (r.pick(5)) {
    case 0: return to_f(box.lo);
    case 1: return to_f(box.hi);
    case 2:
      if (box.contains(0)) return r.coin() ? 0.0f : -0.0f;
      [[fallthrough]];
    default: {
      const double lo = std::max(box.lo, -double(FLT_MAX)), hi = std::min(box.hi, double(FLT_MAX));
      float f = to_f(r.uniform(lo, hi));
      return std::clamp(f, to_f(box.lo), to_f(box.hi));  // float rounding must not leave the box
    }
  }
}

// One operand of the node under test.
struct Operand {
  Shape shape;
  bool exact = false;  // a known tensor (shape, axes, indices, exponent)
  Tensor value;
  bool smashed = false;  // one box for every element
  Shape grid;            // when set, one box per block of this grid (IntervalTensor::blocks)
  std::vector<Interval> boxes;
  DType dtype = DType::Float32;
};

Operand boxed(Random& r, const Shape& shape, const BoxStyle& s, bool allow_smash = true) {
  Operand o;
  o.shape = shape;
  o.smashed = allow_smash && shape.numel() > 1 && r.coin(0.3);
  if (allow_smash && !o.smashed && shape.rank() > 1 && r.coin(0.3)) {
    // Blocks along some dimensions, as large tensors hold them.
    for (int d = 0; d < shape.rank(); ++d) o.grid.push_back(r.coin() ? shape[d] : 1);
    if (o.grid.numel() == 1 || o.grid == shape) o.grid = Shape{};
  }
  const int64_t n = o.smashed ? 1 : o.grid.rank() > 0 ? o.grid.numel() : shape.numel();
  for (int64_t i = 0; i < n; ++i) o.boxes.push_back(random_box(r, s));
  return o;
}

Operand exact_i64(const std::vector<int64_t>& v) {
  Operand o;
  o.exact = true;
  o.shape = Shape{static_cast<int64_t>(v.size())};
  o.value = Tensor(DType::Int64, o.shape);
  std::copy(v.begin(), v.end(), o.value.data<int64_t>());
  o.dtype = DType::Int64;
  return o;
}

// A bool operand: each element known false, known true, or either.
Operand boolean(Random& r, const Shape& shape) {
  Operand o;
  o.shape = shape;
  o.dtype = DType::Bool;
  o.smashed = shape.numel() > 1 && r.coin(0.3);
  const int64_t n = o.smashed ? 1 : shape.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int kind = r.pick(3);
    o.boxes.push_back(kind == 0 ? Interval{0, 0} : kind == 1 ? Interval{1, 1} : Interval{0, 1});
  }
  return o;
}

Operand exact_f32(const Shape& shape, float v) {
  Operand o;
  o.exact = true;
  o.shape = shape;
  o.value = Tensor(DType::Float32, shape);
  std::fill_n(o.value.data<float>(), shape.numel(), v);
  return o;
}

IntervalTensor to_interval(const Operand& o) {
  if (o.exact) return IntervalTensor::of_exact(o.value);
  IntervalTensor t = IntervalTensor::filled(o.dtype, o.shape, {});
  t.lo.clear();
  t.hi.clear();
  for (const Interval& b : o.boxes) t.lo.push_back(b.lo), t.hi.push_back(b.hi);
  if (o.grid.rank() > 0) t.set_grid(o.grid);
  return t;
}

Tensor concrete(Random& r, const Operand& o) {
  if (o.exact) return o.value;
  Tensor t(o.dtype, o.shape);
  const IntervalTensor layout = to_interval(o);  // maps elements to their blocks
  for (int64_t i = 0; i < o.shape.numel(); ++i) {
    const Interval box = layout.at(i);
    if (o.dtype == DType::Int64) {
      t.data<int64_t>()[i] = static_cast<int64_t>(std::llround(r.uniform(box.lo, box.hi)));
    } else if (o.dtype == DType::Bool) {
      t.data<bool>()[i] = box.lo == box.hi ? box.lo != 0 : r.coin();
    } else {
      t.data<float>()[i] = random_point(r, box);
    }
  }
  return t;
}

std::string describe(const Operand& o) {
  if (o.exact) return fmt::format("exact {}", o.shape.str());
  std::string s = fmt::format("{}{} [", o.shape.str(),
                              o.smashed ? " smashed" : o.grid.rank() > 0 ? " blocks " + o.grid.str() : "");
  for (size_t i = 0; i < o.boxes.size() && i < 6; ++i) s += fmt::format(" [{:g}, {:g}]", o.boxes[i].lo, o.boxes[i].hi);
  return s + (o.boxes.size() > 6 ? " …]" : " ]");
}

// How tight a transfer is on point boxes, where the exact range is the kernel's one value. Most are tight
// (within a few roundings). Some are looser by design, and are held to what they promise (docs/TESTING.md):
//  - within the hull of their operands' values (and 0): selections whose transfer takes the hull of the
//    values they may pick (TopK's values, Pad's constant, OneHot's on/off values);
//  - within its channel's range: BatchNormalization in inference bounds each channel from the hull of
//    its inputs there, so an element is held to the range of the kernel's outputs in its channel;
//  - finite only: bool results ([0, 1]: transfers do not decide truth values), indices (ArgMax, ArgMin,
//    TopK's indices: the axis's range), normalisations by batch or layer statistics (|x − μ|/σ ≤ √(n − 1)),
//    the losses (weighted means), inference-mode Dropout (whether a mask applies is the executor's choice
//    at run time, so both are covered), a product of mixed signs (|Π x| ≤ max(max|x|, 1)ⁿ) and a random
//    draw ([low, high]);
//  - sound only: training-mode Dropout (a random mask) and a mean loss some of whose targets may be the
//    ignored class (all of them might be: 0/0).
enum class OnPoints { Tight, WithinHull, PerChannel, Finite, SoundOnly };

OnPoints expected_on_points(const NodeSpec& spec, const std::vector<Tensor>& probe, size_t output,
                            const Tensor& result) {
  static const std::set<std::string> finite_only = {"ArgMax", "ArgMin", "LayerNormalization", "Dropout",
                                                    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
                                                    "RandomUniform", "RandomUniformLike"};
  const std::string& op = spec.op_type;
  auto attr = [&](const char* name) -> const Attribute* {
    for (const auto& [n, a] : spec.attributes)
      if (n == name) return &a;
    return nullptr;
  };
  if (op == "Dropout" && probe.size() > 2 && probe[2].data<bool>()[0]) return OnPoints::SoundOnly;
  if (op == "Dropout" && probe.size() > 1 && static_cast<float>(probe[1].get_as_double(0)) == 1.0f)
    return OnPoints::SoundOnly;  // a ratio of 1 in float32: survivors, were a mask applied, scale by inf
  if (const Attribute* ignored = attr("ignore_index"); ignored && probe.size() > 1)
    for (int64_t e = 0; e < probe[1].numel(); ++e)
      if (probe[1].get_as_double(e) == static_cast<double>(ignored->i)) return OnPoints::SoundOnly;
  if (result.dtype() == DType::Bool || finite_only.count(op) || (op == "TopK" && output == 1)) return OnPoints::Finite;
  if (op == "BatchNormalization") {
    const Attribute* training = attr("training_mode");
    return training && training->i != 0 ? OnPoints::Finite : OnPoints::PerChannel;
  }
  if (op == "ReduceProd")
    for (int64_t e = 0; e < probe[0].numel(); ++e)
      if (probe[0].get_as_double(e) < 0) return OnPoints::Finite;
  if (op == "TopK" || op == "Pad" || op == "OneHot") return OnPoints::WithinHull;
  return OnPoints::Tight;
}

// Precision where the exact range is known: every operand's box shrunk to the value `probe` holds, so the
// range is the single value the kernel computes there. A tight interval holds it and is no wider than a
// few roundings: relative 1e-4 of the value, plus 1e-5 of the largest magnitude a sum of the operands'
// products could cancel (elements × max|x|, squared for two factors); integer results are exact.
void check_precise_on_points(const NodeSpec& spec, const Graph& g, const std::vector<Operand>& ops,
                             const std::vector<Tensor>& probe, ValueId out_id, size_t output) {
  IntervalOptions opts;
  double max_abs = 1;
  int64_t max_numel = 1;
  int boxed_floats = 0;
  Interval hull{0, 0};  // of every float operand's values, and 0
  for (size_t i = 0; i < ops.size(); ++i) {
    const Tensor& t = probe[i];
    for (int64_t e = 0; e < t.numel() && is_float(t.dtype()); ++e) {
      const double v = t.get_as_double(e);
      // Beyond ±1e4 the magnitudes, not the transfer, would set the width; subnormal operands may be flushed
      // to zero (FTZ), for which transfers rightly allow FLT_MIN per operation, enough to reach a log's pole.
      if (!(std::fabs(v) <= 1e4) || (v != 0 && std::fabs(v) < FLT_MIN)) return;
      hull = {std::min(hull.lo, v), std::max(hull.hi, v)};
    }
    // Indices, conditions and other non-float operands at one point are known values: exact, as the scan
    // holds constants; the float data get point boxes, which the transfers must bound tightly.
    if (ops[i].exact || !is_float(t.dtype())) {
      opts.given[fmt::format("in{}", i)] = IntervalTensor::of_exact(t);
      continue;
    }
    IntervalTensor point = IntervalTensor::filled(t.dtype(), t.shape(), {});
    point.lo.assign(static_cast<size_t>(t.numel()), 0);
    point.hi.assign(static_cast<size_t>(t.numel()), 0);
    for (int64_t e = 0; e < t.numel(); ++e) {
      const double v = t.get_as_double(e);
      point.lo[static_cast<size_t>(e)] = point.hi[static_cast<size_t>(e)] = v;
      max_abs = std::max(max_abs, std::fabs(v));
    }
    ++boxed_floats;
    max_numel = std::max(max_numel, t.numel());
    opts.given[fmt::format("in{}", i)] = std::move(point);
  }
  auto out = try_run_node(spec, probe);
  if (!out) return;
  auto a = analyze_intervals(g, opts);
  RC_ASSERT(a.is_ok());
  const IntervalTensor& y = a->values[static_cast<size_t>(out_id)];
  const Tensor& t = (*out)[output];
  RC_ASSERT(y.shape_known && t.numel() == y.numel());
  const OnPoints expected = expected_on_points(spec, probe, output, t);
  const double cancel = static_cast<double>(max_numel) * std::pow(max_abs, std::min(boxed_floats, 2));
  std::string inputs;
  for (const Tensor& p : probe) {
    inputs += "\n  " + p.shape().str() + " [";
    for (int64_t e = 0; e < p.numel() && e < 8; ++e) inputs += fmt::format(" {:g}", p.get_as_double(e));
    inputs += p.numel() > 8 ? " …]" : " ]";
  }
  int64_t held = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    if (!std::isfinite(v)) continue;  // NaN and ±inf: soundness is all there is to check
    const double lo = y.lo_at(i), hi = y.hi_at(i);
    const double slack = is_float(t.dtype()) ? 1e-4 * std::fabs(v) + 1e-5 * cancel + 1e-30 : 0;
    bool ok = lo <= v && v <= hi;
    std::string promise;
    switch (expected) {
      case OnPoints::Tight:
        ok = ok && hi - lo <= slack;
        promise = fmt::format("no wider than {:g}", slack);
        break;
      case OnPoints::WithinHull:
        ok = ok && lo >= hull.lo - slack && hi <= hull.hi + slack;
        promise = fmt::format("within the operands' hull [{:g}, {:g}]", hull.lo, hull.hi);
        break;
      case OnPoints::PerChannel: {
        const int64_t channels = t.shape()[1], inner = t.numel() / (t.shape()[0] * channels);
        const int64_t c = (i / inner) % channels;
        Interval range{kInf, -kInf};
        for (int64_t k = 0; k < t.numel(); ++k)
          if ((k / inner) % channels == c)
            range = {std::min(range.lo, t.get_as_double(k)), std::max(range.hi, t.get_as_double(k))};
        const double channel_slack = slack + 1e-4 * std::max(std::fabs(range.lo), std::fabs(range.hi));
        ok = ok && lo >= range.lo - channel_slack && hi <= range.hi + channel_slack;
        promise = fmt::format("within its channel's range [{:g}, {:g}]", range.lo, range.hi);
        break;
      }
      case OnPoints::Finite:
        ok = ok && lo >= -FLT_MAX && hi <= FLT_MAX;
        promise = "finite";
        break;
      case OnPoints::SoundOnly:
        promise = "sound";
        break;
    }
    if (!ok)
      RC_FAIL(fmt::format("{}: on point boxes output {} = {:g} is bounded by [{:g}, {:g}], not {}{}", spec.op_type, i,
                          v, lo, hi, promise, inputs));
    ++held;
  }
  Tally& tally = *g_tally;
  switch (expected) {
    case OnPoints::Tight: ++tally.point_boxes; break;
    case OnPoints::WithinHull:
    case OnPoints::PerChannel: ++tally.hull_boxes; break;
    case OnPoints::Finite: ++tally.finite_boxes; break;
    case OnPoints::SoundOnly: ++tally.sound_boxes; return;
  }
  tally.precise += held;
}

// The transfer through analyze_intervals (the call convention of `grist scan`), then `points` random
// points per operand through the kernel, each output checked against the bounds; then the precision
// check on point boxes at the first draw.
void check_sound(NodeSpec spec, const std::vector<Operand>& ops, Random& r, int points = 6, size_t output = 0) {
  std::vector<Tensor> probe;
  IntervalOptions opts;
  spec.constant_inputs.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    probe.push_back(concrete(r, ops[i]));
    if (ops[i].exact) spec.constant_inputs.push_back(static_cast<int>(i));
    opts.given[fmt::format("in{}", i)] = to_interval(ops[i]);
  }
  Graph g = make_single_node_graph(spec, probe);
  const ValueId out_id = g.nodes[0].outputs[output];
  if (output == 0) g.values[static_cast<size_t>(out_id)].dtype = DType::Float32;  // as in exported models
  auto a = analyze_intervals(g, opts);
  RC_ASSERT(a.is_ok());
  const IntervalTensor& y = a->values[static_cast<size_t>(out_id)];
  std::string inputs;
  for (const Operand& o : ops) inputs += "\n  " + describe(o);
  for (int p = 0; p < points; ++p) {
    std::vector<Tensor> in;
    for (const Operand& o : ops) in.push_back(concrete(r, o));
    auto out = try_run_node(spec, in);
    if (!out) continue;  // the kernel rejects this input (e.g. an index out of range): nothing to bound
    const Tensor& t = (*out)[output];
    RC_ASSERT(y.shape_known);
    RC_ASSERT(t.numel() == y.numel());
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get_as_double(i);
      if (std::isnan(v)) {
        if (!y.may_be_nan)
          RC_FAIL(fmt::format("{}: output {} is NaN, bounds say no NaN{}", spec.op_type, i, inputs));
        continue;
      }
      // A bound beyond the float32 range stands for ±inf.
      const double lo = y.lo_at(i) < -FLT_MAX ? -kInf : y.lo_at(i), hi = y.hi_at(i) > FLT_MAX ? kInf : y.hi_at(i);
      if (!(lo <= v && v <= hi))
        RC_FAIL(fmt::format("{}: output {} = {:g} outside [{:g}, {:g}]{}", spec.op_type, i, v, lo, hi, inputs));
    }
    ++g_tally->points;
    g_tally->elements += t.numel();
  }
  check_precise_on_points(spec, g, ops, probe, out_id, output);
}

Shape random_shape(Random& r, int min_rank, int max_rank, int max_dim = 4) {
  Shape s;
  const int rank = min_rank + r.pick(max_rank - min_rank + 1);
  for (int d = 0; d < rank; ++d) s.push_back(1 + r.pick(max_dim));
  return s;
}

// A shape that broadcasts to `out`: leading dims dropped, some dims set to 1.
Shape broadcast_operand(Random& r, const Shape& out) {
  Shape s;
  const int drop = r.pick(out.rank() + 1);
  for (int d = drop; d < out.rank(); ++d) s.push_back(r.coin(0.3) ? 1 : out[d]);
  return s;
}

uint64_t seed() { return *rc::gen::arbitrary<uint64_t>(); }

// ---- element-wise ---------------------------------------------------------------------------------

void unary_property(const char* op) {
  Random r(seed());
  BoxStyle s = random_style(r);
  if (std::string(op) == "Log" || std::string(op) == "Sqrt") s.positive = r.coin(0.7);
  check_sound({op}, {boxed(r, random_shape(r, 0, 3), s)}, r);
}

INTERVAL_PROPERTY(Neg) { unary_property("Neg"); }
INTERVAL_PROPERTY(Abs) { unary_property("Abs"); }
INTERVAL_PROPERTY(Exp) { unary_property("Exp"); }
INTERVAL_PROPERTY(Log) { unary_property("Log"); }
INTERVAL_PROPERTY(Sqrt) { unary_property("Sqrt"); }
INTERVAL_PROPERTY(Sigmoid) { unary_property("Sigmoid"); }
INTERVAL_PROPERTY(Tanh) { unary_property("Tanh"); }
INTERVAL_PROPERTY(Relu) { unary_property("Relu"); }
INTERVAL_PROPERTY(Reciprocal) { unary_property("Reciprocal"); }
INTERVAL_PROPERTY(Ceil) { unary_property("Ceil"); }
INTERVAL_PROPERTY(Floor) { unary_property("Floor"); }
INTERVAL_PROPERTY(Round) { unary_property("Round"); }
INTERVAL_PROPERTY(Sign) { unary_property("Sign"); }
INTERVAL_PROPERTY(Identity) { unary_property("Identity"); }
INTERVAL_PROPERTY(Erf) { unary_property("Erf"); }
INTERVAL_PROPERTY(Softplus) { unary_property("Softplus"); }
// Gelu is not monotone (minimum ≈ −0.17 at x ≈ −0.75): random boxes straddle it, and reach ±inf.
INTERVAL_PROPERTY(Gelu) {
  Random r(seed());
  const BoxStyle s = random_style(r);
  NodeSpec spec{"Gelu"};
  if (r.coin()) spec.attributes.push_back({"approximate", attr_string("tanh")});
  check_sound(spec, {boxed(r, random_shape(r, 0, 3), s)}, r);
}
INTERVAL_PROPERTY(Softsign) { unary_property("Softsign"); }
INTERVAL_PROPERTY(LeakyRelu) { unary_property("LeakyRelu"); }
INTERVAL_PROPERTY(IsInf) { unary_property("IsInf"); }
INTERVAL_PROPERTY(IsNaN) { unary_property("IsNaN"); }
INTERVAL_PROPERTY(Not) {
  Random r(seed());
  check_sound({"Not"}, {boolean(r, random_shape(r, 0, 3))}, r);
}

void binary_property(const char* op) {
  Random r(seed());
  const Shape out = random_shape(r, 0, 3);
  Shape sa = broadcast_operand(r, out), sb = broadcast_operand(r, out);
  if (r.coin()) sa = out; else sb = out;
  const BoxStyle s = random_style(r);
  check_sound({op}, {boxed(r, sa, s), boxed(r, sb, random_style(r))}, r);
}

INTERVAL_PROPERTY(Add) { binary_property("Add"); }
INTERVAL_PROPERTY(Max) { binary_property("Max"); }
INTERVAL_PROPERTY(Min) { binary_property("Min"); }
INTERVAL_PROPERTY(Equal) { binary_property("Equal"); }
INTERVAL_PROPERTY(Greater) { binary_property("Greater"); }
INTERVAL_PROPERTY(GreaterOrEqual) { binary_property("GreaterOrEqual"); }
INTERVAL_PROPERTY(Less) { binary_property("Less"); }
INTERVAL_PROPERTY(LessOrEqual) { binary_property("LessOrEqual"); }

void logic_property(const char* op) {
  Random r(seed());
  const Shape out = random_shape(r, 0, 3);
  Shape sa = broadcast_operand(r, out), sb = broadcast_operand(r, out);
  if (r.coin()) sa = out; else sb = out;
  check_sound({op}, {boolean(r, sa), boolean(r, sb)}, r);
}
INTERVAL_PROPERTY(And) { logic_property("And"); }
INTERVAL_PROPERTY(Or) { logic_property("Or"); }
INTERVAL_PROPERTY(Xor) { logic_property("Xor"); }

INTERVAL_PROPERTY(Where) {
  Random r(seed());
  const Shape out = random_shape(r, 0, 3);
  const BoxStyle s = random_style(r);
  check_sound({"Where"}, {boolean(r, r.coin() ? out : broadcast_operand(r, out)), boxed(r, out, s),
                          boxed(r, broadcast_operand(r, out), random_style(r))},
              r);
}
INTERVAL_PROPERTY(Sub) { binary_property("Sub"); }
INTERVAL_PROPERTY(Mul) { binary_property("Mul"); }
INTERVAL_PROPERTY(Div) { binary_property("Div"); }

INTERVAL_PROPERTY(Pow) {
  Random r(seed());
  const Shape shape = random_shape(r, 0, 3);
  const BoxStyle s = random_style(r);
  if (r.coin()) {
    static const float exps[] = {2, 3, 0.5f, -1, -2, 0, 1.5f, 4};
    check_sound({"Pow"}, {boxed(r, shape, s), exact_f32({}, exps[r.pick(8)])}, r);
  } else {
    BoxStyle e{static_cast<double>(1 + r.pick(4)), false, false};
    check_sound({"Pow"}, {boxed(r, shape, s), boxed(r, broadcast_operand(r, shape), e)}, r);
  }
}

INTERVAL_PROPERTY(Clip) {
  Random r(seed());
  const Shape shape = random_shape(r, 0, 3);
  const BoxStyle s = random_style(r);
  std::vector<Operand> ops{boxed(r, shape, s)};
  float lo = to_f(r.uniform(-s.scale, s.scale)), hi = to_f(r.uniform(-s.scale, s.scale));
  if (lo > hi) std::swap(lo, hi);
  if (r.coin()) {
    ops.push_back(exact_f32({}, lo));
    ops.push_back(exact_f32({}, hi));
  } else {
    ops.push_back(boxed(r, {}, s));
    ops.push_back(boxed(r, {}, s));
  }
  check_sound({"Clip"}, ops, r);
}

// ---- softmax ----------------------------------------------------------------------------------------

void softmax_property(const char* op) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 5);
  const int axis = r.pick(2 * shape.rank()) - shape.rank();
  NodeSpec spec{op, {{"axis", attr_int(axis)}}};
  if (r.coin(0.3)) spec.opset = 11;
  BoxStyle s = random_style(r, false);
  s.scale = std::min(s.scale, 1e4);
  check_sound(spec, {boxed(r, shape, s)}, r);
}

INTERVAL_PROPERTY(Softmax) { softmax_property("Softmax"); }
INTERVAL_PROPERTY(LogSoftmax) { softmax_property("LogSoftmax"); }

// ---- bilinear ---------------------------------------------------------------------------------------

INTERVAL_PROPERTY(MatMul) {
  Random r(seed());
  const int64_t m = 1 + r.pick(4), k = 1 + r.pick(5), n = 1 + r.pick(4);
  Shape batch = random_shape(r, 0, 2, 3);
  Shape sa = batch, sb = broadcast_operand(r, batch);
  sa.push_back(m), sa.push_back(k);
  sb.push_back(k), sb.push_back(n);
  if (r.coin(0.15)) sa = {k};
  if (r.coin(0.15)) sb = {k};
  const BoxStyle s = random_style(r, false);
  check_sound({"MatMul"}, {boxed(r, sa, s), boxed(r, sb, random_style(r, false))}, r);
}

INTERVAL_PROPERTY(Gemm) {
  Random r(seed());
  const int64_t m = 1 + r.pick(4), k = 1 + r.pick(5), n = 1 + r.pick(4);
  const bool ta = r.coin(), tb = r.coin();
  NodeSpec spec{"Gemm", {{"transA", attr_int(ta)}, {"transB", attr_int(tb)}}};
  if (r.coin()) spec.attributes.push_back({"alpha", attr_float(r.uniform(0, 2))});
  if (r.coin()) spec.attributes.push_back({"beta", attr_float(r.uniform(0, 2))});
  std::vector<Operand> ops{boxed(r, ta ? Shape{k, m} : Shape{m, k}, random_style(r, false)),
                           boxed(r, tb ? Shape{n, k} : Shape{k, n}, random_style(r, false))};
  if (r.coin(0.7)) ops.push_back(boxed(r, r.coin() ? Shape{n} : Shape{m, n}, random_style(r, false)));
  check_sound(spec, ops, r);
}

INTERVAL_PROPERTY(Conv) {
  Random r(seed());
  const int spatial = 1 + r.pick(2);
  const int64_t group = r.coin(0.3) ? 2 : 1;
  const int64_t c_in = group * (1 + r.pick(2)), c_out = group * (1 + r.pick(2));
  Shape xs{1 + r.pick(2), c_in}, ws{c_out, c_in / group};
  std::vector<int64_t> strides, pads(2 * spatial), dil;
  for (int d = 0; d < spatial; ++d) {
    const int64_t k = 1 + r.pick(3);
    xs.push_back(k + r.pick(4));
    ws.push_back(k);
    strides.push_back(1 + r.pick(2));
    dil.push_back(k > 1 && r.coin(0.2) ? 2 : 1);
    if (dil.back() == 2) xs[xs.rank() - 1] += k;
    pads[d] = r.pick(static_cast<int>(k));
    pads[spatial + d] = r.pick(static_cast<int>(k));
  }
  NodeSpec spec{"Conv", {{"strides", attr_ints(strides)}, {"pads", attr_ints(pads)}, {"dilations", attr_ints(dil)},
                         {"group", attr_int(group)}}};
  std::vector<Operand> ops{boxed(r, xs, random_style(r, false)), boxed(r, ws, random_style(r, false))};
  if (r.coin()) ops.push_back(boxed(r, {c_out}, random_style(r, false)));
  check_sound(spec, ops, r);
}

INTERVAL_PROPERTY(ConvTranspose) {
  Random r(seed());
  const int spatial = 1 + r.pick(2);
  const int64_t group = r.coin(0.3) ? 2 : 1;
  const int64_t c_in = group * (1 + r.pick(2)), c_out = 1 + r.pick(2);  // c_out per group
  Shape xs{1 + r.pick(2), c_in}, ws{c_in, c_out};
  std::vector<int64_t> strides, pads(2 * spatial);
  for (int d = 0; d < spatial; ++d) {
    const int64_t k = 1 + r.pick(3);
    xs.push_back(1 + r.pick(4));
    ws.push_back(k);
    strides.push_back(1 + r.pick(2));
    pads[d] = r.pick(static_cast<int>(k));
    pads[spatial + d] = r.pick(static_cast<int>(k));
  }
  NodeSpec spec{"ConvTranspose",
                {{"strides", attr_ints(strides)}, {"pads", attr_ints(pads)}, {"group", attr_int(group)}}};
  std::vector<Operand> ops{boxed(r, xs, random_style(r, false)), boxed(r, ws, random_style(r, false))};
  if (r.coin()) ops.push_back(boxed(r, {group * c_out}, random_style(r, false)));
  check_sound(spec, ops, r);
}

// ---- pooling ----------------------------------------------------------------------------------------

void pool_property(const char* op) {
  Random r(seed());
  const int spatial = 1 + r.pick(2);
  Shape xs{1 + r.pick(2), 1 + r.pick(2)};
  std::vector<int64_t> kernel, strides, pads(2 * spatial);
  for (int d = 0; d < spatial; ++d) {
    kernel.push_back(1 + r.pick(3));
    xs.push_back(kernel.back() + r.pick(4));
    strides.push_back(1 + r.pick(2));
    pads[d] = r.pick(static_cast<int>(kernel.back()));
    pads[spatial + d] = r.pick(static_cast<int>(kernel.back()));
  }
  NodeSpec spec{op, {{"kernel_shape", attr_ints(kernel)}, {"strides", attr_ints(strides)}, {"pads", attr_ints(pads)}}};
  if (r.coin(0.3)) spec.attributes.push_back({"ceil_mode", attr_int(1)});
  if (std::string(op) == "AveragePool" && r.coin()) spec.attributes.push_back({"count_include_pad", attr_int(1)});
  check_sound(spec, {boxed(r, xs, random_style(r))}, r);
}

INTERVAL_PROPERTY(MaxPool) { pool_property("MaxPool"); }
INTERVAL_PROPERTY(AveragePool) { pool_property("AveragePool"); }
INTERVAL_PROPERTY(GlobalAveragePool) {
  Random r(seed());
  check_sound({"GlobalAveragePool"}, {boxed(r, random_shape(r, 3, 4), random_style(r))}, r);
}

// ---- reductions -------------------------------------------------------------------------------------

void reduce_property(const char* op, bool axes_input) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 5);
  std::vector<int64_t> axes;
  for (int d = 0; d < shape.rank(); ++d)
    if (r.coin()) axes.push_back(r.coin() ? d : d - shape.rank());
  NodeSpec spec{op, {{"keepdims", attr_int(r.coin())}}};
  std::vector<Operand> ops{boxed(r, shape, random_style(r))};
  if (axes_input) {
    if (!axes.empty() || r.coin()) ops.push_back(exact_i64(axes));
  } else if (!axes.empty()) {
    spec.attributes.push_back({"axes", attr_ints(axes)});
  }
  check_sound(spec, ops, r);
}

INTERVAL_PROPERTY(ReduceSum) { reduce_property("ReduceSum", true); }
INTERVAL_PROPERTY(ReduceMean) { reduce_property("ReduceMean", false); }
INTERVAL_PROPERTY(ReduceMax) { reduce_property("ReduceMax", false); }
INTERVAL_PROPERTY(ReduceMin) { reduce_property("ReduceMin", false); }
INTERVAL_PROPERTY(ReduceSumSquare) { reduce_property("ReduceSumSquare", false); }
INTERVAL_PROPERTY(ReduceL1) { reduce_property("ReduceL1", false); }
INTERVAL_PROPERTY(ReduceL2) { reduce_property("ReduceL2", false); }
INTERVAL_PROPERTY(ReduceLogSumExp) { reduce_property("ReduceLogSumExp", false); }
INTERVAL_PROPERTY(ReduceLogSum) { reduce_property("ReduceLogSum", false); }
INTERVAL_PROPERTY(ReduceProd) { reduce_property("ReduceProd", false); }

void arg_extremum_property(const char* op) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 5);
  NodeSpec spec{op, {{"axis", attr_int(r.pick(2 * shape.rank()) - shape.rank())}, {"keepdims", attr_int(r.coin())}}};
  check_sound(spec, {boxed(r, shape, random_style(r))}, r);
}
INTERVAL_PROPERTY(ArgMax) { arg_extremum_property("ArgMax"); }
INTERVAL_PROPERTY(ArgMin) { arg_extremum_property("ArgMin"); }

// TopK's values (some of x's) and indices (positions along the axis).
INTERVAL_PROPERTY(TopK) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 5);
  const int axis = r.pick(shape.rank());
  NodeSpec spec{"TopK", {{"axis", attr_int(axis)}, {"largest", attr_int(r.coin())}}, 2};
  std::vector<Operand> ops{boxed(r, shape, random_style(r)), exact_i64({1 + r.pick(static_cast<int>(shape[axis]))})};
  check_sound(spec, ops, r, 6, static_cast<size_t>(r.pick(2)));
}

// ---- shape and selection ----------------------------------------------------------------------------

INTERVAL_PROPERTY(Reshape) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 4);
  std::vector<int64_t> target;
  switch (r.pick(3)) {
    case 0: target = {shape.numel()}; break;
    case 1: target = {shape[0], -1}; break;
    default: target = {0, -1, 1}; break;
  }
  check_sound({"Reshape"}, {boxed(r, shape, random_style(r)), exact_i64(target)}, r);
}

INTERVAL_PROPERTY(Flatten) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 4);
  check_sound({"Flatten", {{"axis", attr_int(r.pick(shape.rank() + 1))}}}, {boxed(r, shape, random_style(r))}, r);
}

INTERVAL_PROPERTY(SqueezeAndUnsqueeze) {
  Random r(seed());
  Shape shape = random_shape(r, 1, 3);
  const int at = r.pick(shape.rank() + 1);
  check_sound({"Unsqueeze"}, {boxed(r, shape, random_style(r)), exact_i64({at})}, r);
  std::vector<int64_t> dims = shape.to_vector();
  dims.insert(dims.begin() + at, 1);
  const Shape with_one(dims);
  check_sound({"Squeeze"}, {boxed(r, with_one, random_style(r)), exact_i64({at})}, r);
}

INTERVAL_PROPERTY(Expand) {
  Random r(seed());
  const Shape out = random_shape(r, 1, 3);
  const Shape in = broadcast_operand(r, out);
  std::vector<int64_t> target(out.begin(), out.end());
  check_sound({"Expand"}, {boxed(r, in, random_style(r)), exact_i64(target)}, r);
}

INTERVAL_PROPERTY(Cast) {
  Random r(seed());
  const DType to[] = {DType::Float64, DType::Int32, DType::Int64, DType::Bool, DType::Float32};
  const DType t = to[r.pick(5)];
  BoxStyle s = random_style(r, false);
  if (t == DType::Int32 || t == DType::Int64) s.scale = std::min(s.scale, 1e6);  // in the integer's range
  check_sound({"Cast", {{"to", attr_int(static_cast<int64_t>(t))}}}, {boxed(r, random_shape(r, 0, 3), s)}, r);
}

INTERVAL_PROPERTY(GatherElements) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3);
  const int axis = r.pick(shape.rank());
  Shape idx_shape = shape;
  idx_shape[axis] = 1 + r.pick(3);
  std::vector<int64_t> idx(static_cast<size_t>(idx_shape.numel()));
  for (auto& v : idx) v = r.pick(static_cast<int>(shape[axis]));
  Operand indices = exact_i64(idx);
  indices.shape = idx_shape;
  indices.value.reshape(idx_shape);
  check_sound({"GatherElements", {{"axis", attr_int(axis)}}}, {boxed(r, shape, random_style(r)), indices}, r);
}

INTERVAL_PROPERTY(GlobalMaxPool) {
  Random r(seed());
  const Shape shape{1 + r.pick(2), 1 + r.pick(3), 1 + r.pick(4), 1 + r.pick(4)};
  check_sound({"GlobalMaxPool"}, {boxed(r, shape, random_style(r))}, r);
}

INTERVAL_PROPERTY(Transpose) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 4);
  std::vector<int64_t> perm(static_cast<size_t>(shape.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), r.rng);
  check_sound({"Transpose", {{"perm", attr_ints(perm)}}}, {boxed(r, shape, random_style(r))}, r);
}

INTERVAL_PROPERTY(Concat) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3);
  const int axis = r.pick(shape.rank());
  std::vector<Operand> ops;
  const int n = 1 + r.pick(3);
  for (int i = 0; i < n; ++i) {
    Shape s = shape;
    s[axis] = 1 + r.pick(3);
    ops.push_back(boxed(r, s, random_style(r)));
  }
  check_sound({"Concat", {{"axis", attr_int(axis)}}}, ops, r);
}

INTERVAL_PROPERTY(Slice) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 6);
  std::vector<int64_t> starts, ends, axes, steps;
  for (int d = 0; d < shape.rank(); ++d) {
    if (!r.coin(0.7)) continue;
    axes.push_back(d);
    const int64_t a = r.pick(static_cast<int>(shape[d])), b = r.pick(static_cast<int>(shape[d]) + 1);
    const bool back = r.coin(0.3);
    starts.push_back(back ? std::max(a, b) : std::min(a, b));
    ends.push_back(back ? std::min(a, b) - 1 : std::max(a, b));
    steps.push_back(back ? -1 - r.pick(2) : 1 + r.pick(2));
  }
  check_sound({"Slice"}, {boxed(r, shape, random_style(r)), exact_i64(starts), exact_i64(ends), exact_i64(axes),
                          exact_i64(steps)},
              r);
}

// Pad inserts its constant: the output's interval must hold it as well as the data (constant mode), or
// only the data (edge, reflect).
INTERVAL_PROPERTY(Pad) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 4);
  std::vector<int64_t> pads(static_cast<size_t>(2 * shape.rank()));
  for (auto& p : pads) p = r.pick(3);
  const char* modes[] = {"constant", "edge", "reflect"};
  const std::string mode = modes[r.pick(3)];
  if (mode == "reflect")
    for (int d = 0; d < shape.rank(); ++d) {  // reflect needs pads smaller than the dimension
      pads[static_cast<size_t>(d)] = std::min<int64_t>(pads[static_cast<size_t>(d)], shape[d] - 1);
      pads[static_cast<size_t>(d + shape.rank())] =
          std::min<int64_t>(pads[static_cast<size_t>(d + shape.rank())], shape[d] - 1);
    }
  std::vector<Operand> ops = {boxed(r, shape, random_style(r)), exact_i64(pads)};
  if (mode == "constant" && r.coin()) ops.push_back(exact_f32({}, to_f(r.uniform(-100, 100))));
  check_sound({"Pad", {{"mode", attr_string(mode)}}}, ops, r);
}

INTERVAL_PROPERTY(Tile) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 4);
  std::vector<int64_t> repeats;
  for (int d = 0; d < shape.rank(); ++d) repeats.push_back(1 + r.pick(3));
  check_sound({"Tile"}, {boxed(r, shape, random_style(r)), exact_i64(repeats)}, r);
}

INTERVAL_PROPERTY(Gather) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3);
  const int axis = r.pick(shape.rank());
  const int64_t dim = shape[axis];
  std::vector<int64_t> idx(static_cast<size_t>(1 + r.pick(4)));
  for (auto& v : idx) v = r.pick(static_cast<int>(2 * dim)) - dim;
  Operand indices = exact_i64(idx);
  if (r.coin()) {  // indices known only by their range (a ranged index operand)
    indices.exact = false;
    indices.boxes = {{double(-dim), double(dim - 1)}};
    indices.smashed = indices.shape.numel() > 1;
    if (!indices.smashed) indices.boxes = {{double(-dim), double(dim - 1)}};
  }
  check_sound({"Gather", {{"axis", attr_int(axis)}}}, {boxed(r, shape, random_style(r)), indices}, r);
}

// Indices exact, or known only by their range (any valid index).
Operand index_operand(Random& r, const Shape& shape, int64_t dim) {
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (auto& i : v) i = r.pick(static_cast<int>(dim));
  Operand o = exact_i64(v);
  o.shape = shape;
  o.value = Tensor(DType::Int64, shape);
  std::copy(v.begin(), v.end(), o.value.data<int64_t>());
  if (r.coin(0.3)) {
    o.exact = false;
    o.boxes = {{0, double(dim - 1)}};
    o.smashed = shape.numel() > 1;
  }
  return o;
}

// ---- dropout, losses, shapes ----------------------------------------------------------------------

// Dropout in training (a random mask, survivors scaled by 1 / (1 − ratio)) or inference (identity), with
// the ratio an attribute (opset 10), an exact input or one known by its range (RANUM's [0.1, 0.9]).
INTERVAL_PROPERTY(Dropout) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3);
  std::vector<Operand> ops{boxed(r, shape, random_style(r))};
  if (r.coin(0.3)) {
    check_sound({"Dropout", {{"ratio", attr_float(static_cast<float>(r.uniform(0, 0.9)))}}, 1, 10}, ops, r);
    return;
  }
  // Ratios up to 0.9, and one within 2^-26 of 1 (1 in float32: an infinite scale).
  Operand ratio = exact_f32({}, static_cast<float>(r.coin(0.1) ? 1 - 0x1.0p-26 : r.uniform(0, 0.9)));
  if (r.coin()) {
    ratio.exact = false;
    ratio.boxes = {{0.1, 0.9}};
  }
  ops.push_back(ratio);
  Operand training;
  training.exact = true;
  training.dtype = DType::Bool;
  training.value = Tensor(DType::Bool, {});
  training.value.data<bool>()[0] = r.coin();
  ops.push_back(training);
  check_sound({"Dropout"}, ops, r);
}

// NegativeLogLikelihoodLoss (and SoftmaxCrossEntropyLoss): x [N, C] or [N, C, D], class indices exact or known by their range, optional
// class weights (possibly 0 or negative: the mean then divides by a total that may be 0), ignore_index.
void loss_property(const char* op) {
  Random r(seed());
  const int64_t n = 1 + r.pick(3), classes = 1 + r.pick(4);
  Shape xs{n, classes}, ts{n};
  if (r.coin(0.3)) xs.push_back(1 + r.pick(3)), ts.push_back(xs[2]);
  std::vector<Operand> ops{boxed(r, xs, random_style(r))};
  ops.push_back(index_operand(r, ts, classes));
  if (r.coin()) {
    BoxStyle ws = random_style(r, false);
    ws.positive = r.coin(0.7);
    ops.push_back(boxed(r, {classes}, ws));
  }
  static const char* reductions[] = {"none", "sum", "mean"};
  NodeSpec spec{op, {{"reduction", attr_string(reductions[r.pick(3)])}}};
  if (r.coin(0.3)) spec.attributes.push_back({"ignore_index", attr_int(r.pick(static_cast<int>(classes)))});
  const bool log_prob = std::string(op) == "SoftmaxCrossEntropyLoss" && r.coin();
  if (log_prob) spec.num_outputs = 2;
  check_sound(spec, ops, r, 6, log_prob ? 1 : 0);
}
INTERVAL_PROPERTY(NegativeLogLikelihoodLoss) { loss_property("NegativeLogLikelihoodLoss"); }
// The same with log-softmax inside, and its optional log_prob output.
INTERVAL_PROPERTY(SoftmaxCrossEntropyLoss) { loss_property("SoftmaxCrossEntropyLoss"); }

// BatchNormalization in inference (running statistics as inputs, some variances reaching ≤ 0) and in
// training (batch statistics), x with blocks per channel among the others.
INTERVAL_PROPERTY(BatchNormalization) {
  Random r(seed());
  const int64_t channels = 1 + r.pick(3);
  Shape xs{1 + r.pick(3), channels};
  for (int d = r.pick(3); d > 0; --d) xs.push_back(1 + r.pick(3));
  const bool training = r.coin(0.3);
  static const double eps[] = {1e-5, 1e-3, 0.1};
  NodeSpec spec{"BatchNormalization", {{"epsilon", attr_float(eps[r.pick(3)])}}};
  spec.opset = 15;
  if (training) spec.attributes.push_back({"training_mode", attr_int(1)});
  BoxStyle var_style = random_style(r, false);
  var_style.positive = r.coin(0.8);
  std::vector<Operand> ops{boxed(r, xs, random_style(r)), boxed(r, {channels}, random_style(r, false)),
                           boxed(r, {channels}, random_style(r, false)), boxed(r, {channels}, random_style(r, false)),
                           boxed(r, {channels}, var_style)};
  check_sound(spec, ops, r);
}

// LayerNormalization over X.shape[axis:], Scale and B of that shape or broadcast to it.
INTERVAL_PROPERTY(LayerNormalization) {
  Random r(seed());
  const Shape xs = random_shape(r, 1, 3, 5);
  const int axis = r.pick(xs.rank());
  Shape normalized;
  for (int d = axis; d < xs.rank(); ++d) normalized.push_back(xs[d]);
  Shape param = normalized;
  if (r.coin(0.3)) param = Shape{normalized.back()};
  static const double eps[] = {1e-5, 1e-3, 0.1};
  NodeSpec spec{"LayerNormalization",
                {{"axis", attr_int(r.coin() ? axis : axis - xs.rank())}, {"epsilon", attr_float(eps[r.pick(3)])}}};
  std::vector<Operand> ops{boxed(r, xs, random_style(r)), boxed(r, param, random_style(r, false))};
  if (r.coin()) ops.push_back(boxed(r, param, random_style(r, false)));
  check_sound(spec, ops, r);
}

// Sum and Mean fold one to three broadcast operands.
void variadic_property(const char* op) {
  Random r(seed());
  const Shape out = random_shape(r, 0, 3);
  std::vector<Operand> ops;
  for (int i = 1 + r.pick(3); i > 0; --i) ops.push_back(boxed(r, broadcast_operand(r, out), random_style(r)));
  check_sound({op}, ops, r);
}
INTERVAL_PROPERTY(Sum) { variadic_property("Sum"); }
INTERVAL_PROPERTY(Mean) { variadic_property("Mean"); }

// Split into equal parts or by exact sizes; one of the outputs checked.
INTERVAL_PROPERTY(Split) {
  Random r(seed());
  const Shape shape = random_shape(r, 1, 3, 6);
  const int axis = r.pick(shape.rank());
  const int64_t dim = shape[axis];
  std::vector<int64_t> sizes;
  for (int64_t left = dim; left > 0;) {
    const int64_t s = 1 + r.pick(static_cast<int>(left));
    sizes.push_back(s);
    left -= s;
  }
  NodeSpec spec{"Split", {{"axis", attr_int(axis)}}, static_cast<int>(sizes.size())};
  std::vector<Operand> ops{boxed(r, shape, random_style(r))};
  ops.push_back(exact_i64(sizes));
  check_sound(spec, ops, r, 6, static_cast<size_t>(r.pick(static_cast<int>(sizes.size()))));
}

INTERVAL_PROPERTY(Size) {
  Random r(seed());
  check_sound({"Size"}, {boxed(r, random_shape(r, 0, 3), random_style(r))}, r);
}

// CastLike to float64, int64 or bool (x ≠ 0), the target's values irrelevant.
INTERVAL_PROPERTY(CastLike) {
  Random r(seed());
  const Shape shape = random_shape(r, 0, 3);
  BoxStyle s = random_style(r, false);
  s.scale = std::min(s.scale, 1e9);  // within int64
  Operand like = exact_i64({0});
  const int kind = r.pick(4);
  if (kind == 3) {  // int64 beyond float32's 24 bits, cast to float32: rounded
    Operand x;
    x.shape = shape;
    x.dtype = DType::Int64;
    const double a = r.uniform(0, 1e8);
    x.boxes = {{std::floor(a), std::floor(a + r.uniform(0, 50))}};
    x.smashed = shape.numel() > 1;
    if (!x.smashed) x.boxes.resize(1);
    like.value = Tensor(DType::Float32, {1});
    like.value.data<float>()[0] = 0;
    like.dtype = DType::Float32;
    check_sound({"CastLike"}, {x, like}, r);
    return;
  }
  if (kind == 1) {
    like.value = Tensor(DType::Bool, {1});
    like.value.data<bool>()[0] = false;
    like.dtype = DType::Bool;
  } else if (kind == 2) {
    like.value = Tensor(DType::Float64, {1});
    like.value.data<double>()[0] = 0;
    like.dtype = DType::Float64;
  }
  check_sound({"CastLike"}, {boxed(r, shape, s), like}, r);
}

INTERVAL_PROPERTY(RandomUniform) {
  Random r(seed());
  const double a = r.uniform(-10, 10), b = a + r.uniform(0, 10);
  NodeSpec spec{"RandomUniform",
                {{"shape", attr_ints({1 + r.pick(4), 1 + r.pick(4)})}, {"low", attr_float(a)}, {"high", attr_float(b)}}};
  check_sound(spec, {}, r);
}

// RandomUniformLike: the draws lie in [low, high] whatever the template's values.
INTERVAL_PROPERTY(RandomUniformLike) {
  Random r(seed());
  const double a = r.uniform(-10, 10), b = a + r.uniform(0, 10);
  NodeSpec spec{"RandomUniformLike", {{"low", attr_float(a)}, {"high", attr_float(b)}}};
  const Shape shape{1 + r.pick(4), 1 + r.pick(4)};
  check_sound(spec, {boxed(r, shape, random_style(r))}, r);
}

INTERVAL_PROPERTY(GatherND) {
  Random r(seed());
  const Shape data = random_shape(r, 1, 3);
  const int k = 1 + r.pick(data.rank());
  int64_t smallest = data[0];
  for (int d = 0; d < k; ++d) smallest = std::min(smallest, data[d]);
  check_sound({"GatherND"}, {boxed(r, data, random_style(r)), index_operand(r, {1 + r.pick(3), k}, smallest)}, r);
}

// ScatterElements (with duplicates: one of the updates wins) and ScatterND, without a reduction or with
// max/min.
INTERVAL_PROPERTY(ScatterElements) {
  Random r(seed());
  const Shape data = random_shape(r, 1, 3);
  const int axis = r.pick(data.rank());
  Shape upd;
  for (int d = 0; d < data.rank(); ++d) upd.push_back(d == axis ? 1 + r.pick(3) : 1 + r.pick(static_cast<int>(data[d])));
  static const char* reductions[] = {"none", "max", "min"};
  NodeSpec spec{"ScatterElements", {{"axis", attr_int(axis)}, {"reduction", attr_string(reductions[r.pick(3)])}}};
  spec.opset = 18;
  check_sound(spec, {boxed(r, data, random_style(r)), index_operand(r, upd, data[axis]), boxed(r, upd, random_style(r))},
              r);
}

INTERVAL_PROPERTY(ScatterND) {
  Random r(seed());
  const Shape data = random_shape(r, 1, 3);
  // One index into the first dimension, updating a whole slice.
  Shape upd{1};
  for (int d = 1; d < data.rank(); ++d) upd.push_back(data[d]);
  check_sound({"ScatterND"},
              {boxed(r, data, random_style(r)), index_operand(r, {1, 1}, data[0]), boxed(r, upd, random_style(r))}, r);
}

INTERVAL_PROPERTY(OneHot) {
  Random r(seed());
  const int64_t depth = 1 + r.pick(4);
  Operand depth_op = exact_i64({depth});
  depth_op.shape = Shape{};
  depth_op.value = Tensor::scalar<int64_t>(depth);
  check_sound({"OneHot"}, {index_operand(r, random_shape(r, 1, 2), depth), depth_op, boxed(r, {2}, random_style(r))},
              r);
}

// Shape: exact whatever the values, with start/end (opset 15) picking a range of dimensions.
INTERVAL_PROPERTY(Shape) {
  Random r(seed());
  const Shape shape = random_shape(r, 0, 4);
  NodeSpec spec{"Shape"};
  spec.opset = 15;
  if (r.coin()) spec.attributes.push_back({"start", attr_int(r.pick(2 * shape.rank() + 1) - shape.rank())});
  if (r.coin()) spec.attributes.push_back({"end", attr_int(r.pick(2 * shape.rank() + 1) - shape.rank())});
  check_sound(spec, {boxed(r, shape, random_style(r))}, r);
}

// ---- precision where the exact range is known: monotone element-wise ops on any box ---------------

// The interval of op(boxes) for one-element operands, through analyze_intervals.
Interval transfer_of(const std::string& op, const std::vector<Interval>& boxes) {
  std::vector<Tensor> probe;
  IntervalOptions opts;
  for (size_t i = 0; i < boxes.size(); ++i) {
    probe.push_back(Tensor::from<float>(Shape{1}, {static_cast<float>(boxes[i].lo)}));
    opts.given[fmt::format("in{}", i)] = IntervalTensor::filled(DType::Float32, {1}, boxes[i]);
  }
  Graph g = make_single_node_graph({op}, probe);
  auto a = analyze_intervals(g, opts);
  EXPECT_TRUE(a.is_ok()) << a.message();
  if (!a) return {};
  const IntervalTensor& y = a->values[static_cast<size_t>(g.nodes[0].outputs[0])];
  return y.hull();
}

double kernel_at(const std::string& op, const std::vector<double>& x) {
  std::vector<Tensor> in;
  for (double v : x) in.push_back(Tensor::from<float>(Shape{1}, {static_cast<float>(v)}));
  return run_node({op}, in)[0].get_as_double(0);
}

struct RangeCase {
  const char* op;
  int operands;
  bool positive;          // boxes in (0, scale]: Log, Sqrt
  bool nonzero_last;      // the last operand's box keeps its sign: a divisor, Reciprocal's input
};

// A random box of float32 bounds at scale 10^k, k in [−3, 3], as the exact range test draws them.
Interval range_box(Random& r, bool positive, bool nonzero) {
  const double scale = std::pow(10.0, r.pick(7) - 3);
  double a = positive ? r.uniform(1e-3, 1) * scale : r.uniform(-scale, scale);
  double b = positive ? r.uniform(1e-3, 1) * scale : r.uniform(-scale, scale);
  if (nonzero && a * b <= 0) b = -b == 0 ? a : (a > 0 ? std::fabs(b) + 1e-3 : -std::fabs(b) - 1e-3);
  if (nonzero && a == 0) a = b;
  Interval box{std::min<double>(to_f(a), to_f(b)), std::max<double>(to_f(a), to_f(b))};
  if (nonzero && box.lo <= 0 && box.hi >= 0) box = {1, 2};
  return box;
}

// For an op monotone in each operand on boxes of fixed sign (the ones below), the exact range of its float32
// kernel over a box is the hull of the kernel at the box's corners (Abs adds 0 where the box holds it). The
// interval must contain that range and exceed it by no more than a few roundings: relative 1e-4 of the
// range's magnitude, plus 1e-30. A transfer returning [−inf, inf], or the hull of some wider box, fails.
TEST(IntervalPrecision, MonotoneOpsStayWithinRoundingOfTheExactRangeOfAnyBox) {
  const RangeCase cases[] = {
      {"Neg", 1, false, false},      {"Abs", 1, false, false},     {"Exp", 1, false, false},
      {"Log", 1, true, false},       {"Sqrt", 1, true, false},     {"Sigmoid", 1, false, false},
      {"Tanh", 1, false, false},     {"Relu", 1, false, false},    {"Erf", 1, false, false},
      {"Softplus", 1, false, false}, {"Softsign", 1, false, false}, {"LeakyRelu", 1, false, false},
      {"Ceil", 1, false, false},     {"Floor", 1, false, false},   {"Round", 1, false, false},
      {"Sign", 1, false, false},     {"Identity", 1, false, false}, {"Reciprocal", 1, false, true},
      {"Add", 2, false, false},      {"Sub", 2, false, false},     {"Mul", 2, false, false},
      {"Div", 2, false, true},       {"Max", 2, false, false},     {"Min", 2, false, false},
  };
  constexpr int kBoxes = 200;
  const uint64_t seed = property_seed();
  Random r(seed);
  int checked = 0;
  for (const RangeCase& c : cases) {
    for (int k = 0; k < kBoxes; ++k) {
      std::vector<Interval> boxes;
      for (int i = 0; i < c.operands; ++i)
        boxes.push_back(range_box(r, c.positive, c.nonzero_last && i + 1 == c.operands));
      // The exact range: the kernel at every corner of the box.
      Interval exact{kInf, -kInf};
      for (int corner = 0; corner < (1 << c.operands); ++corner) {
        std::vector<double> x;
        for (int i = 0; i < c.operands; ++i) x.push_back(corner >> i & 1 ? boxes[i].hi : boxes[i].lo);
        const double v = kernel_at(c.op, x);
        exact = {std::min(exact.lo, v), std::max(exact.hi, v)};
      }
      if (std::string(c.op) == "Abs" && boxes[0].contains(0)) exact.lo = 0;
      // A bound beyond the float32 range stands for ±inf, and so does one within a few ulps of FLT_MAX: an
      // overflowing Exp's exact range is [inf, inf], which outward rounding (libm's ulps) makes [FLT_MAX⁻⁻, inf].
      const double below_max = FLT_MAX * (1 - 0x1p-20);
      auto as_f32 = [](double v) { return v > FLT_MAX ? kInf : v < -FLT_MAX ? -kInf : v; };
      const Interval t = transfer_of(c.op, boxes);
      const Interval bound{t.lo >= below_max ? kInf : as_f32(t.lo), t.hi <= -below_max ? -kInf : as_f32(t.hi)};
      auto finite_abs = [](double v) { return std::isfinite(v) ? std::fabs(v) : 0.0; };
      const double slack = 1e-4 * std::max(finite_abs(exact.lo), finite_abs(exact.hi)) + 1e-30;
      std::string box_text;
      for (const Interval& b : boxes) box_text += fmt::format(" [{:g}, {:g}]", b.lo, b.hi);
      EXPECT_TRUE(bound.lo <= exact.lo && exact.hi <= bound.hi)
          << c.op << box_text << ": the exact range [" << exact.lo << ", " << exact.hi << "] leaves [" << bound.lo
          << ", " << bound.hi << "] (seed " << seed << ")";
      EXPECT_TRUE(bound.lo >= exact.lo - slack && bound.hi <= exact.hi + slack)
          << c.op << box_text << ": [" << bound.lo << ", " << bound.hi << "] is wider than the exact range ["
          << exact.lo << ", " << exact.hi << "] by more than " << slack << " (seed " << seed << ")";
      ++checked;
    }
  }
  std::printf("exact ranges: seed %llu, %d boxes of %zu monotone ops held within rounding of their exact range\n",
              static_cast<unsigned long long>(seed), checked, std::size(cases));
  EXPECT_EQ(checked, kBoxes * static_cast<int>(std::size(cases)));
}

// ---- whole graphs through `grist scan` ------------------------------------------------------------

const HazardVerdict& verdict_of(const ScanReport& rep, const std::string& op) {
  for (const HazardVerdict& v : rep.verdicts)
    if (v.site.op_type == op) {
      return v;
    }
  ADD_FAILURE() << "no hazard site on " << op;
  static HazardVerdict none;
  return none;
}

ScanReport scan_with(Graph g, Interval x_range, Shape shape = {4}) {
  ScanOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, shape, x_range);
  auto rep = scan(g, o);
  EXPECT_TRUE(rep.is_ok()) << (rep ? std::string() : rep.error().message);
  return rep ? *rep : ScanReport{};
}

TEST(ScanGuards, LogOfXPlusOneIsSafeForNonNegativeX) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {4})
                .constant("one", Tensor::scalar<float>(1))
                .node("Add", {"x", "one"}, {"s"})
                .node("Log", {"s"}, {"y"})
                .output("y")
                .build();
  EXPECT_EQ(verdict_of(scan_with(g, {0, 10}), "Log").verdict, Verdict::ProvedSafe);
  EXPECT_EQ(verdict_of(scan_with(g, {-10, 10}), "Log").verdict, Verdict::MayFail);
}

// x² overflows for |x| > 1.8e19: a Pow hazard site when the exponent may exceed 1, may-fail only when the
// base's range reaches that far.
TEST(ScanGuards, PowOverflowsOnlyWhereTheBaseReachesFar) {
  auto square = [](float exponent) {
    return GraphBuilder()
        .input("x", DType::Float32, {4})
        .constant("e", Tensor::scalar<float>(exponent))
        .node("Pow", {"x", "e"}, {"y"})
        .output("y")
        .build();
  };
  Graph g = square(2);
  auto overflow = [](const ScanReport& rep) -> const HazardVerdict* {
    for (const HazardVerdict& v : rep.verdicts)
      if (v.site.failure == Failure::PowOverflow) return &v;
    return nullptr;
  };
  const ScanReport narrow = scan_with(g, {-10, 10}), wide = scan_with(g, {-1e20, 1e20});
  ASSERT_NE(overflow(narrow), nullptr);
  EXPECT_EQ(overflow(narrow)->verdict, Verdict::ProvedSafe);
  ASSERT_NE(overflow(wide), nullptr);
  EXPECT_EQ(overflow(wide)->verdict, Verdict::MayFail);
  Graph root = square(0.5f);
  EXPECT_EQ(overflow(scan_with(root, {0, 1e30})), nullptr);  // an exponent ≤ 1 cannot overflow
}

TEST(ScanGuards, LogSoftmaxIsSafeWhereLogOfSoftmaxIsNot) {
  Graph fused = GraphBuilder()
                    .input("x", DType::Float32, {2, 10})
                    .node("LogSoftmax", {"x"}, {"y"}, {{"axis", attr_int(1)}})
                    .output("y")
                    .build();
  for (const HazardVerdict& v : scan_with(fused, {-50, 50}, {2, 10}).verdicts)
    EXPECT_EQ(v.verdict, Verdict::ProvedSafe) << v.site.label();
  Graph split = GraphBuilder()
                    .input("x", DType::Float32, {2, 10})
                    .node("Softmax", {"x"}, {"p"}, {{"axis", attr_int(1)}})
                    .node("Log", {"p"}, {"y"})
                    .output("y")
                    .build();
  EXPECT_EQ(verdict_of(scan_with(split, {-50, 50}, {2, 10}), "Log").verdict, Verdict::MayFail);
}

// sqrt(relu(x)) is finite, but its derivative at 0 is not (0.5/sqrt(0) · relu′ = ∞ · 0 = NaN in training):
// flagged, as DEBAR and RANUM flag a Sqrt input ≤ 1e-37. A guard above that zone makes it safe.
TEST(ScanGuards, SqrtOfReluIsFlaggedForItsDerivativeAndSafeWithAGuard) {
  Graph bare = GraphBuilder()
                   .input("x", DType::Float32, {4})
                   .node("Relu", {"x"}, {"r"})
                   .node("Sqrt", {"r"}, {"y"})
                   .output("y")
                   .build();
  EXPECT_EQ(verdict_of(scan_with(bare, {-50, 50}), "Sqrt").verdict, Verdict::MayFail);
  Graph guarded = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .constant("eps", Tensor::scalar<float>(1e-6f))
                      .node("Relu", {"x"}, {"r"})
                      .node("Add", {"r", "eps"}, {"s"})
                      .node("Sqrt", {"s"}, {"y"})
                      .output("y")
                      .build();
  EXPECT_EQ(verdict_of(scan_with(guarded, {-50, 50}), "Sqrt").verdict, Verdict::ProvedSafe);
}

TEST(ScanGuards, ReciprocalOfExpPlusOneIsSafe) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {4})
                .constant("one", Tensor::scalar<float>(1))
                .node("Exp", {"x"}, {"e"})
                .node("Add", {"e", "one"}, {"d"})
                .node("Div", {"one", "d"}, {"y"})
                .output("y")
                .build();
  EXPECT_EQ(verdict_of(scan_with(g, {-50, 50}), "Div").verdict, Verdict::ProvedSafe);
}

TEST(ScanGuards, LogOfSigmoidFailsOnlyWhenSigmoidCanUnderflow) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {4})
                .node("Sigmoid", {"x"}, {"s"})
                .node("Log", {"s"}, {"y"})
                .output("y")
                .build();
  EXPECT_EQ(verdict_of(scan_with(g, {-100, 100}), "Log").verdict, Verdict::MayFail);
  EXPECT_EQ(verdict_of(scan_with(g, {-10, 10}), "Log").verdict, Verdict::ProvedSafe);
}

// Large tensors hold one interval: the same verdicts, and the fast path keeps shapes right.
// Training can carry weights far beyond RANUM's default (their initial span widened by 100 %); a manifest
// says how far with [scan] trained_weights, and the scan names that assumption.
// Outward rounding stops at a function's range and at 0: 1 − sigmoid(x) is never negative, so its square
// root is never NaN (its derivative at 0 still makes it a may-fail site).
TEST(ScanGuards, OneMinusSigmoidIsNeverNegative) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {4})
                .constant("one", Tensor::scalar<float>(1))
                .node("Sigmoid", {"x"}, {"s"})
                .node("Sub", {"one", "s"}, {"d"})
                .node("Sqrt", {"d"}, {"y"})
                .output("y")
                .build();
  IntervalOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {4}, {-50, 50});
  auto a = analyze_intervals(g, o);
  ASSERT_TRUE(a.is_ok()) << a.message();
  EXPECT_EQ(a->values[static_cast<size_t>(g.find_value("s"))].hull().hi, 1.0);
  EXPECT_EQ(a->values[static_cast<size_t>(g.find_value("d"))].hull().lo, 0.0);
  EXPECT_FALSE(a->values[static_cast<size_t>(g.find_value("y"))].may_be_nan);
}

TEST(ScanRanges, TrainedWeightsAreUnboundedUnlessTheUserStatesARange) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .constant("w", Tensor::from<float>({2}, {0.01f, -0.01f}))
                .node("Mul", {"x", "w"}, {"y"})
                .node("Exp", {"y"}, {"z"})
                .output("z")
                .build();
  Manifest m;
  m.train.enabled = true;
  m.train.all_params = true;
  ScanOptions o;
  o.manifest = &m;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {2}, {0, 100});
  auto trained = scan(g, o);
  ASSERT_TRUE(trained.is_ok()) << trained.message();
  EXPECT_EQ(verdict_of(*trained, "Exp").verdict, Verdict::MayFail);  // training may carry w anywhere
  EXPECT_FALSE(verdict_of(*trained, "Exp").fails_initially);       // at w = ±0.01, y ≤ 1
  m.scan_trained_weights = std::pair{-0.03, 0.03};
  auto narrow = scan(g, o);
  ASSERT_TRUE(narrow.is_ok()) << narrow.message();
  EXPECT_EQ(verdict_of(*narrow, "Exp").verdict, Verdict::ProvedSafe);  // y ≤ 3
  EXPECT_EQ(verdict_of(*narrow, "Exp").scope, Scope::StatedWeights);
  m.scan_trained_weights = std::pair{-1.0, 1.0};
  auto wide = scan(g, o);
  ASSERT_TRUE(wide.is_ok()) << wide.message();
  EXPECT_EQ(verdict_of(*wide, "Exp").verdict, Verdict::MayFail);  // y up to 100
  bool named = false;
  for (const auto& a : wide->assumptions)
    named |= a.name == "w" && a.reason == "your statement: manifest [scan] trained_weights";
  EXPECT_TRUE(named);
}

TEST(ScanGuards, LargeTensorsKeepVerdictsAndShapes) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 3, 64, 64})
                .node("Relu", {"x"}, {"r"})
                .node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}})
                .node("ReduceMean", {"p"}, {"m"}, {{"axes", attr_ints({2, 3})}, {"keepdims", attr_int(0)}})
                .constant("one", Tensor::scalar<float>(1))
                .node("Add", {"m", "one"}, {"s"})
                .node("Sqrt", {"s"}, {"y"})
                .output("y")
                .build();
  ScanOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {1, 3, 64, 64}, {-50, 50});
  auto a = analyze_intervals(g, {nullptr, 0, o.given, {}});
  ASSERT_TRUE(a.is_ok());
  const IntervalTensor& p = a->values[static_cast<size_t>(g.find_value("p"))];
  EXPECT_EQ(p.shape.str(), Shape({1, 3, 32, 32}).str());
  const IntervalTensor& m = a->values[static_cast<size_t>(g.find_value("m"))];
  EXPECT_EQ(m.shape.str(), Shape({1, 3}).str());
  EXPECT_GE(m.lo_at(0), 0.0);
  EXPECT_LE(m.hi_at(0), 51.0);
  EXPECT_EQ(verdict_of(scan_with(g, {-50, 50}, {1, 3, 64, 64}), "Sqrt").verdict, Verdict::ProvedSafe);
}

// Blocks along dimensions: a 1×1 convolution whose first output channel is x0 + x1 + 1 ≥ 1 and whose second
// is x0 − x1. One interval for the whole 8×2×40×40 output would be [−1, 3] and flag the Log of the first
// channel; one per channel proves it safe and still flags the Log of the second.
TEST(ScanBlocks, PerChannelBoundsProveALogOfAPositiveChannelSafe) {
  Tensor w(DType::Float32, {2, 2, 1, 1});
  const float wv[] = {1, 1, 1, -1};
  std::copy(std::begin(wv), std::end(wv), w.data<float>());
  Tensor b(DType::Float32, {2});
  b.data<float>()[0] = 1;
  b.data<float>()[1] = 0;
  auto ints = [](std::vector<int64_t> v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  const Shape shape{8, 2, 40, 40};
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {8, 2, 40, 40})
                .constant("w", w)
                .constant("b", b)
                .constant("starts0", ints({0}))
                .constant("starts1", ints({1}))
                .constant("ends0", ints({1}))
                .constant("ends1", ints({2}))
                .constant("axes", ints({1}))
                .node("Conv", {"x", "w", "b"}, {"y"}, {{"kernel_shape", attr_ints({1, 1})}})
                .node("Relu", {"y"}, {"r"})
                .node("Slice", {"y", "starts0", "ends0", "axes"}, {"first"})
                .node("Slice", {"r", "starts1", "ends1", "axes"}, {"second"})
                .node("Log", {"first"}, {"log_first"})
                .node("Sqrt", {"second"}, {"sqrt_second"})
                .node("MaxPool", {"y"}, {"pooled"}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}})
                .node("Flatten", {"pooled"}, {"flat"})
                .output("log_first")
                .output("sqrt_second")
                .output("flat")
                .build();
  ScanOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, shape, {0, 1});
  o.given["w"] = IntervalTensor::of_exact(w);  // weights that do not train
  o.given["b"] = IntervalTensor::of_exact(b);
  auto a = analyze_intervals(g, {nullptr, 0, o.given, {}});
  ASSERT_TRUE(a.is_ok()) << a.message();
  const IntervalTensor& y = a->values[static_cast<size_t>(g.find_value("y"))];
  EXPECT_EQ(y.blocks.str(), Shape({1, 2, 1, 1}).str());
  EXPECT_GE(y.lo_at(0), 0.999);                   // channel 0: x0 + x1 + 1
  EXPECT_LE(y.lo_at(40 * 40), -0.999);            // channel 1: x0 − x1
  EXPECT_EQ(a->values[static_cast<size_t>(g.find_value("r"))].blocks.str(), y.blocks.str());  // Relu keeps them
  // Pooling keeps them; flattening gives every row the same 2·20·20 intervals.
  EXPECT_EQ(a->values[static_cast<size_t>(g.find_value("pooled"))].blocks.str(), y.blocks.str());
  const IntervalTensor& flat = a->values[static_cast<size_t>(g.find_value("flat"))];
  EXPECT_EQ(flat.blocks.str(), Shape({1, 800}).str());
  EXPECT_GE(flat.lo_at(800 * 7 + 399), 0.999);
  EXPECT_LE(flat.lo_at(800 * 7 + 400), -0.999);
  auto rep = scan(g, o);
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  EXPECT_EQ(verdict_of(*rep, "Log").verdict, Verdict::ProvedSafe);
  EXPECT_EQ(verdict_of(*rep, "Sqrt").verdict, Verdict::MayFail);  // relu(x0 − x1) reaches 0
}

// BatchNormalization with running statistics bounds each channel: (x − 0.5)/0.5·scale + B for x ∈ [0, 1]
// gives [−1, 1] and [8, 12]; the Log of the second channel is proved safe, of the first it may fail.
TEST(ScanBlocks, BatchNormalizationBoundsEachChannel) {
  auto per_channel = [](float a, float b) {
    Tensor t(DType::Float32, {2});
    t.data<float>()[0] = a;
    t.data<float>()[1] = b;
    return t;
  };
  auto ints = [](std::vector<int64_t> v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {64, 2, 8, 8})
                .constant("scale", per_channel(1, 2))
                .constant("bias", per_channel(0, 10))
                .constant("mean", per_channel(0.5f, 0.5f))
                .constant("var", per_channel(0.25f, 0.25f))
                .constant("starts", ints({1}))
                .constant("ends", ints({2}))
                .constant("axes", ints({1}))
                .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"})
                .node("Slice", {"y", "starts", "ends", "axes"}, {"second"})
                .node("Log", {"second"}, {"log_second"})
                .node("Exp", {"y"}, {"e"})
                .output("log_second")
                .output("e")
                .build();
  ScanOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {64, 2, 8, 8}, {0, 1});
  for (const char* name : {"scale", "bias", "mean", "var"})
    o.given[name] = IntervalTensor::of_exact(*g.value(g.find_value(name)).initial);
  auto a = analyze_intervals(g, {nullptr, 0, o.given, {}});
  ASSERT_TRUE(a.is_ok()) << a.message();
  const IntervalTensor& y = a->values[static_cast<size_t>(g.find_value("y"))];
  EXPECT_EQ(y.blocks.str(), Shape({1, 2, 1, 1}).str());
  EXPECT_NEAR(y.lo_at(0), -1, 1e-4);
  EXPECT_NEAR(y.hi_at(0), 1, 1e-4);
  EXPECT_NEAR(y.lo_at(64), 8, 1e-4);
  EXPECT_NEAR(y.hi_at(64), 12, 1e-4);
  auto rep = scan(g, o);
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  EXPECT_EQ(verdict_of(*rep, "Log").verdict, Verdict::ProvedSafe);
  EXPECT_EQ(verdict_of(*rep, "Exp").verdict, Verdict::ProvedSafe);
}

// Rows of a batch share their bounds; the product keeps one interval per column.
TEST(ScanBlocks, MatMulOfSharedRowsKeepsColumns) {
  Tensor w(DType::Float32, {2, 2});
  const float wv[] = {1, -1, 1, 1};  // column 0: x0 + x1, column 1: x1 − x0
  std::copy(std::begin(wv), std::end(wv), w.data<float>());
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {5000, 2})
                .constant("w", w)
                .node("MatMul", {"x", "w"}, {"y"})
                .output("y")
                .build();
  IntervalOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {5000, 2}, {0, 1});
  o.given["w"] = IntervalTensor::of_exact(w);
  auto a = analyze_intervals(g, o);
  ASSERT_TRUE(a.is_ok()) << a.message();
  const IntervalTensor& y = a->values[static_cast<size_t>(g.find_value("y"))];
  EXPECT_EQ(y.blocks.str(), Shape({1, 2}).str());
  EXPECT_NEAR(y.lo_at(2 * 4999), 0, 1e-6);
  EXPECT_NEAR(y.hi_at(2 * 4999), 2, 1e-6);
  EXPECT_NEAR(y.lo_at(2 * 4999 + 1), -1, 1e-6);
}

// A weight that does not train is exact: a large one (5,000 elements) stores only its hull, [−1, 0.001]
// here, but transfers read its elements. y = x·W with x ∈ [0, 1] and W = 0.001 except one −1 outside
// column 0: column 0 stays in [0, 0.1], so log(y + 1) there is proved safe.
TEST(ScanBlocks, LargeExactWeightsAreReadElementByElement) {
  Tensor w(DType::Float32, {100, 50});
  std::fill_n(w.data<float>(), w.numel(), 0.001f);
  w.data<float>()[1] = -1;  // row 0, column 1
  auto ints = [](std::vector<int64_t> v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2, 100})
                .constant("w", w)
                .constant("one", Tensor::scalar<float>(1))
                .constant("starts", ints({0}))
                .constant("ends", ints({1}))
                .constant("axes", ints({1}))
                .node("MatMul", {"x", "w"}, {"y"})
                .node("Slice", {"y", "starts", "ends", "axes"}, {"first"})
                .node("Add", {"first", "one"}, {"s"})
                .node("Log", {"s"}, {"l"})
                .output("l")
                .build();
  ScanOptions o;
  o.given["x"] = IntervalTensor::filled(DType::Float32, {2, 100}, {0, 1});
  o.given["w"] = IntervalTensor::of_exact(w);
  EXPECT_EQ(o.given["w"].lo.size(), 1u);  // stored as its hull
  auto rep = scan(g, o);
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  EXPECT_EQ(verdict_of(*rep, "Log").verdict, Verdict::ProvedSafe);
}

// A large element-wise result keeps the dimensions its bounds vary along: Concat of a ≥ 1 half and a
// free half along the columns of a 100×64 batch becomes blocks [1, 64], not one interval.
TEST(ScanBlocks, LargeResultsArePartitionedAlongTheDimensionsTheyVaryAlong) {
  IntervalTensor t = IntervalTensor::filled(DType::Float32, {100, 64}, {});
  t.lo.assign(6400, 0);
  t.hi.assign(6400, 0);
  for (int64_t i = 0; i < 6400; ++i) {
    const bool first_half = i % 64 < 32;
    t.lo[static_cast<size_t>(i)] = first_half ? 1 : -5;
    t.hi[static_cast<size_t>(i)] = first_half ? 2 : 5;
  }
  t.partition_if_large();
  EXPECT_EQ(t.blocks.str(), Shape({1, 64}).str());
  EXPECT_EQ(t.lo.size(), 64u);
  EXPECT_EQ(t.lo_at(64 * 50 + 3), 1);
  EXPECT_EQ(t.hi_at(64 * 50 + 40), 5);
  IntervalTensor flat = t.without_blocks();
  EXPECT_EQ(flat.lo.size(), 6400u);
  EXPECT_EQ(flat.lo_at(64 * 99 + 63), -5);
}

// The sign-split product is exact when one factor of each term keeps its sign: a ∈ [1, 3], b ∈ [−1, 2]
// gives [−3, 6]; midpoint-radius alone gives [−4, 6].
TEST(ScanPrecision, SignSplitProductIsExactWhenAFactorKeepsItsSign) {
  Graph g = GraphBuilder()
                .input("a", DType::Float32, {1, 1})
                .input("b", DType::Float32, {1, 1})
                .node("MatMul", {"a", "b"}, {"y"})
                .output("y")
                .build();
  IntervalOptions o;
  o.given["a"] = IntervalTensor::filled(DType::Float32, {1, 1}, {1, 3});
  o.given["b"] = IntervalTensor::filled(DType::Float32, {1, 1}, {-1, 2});
  auto a = analyze_intervals(g, o);
  ASSERT_TRUE(a.is_ok()) << a.message();
  const IntervalTensor& y = a->values[static_cast<size_t>(g.find_value("y"))];
  EXPECT_NEAR(y.lo_at(0), -3, 1e-5);
  EXPECT_NEAR(y.hi_at(0), 6, 1e-5);
}

}  // namespace
}  // namespace grist::testing
