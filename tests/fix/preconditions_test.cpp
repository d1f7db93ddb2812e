// Preconditions with an analytic answer: log(w·x + b) is safe exactly where w·x + b > 0, so the widest input box
// for w = 2, b = 1 within x ∈ [−50, 50] is [−0.5, 50], and the widest weight box for x ∈ [1, 2], b = 1 within
// w ∈ [−10, 10] is [−0.5, 10]. The search must find them (to its tolerance), say they are maximal, and report
// the data they exclude.
#include <gtest/gtest.h>

#include "fix/preconditions.h"
#include "support/graph_builder.h"

using namespace grist;

namespace {

// y = log(x·w + b): x [1, 2] a data input, w [2] a weight (2, 2), b the scalar 1.
Graph log_of_affine() {
  grist::testing::GraphBuilder gb(17);
  gb.input("x", DType::Float32, {1, 2});
  gb.constant("w", Tensor::from<float>(Shape{2}, {2.0f, 2.0f}));
  gb.constant("b", Tensor::scalar<float>(1.0f));
  gb.node("Mul", {"x", "w"}, {"xw"}).node("Add", {"xw", "b"}, {"z"}).node("Log", {"z"}, {"y"}).output("y");
  return gb.build();
}

Manifest manifest(Interval x, bool train_w) {
  Manifest m;
  InputSpec in;
  in.name = "x";
  in.role = InputRole::Data;
  in.range = ClipRange::Explicit;
  in.lo = x.lo;
  in.hi = x.hi;
  m.inputs["x"] = in;
  m.train.enabled = train_w;
  m.train.all_params = false;
  m.train.params = {"w"};
  return m;
}

const VariableBox* box_of(const Precondition& p, const std::string& name) {
  for (const auto& b : p.boxes)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace

TEST(Preconditions, TheWidestInputBoxOfLogOfAnAffineMapIsTheExactOne) {
  const Graph g = log_of_affine();
  const Manifest m = manifest({-50, 50}, false);
  PreconditionOptions o;
  o.manifest = &m;
  o.tolerance = 1e-6;
  o.seconds_budget = 60;
  o.max_probes = 2000;
  o.data["x"] = {0.25, 3};  // what the data holds: inside the answer
  auto s = find_preconditions(g, "Log_2", Failure::LogOfNonPositive, o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  const Precondition& p = s->inputs;
  ASSERT_TRUE(p.found) << p.note;
  const VariableBox* x = box_of(p, "x");
  ASSERT_NE(x, nullptr);
  EXPECT_GE(x->box.lo, -0.5);  // never wider than the truth (the proof is sound)
  EXPECT_LE(x->box.lo, -0.5 + 1e-4);  // and no narrower than the tolerance (100·1e-6) allows
  EXPECT_EQ(x->box.hi, 50);
  EXPECT_TRUE(p.maximal);
  EXPECT_TRUE(p.holds_data);
  EXPECT_NEAR(x->relative_width, 50.5 / 100, 1e-5);
  // w does not train: there is no weight precondition to find, and W+I is the input box again.
  EXPECT_FALSE(s->weights.found);
  ASSERT_TRUE(s->both.found);
  EXPECT_NEAR(box_of(s->both, "x")->box.lo, x->box.lo, 1e-4);
}

TEST(Preconditions, TheWidestWeightBoxOfLogOfAnAffineMapIsTheExactOne) {
  const Graph g = log_of_affine();
  const Manifest m = manifest({1, 2}, true);
  PreconditionOptions o;
  o.manifest = &m;
  o.assumed["w"] = {-10, 10};
  o.tolerance = 1e-6;
  o.seconds_budget = 60;
  o.max_probes = 2000;
  auto s = find_preconditions(g, "Log_2", Failure::LogOfNonPositive, o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  const Precondition& p = s->weights;
  ASSERT_TRUE(p.found) << p.note;
  const VariableBox* w = box_of(p, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_GE(w->box.lo, -0.5);
  EXPECT_LE(w->box.lo, -0.5 + 1e-4);
  EXPECT_EQ(w->box.hi, 10);
  EXPECT_TRUE(p.maximal);
  EXPECT_TRUE(w->holds_data);  // the initial weights (2, 2) are inside
  // With w anywhere in [−10, 10], no input in [1, 2] keeps w·x + 1 positive.
  EXPECT_FALSE(s->inputs.found);
}

TEST(Preconditions, AnInputBoxThatExcludesTheDataIsSaidToDoSo) {
  const Graph g = log_of_affine();
  const Manifest m = manifest({-50, 50}, false);
  PreconditionOptions o;
  o.manifest = &m;
  o.data["x"] = {-3, 3};  // below −0.5 the model fails: data there cannot be kept
  auto s = find_preconditions(g, "Log_2", Failure::LogOfNonPositive, o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_TRUE(s->inputs.found);
  EXPECT_FALSE(s->inputs.holds_data);
  EXPECT_NE(s->inputs.note.find("excludes"), std::string::npos) << s->inputs.note;
}
