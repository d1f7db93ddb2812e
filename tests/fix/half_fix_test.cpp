// grist fix in half precision (issue 16): issue 16's four models whose float32 run is finite and whose float16
// run is not, each repaired the way frameworks do it (a region kept in float32, the max-subtracted softmax, a
// larger ε), verified in the mode it fails in, and the float32 model left as it was. The keep-in-float32
// exemption itself: the engine and the scan compute a kept node in float32 and the ONNX file carries the list.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/half_hazards.h"
#include "analysis/scan.h"
#include "config/manifest.h"
#include "engine/executor.h"
#include "fix/assumptions.h"
#include "fix/fixer.h"
#include "fix/patterns.h"
#include "fix/rewrite.h"
#include "fix/verify.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "report/fix_report.h"
#include "support/graph_builder.h"
#include "support/half_models.h"

using namespace grist;
using namespace grist::testing::half_models;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(GRIST_SOURCE_DIR) / "tests/models";

struct Loaded {
  Manifest manifest;
  Graph graph;
};

Loaded load(const std::string& name) {
  auto m = read_manifest((kModels / (name + ".toml")).string());
  EXPECT_TRUE(m.is_ok()) << m.message();
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  default_inputs(*g, *m);
  return {std::move(m).value(), std::move(g).value()};
}

// Iteration budgets, not seconds.
FixOptions quick(Manifest m, Precision p) {
  FixOptions o;
  o.manifest = std::move(m);
  o.manifest.precision = p;
  o.has_manifest = true;
  o.batch = 1;
  o.hunt_seconds = 60;  // never reached: the iterations bound the hunt
  o.hunt_iterations = 100;
  o.train_steps = 10;
  o.train_seconds = 60;
  o.data_batches = 4;
  o.preconditions = false;
  return o;
}

FixResult fix(const Loaded& l, Precision p) {
  auto r = fix_model(l.graph, quick(l.manifest, p));
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r ? std::move(r).value() : FixResult{};
}

int fixed_count(const FixResult& r) {
  return static_cast<int>(std::count_if(r.hazards.begin(), r.hazards.end(), [](auto& h) { return h.fixed(); }));
}

const HazardFix* first_repaired(const FixResult& r) {
  for (const auto& h : r.hazards)
    if (h.repaired) return &h;
  return nullptr;
}

// The first non-finite producer of one forward pass of `g` on `inputs` in precision `p`, "" when finite.
std::string forward_in(const Graph& g, Precision p, const std::vector<std::pair<std::string, Tensor>>& inputs,
                       Tensor* out = nullptr) {
  ExecutorOptions eo;
  eo.precision = p;
  auto ex = Executor::create(g, eo);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  for (const auto& [name, t] : inputs) EXPECT_TRUE(ex->set_input(name, t).is_ok());
  EXPECT_TRUE(ex->forward().is_ok());
  if (out) *out = ex->value(g.outputs[0]);
  return ex->forward_event().found ? ex->forward_event().node_name : "";
}

Tensor filled(Shape s, float v) {
  Tensor t(DType::Float32, s);
  for (float& x : t.span<float>()) x = v;
  return t;
}

}  // namespace

TEST(KeepFloat32, AKeptNodeComputesInFloat32UnderFp16AndTheOnnxFileCarriesTheList) {
  // x / sqrt(Σx² + 1e-4) with x = 90: Σx² = 129600 overflows float16, not float32.
  Graph g = norm_model();
  const std::vector<std::pair<std::string, Tensor>> in{{"x", filled(Shape{1, 16}, 90.0f)}};
  EXPECT_EQ(forward_in(g, Precision::Fp16, in), "ReduceSumSquare_0");
  EXPECT_EQ(forward_in(g, Precision::Fp32, in), "");
  for (Node& n : g.nodes)
    if (n.op_type == "ReduceSumSquare" || n.op_type == "Add" || n.op_type == "Sqrt") n.keep_float32 = true;
  Tensor y;
  EXPECT_EQ(forward_in(g, Precision::Fp16, in, &y), "");
  EXPECT_NEAR(y.get_as_double(0), 0.25, 1e-3);  // 90 / 360
  // The scan agrees: no float16 overflow site is left on a node kept in float32.
  // (The Div after them reads their float32 result, rounded to float16 there: that is a site of its own.)
  for (const HazardSite& s : find_hazards_in(g, Precision::Fp16)) {
    if (g.nodes[static_cast<size_t>(s.node)].keep_float32) {
      EXPECT_NE(s.failure, Failure::HalfOverflow) << s.label();
    }
  }
  // Written and read back, the same nodes are kept (metadata_props grist.keep_float32).
  auto bytes = export_onnx_bytes(g);
  ASSERT_TRUE(bytes.is_ok()) << bytes.message();
  EXPECT_NE(bytes->find("grist.keep_float32"), std::string::npos);
  auto back = import_onnx_bytes(*bytes, "kept");
  ASSERT_TRUE(back.is_ok()) << back.message();
  int kept = 0;
  for (const Node& n : back->nodes) kept += n.keep_float32;
  EXPECT_EQ(kept, 3);
  EXPECT_EQ(forward_in(*back, Precision::Fp16, in), "");
}

