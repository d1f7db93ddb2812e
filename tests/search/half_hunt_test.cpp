// Hazards in half precision (issue 16): models whose float32 run is finite and whose float16 run is not — a
// norm's sum of squares past 65504, a hand-written softmax's exp past ln 65504 ≈ 11.09, an attention score
// product, a variance flushed to 0 under a sqrt. `hunt --precision fp16` finds each and names the producer
// (with "finite in float32" where the rounding made the inf); fp32 finds nothing in the same iterations.
#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "analysis/half_hazards.h"
#include "data/dataset.h"
#include "report/run_report.h"
#include "search/hunt.h"
#include "support/half_models.h"

using namespace grist;
using namespace grist::testing::half_models;

namespace {

struct Data {
  double lo, hi;            // drawn from
  double clip_lo, clip_hi;  // searched within
  double change;            // the sign step
};

HuntReport hunt_in(const Graph& g, Precision p, const Data& d, int64_t iterations) {
  HuntOptions o;
  default_inputs(g, o.manifest);
  for (auto& [name, in] : o.manifest.inputs) {
    in.source = InputSource::Uniform;
    in.uniform_lo = d.lo;
    in.uniform_hi = d.hi;
    in.range = ClipRange::Explicit;
    in.lo = d.clip_lo;
    in.hi = d.clip_hi;
  }
  o.manifest.precision = p;
  o.manifest.search.change = d.change;
  o.manifest.search.max_iterations = iterations;
  o.manifest.search.time_limit = 10.0;
  o.manifest.search.seed = 7;
  o.all = true;
  o.batch_size = 1;
  o.use_scan = p == Precision::Fp32;  // as `grist hunt` does
  auto r = hunt(g, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r ? std::move(r).value() : HuntReport{};
}

// The first trigger, printed with what it took (the figures of docs/SCAN.md).
const HazardOutcome* first_trigger(const HuntReport& r) {
  for (const auto& o : r.outcomes)
    if (o.triggered) {
      std::printf("hunting %s: triggered at iteration %lld: %s\n", o.site.label().c_str(),
                  static_cast<long long>(o.iterations), o.event.describe().c_str());
      return &o;
    }
  return nullptr;
}

int triggers(const HuntReport& r) {
  return static_cast<int>(std::count_if(r.outcomes.begin(), r.outcomes.end(), [](auto& o) { return o.triggered; }));
}

bool has_site(const HuntReport& r, Failure f, const std::string& op) {
  return std::any_of(r.hazards.begin(), r.hazards.end(),
                     [&](const HazardSite& s) { return s.failure == f && s.op_type == op; });
}

}  // namespace

TEST(HalfHazards, Fp16AddsOverflowSitesOnResultsAndUnderflowSitesOnDivisors) {
  const Graph g = norm_model();
  const auto fp32 = find_hazards_in(g, Precision::Fp32);
  const auto fp16 = find_hazards_in(g, Precision::Fp16);
  EXPECT_EQ(fp32.size(), find_hazards(g).size());
  ASSERT_GT(fp16.size(), fp32.size());
  for (size_t i = 0; i < fp16.size(); ++i) {
    EXPECT_EQ(fp16[i].id, static_cast<int>(i) + 1);
    if (i > 0) {
      EXPECT_LE(fp16[i - 1].node, fp16[i].node);  // execution order, as the scan walks them
    }
  }
  auto count = [&](Failure f, const std::string& op) {
    return std::count_if(fp16.begin(), fp16.end(),
                         [&](const HazardSite& s) { return s.failure == f && s.op_type == op; });
  };
  EXPECT_EQ(count(Failure::HalfOverflow, "ReduceSumSquare"), 1);
  EXPECT_EQ(count(Failure::HalfUnderflow, "Sqrt"), 1);
  EXPECT_EQ(count(Failure::HalfUnderflow, "Div"), 1);
  EXPECT_EQ(count(Failure::HalfOverflow, "Add"), 0);  // a sum of two in-range values is not on the list
  for (const HazardSite& s : fp16)
    if (s.failure == Failure::HalfOverflow) {
      EXPECT_EQ(s.objective, Objective::NegMaxAbs);
      EXPECT_EQ(g.value(s.objective_value).name, "ss");  // the op's result, not an operand
    }
}

TEST(HalfHazards, AmpCountsOnlyTheOpsAutocastRunsInHalf) {
  const Graph attention = attention_model();
  const auto amp = find_hazards_in(attention, Precision::AmpFp16);
  EXPECT_EQ(std::count_if(amp.begin(), amp.end(), [](auto& s) { return s.failure == Failure::HalfOverflow; }), 1);
  // Autocast keeps Exp and ReduceSum in float32: the hand-written softmax has no half hazard under amp...
  const Graph softmax = softmax_model();
  for (const HazardSite& s : find_hazards_in(softmax, Precision::AmpFp16))
    EXPECT_NE(s.failure, Failure::HalfOverflow) << s.label();
  // ...and under fp16, where every op rounds, the sum's overflow is one, and the Exp keeps one site (not an
  // ExpOverflow and a HalfOverflow, hunted twice) whose label says float16's threshold, not float32's 88.72.
  const auto fp16 = find_hazards_in(softmax, Precision::Fp16);
  EXPECT_EQ(std::count_if(fp16.begin(), fp16.end(), [](auto& s) { return s.failure == Failure::HalfOverflow; }), 1);
  std::vector<const HazardSite*> exp_sites;
  for (const HazardSite& s : fp16)
    if (s.op_type == "Exp") exp_sites.push_back(&s);
  ASSERT_EQ(exp_sites.size(), 1u);
  EXPECT_EQ(exp_sites[0]->failure, Failure::ExpOverflow);
  EXPECT_EQ(exp_sites[0]->label().find("88.72"), std::string::npos) << exp_sites[0]->label();
  EXPECT_NE(exp_sites[0]->label().find("11.09"), std::string::npos) << exp_sites[0]->label();
  // bfloat16 has float32's range: its Exp overflows near 88.72 still, one site too.
  const auto bf16 = find_hazards_in(softmax, Precision::Bf16);
  EXPECT_EQ(std::count_if(bf16.begin(), bf16.end(), [](auto& s) { return s.op_type == "Exp"; }), 1);
  const std::vector<bool> in = values_in_format(attention, Precision::AmpFp16);
  EXPECT_FALSE(in[static_cast<size_t>(attention.find_value("q"))]);
  EXPECT_TRUE(in[static_cast<size_t>(attention.find_value("scores"))]);
  EXPECT_FALSE(in[static_cast<size_t>(attention.find_value("attn"))]);  // Softmax: float32
}

// A model stored in float16 or bfloat16 (a `.half()` export) at the default precision: its values are in
// their stored format, so it has that format's sites and thresholds, not float32's alone.
TEST(HalfHazards, AModelStoredInFloat16HasFloat16sSitesAtFp32) {
  const auto norm = find_hazards_in(stored_in(norm_model(), DType::Float16), Precision::Fp32);
  auto site = [](const std::vector<HazardSite>& sites, Failure f, const std::string& op) -> const HazardSite* {
    for (const HazardSite& s : sites)
      if (s.failure == f && s.op_type == op) return &s;
    return nullptr;
  };
  ASSERT_NE(site(norm, Failure::HalfOverflow, "ReduceSumSquare"), nullptr);
  EXPECT_EQ(site(norm, Failure::HalfOverflow, "ReduceSumSquare")->condition, "ReduceSumSquare result beyond float16's max");
  ASSERT_NE(site(norm, Failure::HalfUnderflow, "Sqrt"), nullptr);
  ASSERT_NE(site(norm, Failure::HalfUnderflow, "Div"), nullptr);
  for (size_t i = 0; i < norm.size(); ++i) EXPECT_EQ(norm[i].id, static_cast<int>(i) + 1);
  const auto softmax = find_hazards_in(stored_in(softmax_model(), DType::Float16), Precision::Fp32);
  const HazardSite* e = site(softmax, Failure::ExpOverflow, "Exp");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->label().find("11.09"), std::string::npos) << e->label();
  EXPECT_EQ(e->label().find("88.72 ("), std::string::npos) << e->label();
  const auto bf16 = find_hazards_in(stored_in(norm_model(), DType::BFloat16), Precision::Fp32);
  ASSERT_NE(site(bf16, Failure::HalfOverflow, "ReduceSumSquare"), nullptr);
  EXPECT_EQ(site(bf16, Failure::HalfOverflow, "ReduceSumSquare")->condition,
            "ReduceSumSquare result beyond bfloat16's max");
}