TEST(KeepFloat32, UnderAmpAKeptMatMulIsNotCastToFloat16) {
  const Graph original = attention_model();
  Graph g = original;
  const std::vector<std::pair<std::string, Tensor>> in{{"q", filled(Shape{1, 4, 8}, 100.0f)},
                                                       {"k", filled(Shape{1, 4, 8}, 100.0f)}};
  EXPECT_EQ(forward_in(g, Precision::AmpFp16, in), "MatMul_1");  // 8·100·100 = 80000
  for (Node& n : g.nodes) n.keep_float32 = n.op_type == "MatMul";
  EXPECT_EQ(forward_in(g, Precision::AmpFp16, in), "");
  EXPECT_FALSE(values_in_format(g, Precision::AmpFp16)[static_cast<size_t>(g.find_value("scores"))]);
  EXPECT_TRUE(values_in_format(original, Precision::AmpFp16)[static_cast<size_t>(original.find_value("scores"))]);
}

TEST(HalfFix, ANormsSumOfSquaresIsKeptInFloat32AndTheFloat32ModelIsUnchanged) {
  const Loaded l = load("fp16_fix_norm");
  // Nothing to repair in float32: the scan proves the norm safe there.
  const FixResult fp32 = fix(l, Precision::Fp32);
  EXPECT_FALSE(fp32.changed);
  const FixResult r = fix(l, Precision::Fp16);
  ASSERT_TRUE(r.changed);
  EXPECT_EQ(r.precision, Precision::Fp16);
  const HazardFix* h = first_repaired(r);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->site.failure, Failure::HalfOverflow);
  EXPECT_EQ(h->match.kind, RepairKind::KeepFloat32);
  // One node (the sum) and two (and its ε) are not enough: the value leaving them still passes 65504.
  EXPECT_EQ(h->applied.kept_float32, (std::vector<std::string>{"sum_of_squares", "add_eps", "norm"}));
  ASSERT_GE(h->attempts.size(), 3u);
  EXPECT_NE(h->attempts[0].outcome, "accepted");
  EXPECT_EQ(h->attempts[2].outcome, "accepted");
  EXPECT_EQ(fixed_count(r), static_cast<int>(r.hazards.size())) << to_text(r, {});
  EXPECT_EQ(h->data.state, CheckState::Passed) << h->data.detail;
  EXPECT_NE(h->data.detail.find("in fp32: max relative difference 0 "), std::string::npos) << h->data.detail;
  EXPECT_EQ(h->hunt.state, CheckState::Passed) << h->hunt.detail;
  // The repaired model, as written, scans clean in float16.
  ScanOptions so = stated_scan_options(r.fixed, &l.manifest, 1, {}, Precision::Fp16);
  auto s = scan(r.fixed, so);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->count(Verdict::MayFail), 0);
  EXPECT_NE(to_text(r, {}).find("in fp16"), std::string::npos);
  // Where the region ends, its float32 result is rounded back to float16: that Cast is a hazard of its own,
  // proved here for the manifest's x, and may fail once x can reach 60000 (the norm passes 65504).
  const auto sites = find_hazards_in(r.fixed, Precision::Fp16);
  const auto exit_cast = std::find_if(sites.begin(), sites.end(), [](const HazardSite& site) {
    return site.op_type == "Cast" && site.failure == Failure::HalfOverflow;
  });
  ASSERT_NE(exit_cast, sites.end());
  ScanOptions wide = stated_scan_options(r.fixed, &l.manifest, 1, {{"x", {-60000, 60000}}}, Precision::Fp16);
  auto s2 = scan(r.fixed, wide);
  ASSERT_TRUE(s2.is_ok());
  bool cast_may_fail = false;
  for (const auto& v : s2->verdicts) cast_may_fail |= v.site.id == exit_cast->id && v.verdict == Verdict::MayFail;
  EXPECT_TRUE(cast_may_fail);
}

TEST(HalfFix, AHandWrittenSoftmaxGetsTheMaxSubtractedSoftmaxInFloat16) {
  const Loaded l = load("fp16_fix_softmax");
  const FixResult r = fix(l, Precision::Fp16);
  const HazardFix* h = first_repaired(r);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->match.kind, RepairKind::StableSoftmax);
  EXPECT_EQ(fixed_count(r), static_cast<int>(r.hazards.size())) << to_text(r, {});
  EXPECT_EQ(h->hunt.state, CheckState::Passed) << h->hunt.detail;
  EXPECT_EQ(h->data.state, CheckState::Passed) << h->data.detail;
}

TEST(HalfFix, AnAttentionScoreProductIsKeptInFloat32WithItsSoftmaxInFp16AndAloneInAmpFp16) {
  const Loaded l = load("fp16_fix_attention");
  const FixResult fp16 = fix(l, Precision::Fp16);
  const HazardFix* h = first_repaired(fp16);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->match.kind, RepairKind::KeepFloat32);
  EXPECT_EQ(h->applied.kept_float32, (std::vector<std::string>{"scores", "softmax"}));
  EXPECT_EQ(fixed_count(fp16), static_cast<int>(fp16.hazards.size())) << to_text(fp16, {});
  // Autocast keeps Softmax in float32 already: the MatMul alone.
  const FixResult amp = fix(l, Precision::AmpFp16);
  h = first_repaired(amp);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->applied.kept_float32, (std::vector<std::string>{"scores"}));
  EXPECT_EQ(fixed_count(amp), static_cast<int>(amp.hazards.size())) << to_text(amp, {});
}

TEST(HalfFix, AVarianceFlushedToZeroIsKeptInFloat32AndTheDivisionNeedsNoRepairOfItsOwn) {
  const Loaded l = load("fp16_fix_variance");
  const FixResult r = fix(l, Precision::Fp16);
  const HazardFix* h = first_repaired(r);
  ASSERT_NE(h, nullptr) << to_text(r, {});
  EXPECT_EQ(h->match.kind, RepairKind::KeepFloat32);
  EXPECT_EQ(fixed_count(r), static_cast<int>(r.hazards.size())) << to_text(r, {});
  int made_safe = 0;
  for (const auto& x : r.hazards) made_safe += x.made_safe;
  EXPECT_GE(made_safe, 1) << to_text(r, {});
  EXPECT_EQ(h->data.state, CheckState::Passed) << h->data.detail;
}

TEST(HalfFix, ALargerEpsilonIsProvedInFloat16WhereTheModelsOneFlushes) {
  const Loaded l = load("fp16_fix_variance");
  const ScanOptions so = stated_scan_options(l.graph, &l.manifest, 1, {}, Precision::Fp16);
  auto base = scan_baseline(l.graph, so);
  ASSERT_TRUE(base.is_ok());
  int32_t sqrt_node = -1;
  for (size_t i = 0; i < l.graph.nodes.size(); ++i)
    if (l.graph.nodes[i].name == "std") sqrt_node = static_cast<int32_t>(i);
  auto candidates = repair_candidates(l.graph, sqrt_node, Failure::HalfUnderflow, 0, DType::Float16);
  auto eps = std::find_if(candidates.begin(), candidates.end(),
                          [](const RepairMatch& m) { return m.kind == RepairKind::HalfEpsilon; });
  ASSERT_NE(eps, candidates.end());
  EXPECT_EQ(eps->pattern, "v + 1e-08");
  // Not offered in float32 or bfloat16, whose ranges hold 1e-8.
  for (DType f : {DType::Undefined, DType::BFloat16})
    for (const RepairMatch& m : repair_candidates(l.graph, sqrt_node, Failure::HalfUnderflow, 0, f))
      EXPECT_NE(m.kind, RepairKind::HalfEpsilon);
  auto proved = [&](double c) {
    Graph edited = l.graph;
    auto applied = apply_repair(edited, *eps, c);
    EXPECT_TRUE(applied.is_ok()) << applied.message();
    auto ev = check_scan(l.graph, *base, edited, so, applied->prefix, {"standardize"});
    EXPECT_TRUE(ev.is_ok());
    return ev->result.passed();
  };
  EXPECT_TRUE(proved(1e-5));
  EXPECT_FALSE(proved(1e-8));  // the model's own ε: 0 in float16
  EXPECT_EQ(repair_values(RepairKind::HalfEpsilon, DType::Float16).front(), 1e-5);
}