TEST(HalfHunt, ANormStoredInFloat16OverflowsAtFp32AndTheHuntNamesTheSumOfSquares) {
  const Graph g = stored_in(norm_model(), DType::Float16);
  const HuntReport r = hunt_in(g, Precision::Fp32, Data{50, 60, -100, 100, 1.0}, 100);
  ASSERT_TRUE(has_site(r, Failure::HalfOverflow, "ReduceSumSquare"));
  const HazardOutcome* hit = first_trigger(r);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->event.op_type, "ReduceSumSquare") << hit->event.describe();
  EXPECT_EQ(hit->site.failure, Failure::HalfOverflow) << hit->site.label();
  EXPECT_LE(hit->iterations, 100);
}

TEST(HalfHunt, ANormsSumOfSquaresOverflowsFloat16AndTheScanNamesItFiniteInFloat32) {
  const Graph g = norm_model();
  const Data d{50, 60, -100, 100, 1.0};
  const HuntReport fp16 = hunt_in(g, Precision::Fp16, d, 100);
  ASSERT_TRUE(has_site(fp16, Failure::HalfOverflow, "ReduceSumSquare"));
  const HazardOutcome* hit = first_trigger(fp16);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->event.op_type, "ReduceSumSquare");
  EXPECT_EQ(hit->event.format, DType::Float16);
  EXPECT_TRUE(hit->event.finite_in_float32);
  EXPECT_NE(hit->event.describe().find("finite in float32"), std::string::npos) << hit->event.describe();
  // The JSON of the producer (hunt --json, the witness's "producer") says it too.
  const nlohmann::json j = to_json(hit->event);
  EXPECT_EQ(j.value("format", ""), "float16");
  EXPECT_EQ(j.value("finite_in_float32", false), true);
  EXPECT_EQ(triggers(hunt_in(g, Precision::Fp32, d, 100)), 0);
}