TEST(HalfFix, ADivisorGuardTakes1e5InFloat16BecauseAOver1e7Overflows) {
  // y = a / d, a in [-0.5, 0.5], d in [-1, 1]: d' ≥ 1e-7 leaves a / d' up to 4e6, past 65504 in float16.
  grist::testing::GraphBuilder b(17);
  b.input("a", DType::Float32, {1, 4}).input("d", DType::Float32, {1, 4});
  b.node("Div", {"a", "d"}, {"y"});
  const Graph g = b.output("y").build();
  Manifest m;
  default_inputs(g, m);
  for (auto& [name, in] : m.inputs) {
    in.source = InputSource::Uniform;
    in.uniform_lo = name == "a" ? -0.5 : 0.5;
    in.uniform_hi = name == "a" ? 0.5 : 1.0;
    in.range = ClipRange::Explicit;
    in.lo = name == "a" ? -0.5 : -1.0;
    in.hi = name == "a" ? 0.5 : 1.0;
  }
  const ScanOptions so = stated_scan_options(g, &m, 1, {}, Precision::Fp16);
  auto base = scan_baseline(g, so);
  ASSERT_TRUE(base.is_ok());
  auto candidates = repair_candidates(g, 0, Failure::DivisionByZero, 1, DType::Float16);
  auto guard = std::find_if(candidates.begin(), candidates.end(),
                            [](const RepairMatch& c) { return c.kind == RepairKind::DivisorGuard; });
  ASSERT_NE(guard, candidates.end());
  auto proved = [&](double c, const ScanOptions& o, const ScanBaseline& before) {
    Graph edited = g;
    auto applied = apply_repair(edited, *guard, c);
    EXPECT_TRUE(applied.is_ok()) << applied.message();
    auto ev = check_scan(g, before, edited, o, applied->prefix, {});
    EXPECT_TRUE(ev.is_ok());
    return ev->result.passed();
  };
  EXPECT_FALSE(proved(1e-7, so, *base));  // float32's ε fails check (a) in float16
  EXPECT_TRUE(proved(1e-5, so, *base));
  const ScanOptions fp32 = stated_scan_options(g, &m, 1);
  auto base32 = scan_baseline(g, fp32);
  ASSERT_TRUE(base32.is_ok());
  EXPECT_TRUE(proved(1e-7, fp32, *base32));
  // The fixer takes the float16 list's first: 1e-5.
  FixOptions o = quick(m, Precision::Fp16);
  auto r = fix_model(g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const HazardFix* h = first_repaired(*r);
  ASSERT_NE(h, nullptr) << to_text(*r, {});
  EXPECT_EQ(h->match.kind, RepairKind::DivisorGuard) << to_text(*r, {});
  EXPECT_EQ(h->applied.constant, 1e-5);
}

// Under amp-fp16 autocast computes Exp in float32: its clamp is float32's (87, not float16's 11), there is no
// keep-in-float32 candidate for an op already in float32, and the report gives float32's reason. Under fp16 the
// same Exp runs in float16 and takes 11.
TEST(HalfFix, AnExpAutocastKeepsInFloat32TakesFloat32sClampUnderAmp) {
  grist::testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {1, 4});
  b.node("Exp", {"x"}, {"y"});
  const Graph g = b.output("y").build();
  Manifest m;
  default_inputs(g, m);
  for (auto& [name, in] : m.inputs) {
    in.source = InputSource::Uniform;
    in.uniform_lo = -1;
    in.uniform_hi = 1;
    in.range = ClipRange::Explicit;
    in.lo = -100;
    in.hi = 100;
  }
  for (Precision p : {Precision::AmpFp16, Precision::Fp16}) {
    SCOPED_TRACE(precision_name(p));
    auto r = fix_model(g, quick(m, p));
    ASSERT_TRUE(r.is_ok()) << r.message();
    const HazardFix* h = first_repaired(*r);
    ASSERT_NE(h, nullptr) << to_text(*r, {});
    EXPECT_EQ(h->match.kind, RepairKind::ExpClamp) << to_text(*r, {});
    const bool amp = p == Precision::AmpFp16;
    EXPECT_EQ(h->applied.constant, amp ? 87 : 11) << to_text(*r, {});
    if (amp) {
      for (const RepairAttempt& a : h->attempts) EXPECT_NE(a.kind, RepairKind::KeepFloat32) << a.outcome;
    }
    const std::string text = to_text(*r, {});
    EXPECT_EQ(text.find("float16: limit 11") != std::string::npos, !amp) << text;
  }
}