TEST(HalfHunt, AHandWrittenSoftmaxOverflowsPastLn65504InFloat16Only) {
  const Graph g = softmax_model();
  const Data d{6, 8, -15, 15, 0.5};  // exp(8)·8 = 23848 at the start: the search has to climb
  const HuntReport fp16 = hunt_in(g, Precision::Fp16, d, 100);
  const HazardOutcome* hit = first_trigger(fp16);
  ASSERT_NE(hit, nullptr);
  EXPECT_TRUE(hit->event.op_type == "Exp" || hit->event.op_type == "ReduceSum") << hit->event.describe();
  EXPECT_TRUE(hit->event.finite_in_float32) << hit->event.describe();
  EXPECT_EQ(triggers(hunt_in(g, Precision::Fp32, d, 100)), 0);
}

TEST(HalfHunt, AnAttentionScoreProductOverflowsFloat16AndAmpFp16) {
  const Graph g = attention_model();
  const Data d{50, 60, -100, 100, 2.0};
  for (Precision p : {Precision::Fp16, Precision::AmpFp16}) {
    const HuntReport r = hunt_in(g, p, d, 100);
    const HazardOutcome* hit = first_trigger(r);
    ASSERT_NE(hit, nullptr) << precision_name(p);
    EXPECT_EQ(hit->event.op_type, "MatMul") << precision_name(p);
    EXPECT_TRUE(hit->event.finite_in_float32) << precision_name(p);
  }
  EXPECT_EQ(triggers(hunt_in(g, Precision::Fp32, d, 100)), 0);
}

TEST(HalfHunt, AVarianceFlushedToZeroUnderASqrtIsTracedToTheRoundingThatFlushedIt) {
  const Graph g = variance_model();
  const Data d{0, 2e-3, -1e-3, 3e-3, 1e-4};
  const HuntReport fp16 = hunt_in(g, Precision::Fp16, d, 200);
  const HazardOutcome* hit = first_trigger(fp16);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->event.op_type, "Div") << hit->event.describe();
  EXPECT_FALSE(hit->event.finite_in_float32);  // x/0 is inf in float32 too: the zero is what the format made
  EXPECT_EQ(hit->event.zero_input, "sd") << hit->event.describe();
  EXPECT_EQ(hit->event.zero_by_op, "ReduceMean") << hit->event.describe();
  EXPECT_EQ(hit->event.zero_by_value, "var");
  EXPECT_EQ(to_json(hit->event).at("zero_from_rounding").value("op_type", ""), "ReduceMean");
  EXPECT_EQ(triggers(hunt_in(g, Precision::Fp32, d, 200)), 0);
}
