#include "analysis/hazards.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fix/patterns.h"
#include "ops/registry.h"

namespace grist {

std::string HazardSite::label() const {
  return fmt::format("#{} {} '{}' ({})", id, op_type, node_name, condition);
}

namespace {

const Node* producer_of(const Graph& g, ValueId v) {
  if (v == kNoValue) return nullptr;
  int32_t p = g.value(v).producer;
  return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
}

// A scalar constant (initializer or Constant node) equal to `want`.
bool is_constant_equal(const Graph& g, ValueId v, double want) {
  const Value& val = g.value(v);
  const Tensor* t = val.initial.get();
  if (!t) {
    const Node* p = producer_of(g, v);
    if (p && p->op_type == "Constant") {
      const Attribute* a = p->attr("value");
      if (a && a->t) t = a->t.get();
    }
  }
  return t && t->numel() == 1 && t->get_as_double(0) == want;
}

// Moves the objective upstream where a pattern makes the study's template the right one, and names the pattern.
void refine_by_pattern(const Graph& g, HazardSite& s) {
  const Node* p = producer_of(g, s.operand_value);
  if (!p) return;
  if (s.op_type == "Log") {
    if (p->op_type == "Softmax") {
      s.pattern = "log(softmax)";
    } else if (p->op_type == "Sigmoid") {
      s.pattern = "log(sigmoid)";
    } else if (p->op_type == "Sub" && p->has_input(0) && p->has_input(1) && is_constant_equal(g, p->inputs[0], 1.0)) {
      s.pattern = "log(1 - v)";
      s.objective = Objective::MinAbsOneMinus;
      s.objective_value = p->inputs[1];
    }
  } else if (s.op_type == "Div" && p->op_type == "ReduceSum") {
    const Node* e = p->has_input(0) ? producer_of(g, p->inputs[0]) : nullptr;
    if (e && e->op_type == "Exp") {
      s.pattern = "softmax denominator sum(exp(v))";
      s.objective = Objective::Max;
      s.objective_value = e->inputs[0];
    }
  }
}

}  // namespace

std::vector<HazardSite> find_hazards(const Graph& g) {
  std::vector<HazardSite> sites;
  const auto& reg = OpRegistry::global();
  for (int32_t n = 0; n < static_cast<int32_t>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    const OpDef* def = reg.find(node.op_type, node.domain);
    if (!def) continue;
    for (const HazardSpec& spec : def->hazards) {
      if (!node.has_input(static_cast<size_t>(spec.operand))) continue;
      if (spec.applies && !spec.applies(g, node)) continue;
      ValueId operand = node.inputs[static_cast<size_t>(spec.operand)];
      // Hazards on integer tensors (shape arithmetic) cannot produce NaN/Inf.
      DType dt = g.value(operand).dtype;
      if (dt != DType::Undefined && !is_float(dt) && spec.failure != Failure::RangeZeroDelta) continue;
      HazardSite s;
      s.id = static_cast<int>(sites.size()) + 1;
      s.node = n;
      s.node_name = node.name;
      s.op_type = node.op_type;
      s.operand = spec.operand;
      s.operand_value = operand;
      s.failure = spec.failure;
      s.objective = spec.objective;
      s.objective_value = operand;
      s.condition = fmt::format("{} {}", node.op_type, spec.condition);
      refine_by_pattern(g, s);
      // From the catalogue `grist fix` applies, so the hint and the fix never disagree.
      s.fix_hint = fix_hint_for(g, n, s.failure, s.operand);
      sites.push_back(std::move(s));
    }
  }
  return sites;
}

namespace {

template <class T>
ObjectiveValue evaluate_typed(Objective kind, const Tensor& v, Tensor& seed) {
  const T* p = v.data<T>();
  const int64_t n = v.numel();
  seed.resize_zero(v.dtype(), v.shape());
  T* s = seed.data<T>();
  ObjectiveValue r;
  auto extremum = [&](auto key, bool want_max) {
    double best = want_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    int64_t at = -1;
    for (int64_t i = 0; i < n; ++i) {
      double k = key(static_cast<double>(p[i]));
      if (std::isnan(k)) continue;
      if (at < 0 || (want_max ? k > best : k < best)) {
        best = k;
        at = i;
      }
    }
    return std::pair{best, at};
  };
  auto sign = [](double x) { return static_cast<T>(x > 0 ? 1 : (x < 0 ? -1 : 0)); };
  switch (kind) {
    case Objective::MinAbs: {
      auto [best, at] = extremum([](double x) { return std::fabs(x); }, false);
      r = {best, at};
      if (at >= 0) s[at] = sign(static_cast<double>(p[at]));
      break;
    }
    case Objective::MinAbsOneMinus: {
      auto [best, at] = extremum([](double x) { return std::fabs(1.0 - x); }, false);
      r = {best, at};
      if (at >= 0) s[at] = -sign(1.0 - static_cast<double>(p[at]));
      break;
    }
    case Objective::NegMax: {
      auto [best, at] = extremum([](double x) { return x; }, true);
      r = {-best, at};
      if (at >= 0) s[at] = T(-1);
      break;
    }
    case Objective::Max: {
      auto [best, at] = extremum([](double x) { return x; }, true);
      r = {best, at};
      if (at >= 0) s[at] = T(1);
      break;
    }
    case Objective::Min: {
      auto [best, at] = extremum([](double x) { return x; }, false);
      r = {best, at};
      if (at >= 0) s[at] = T(1);
      break;
    }
    case Objective::NegSpread: {
      auto [hi, at_hi] = extremum([](double x) { return x; }, true);
      auto [lo, at_lo] = extremum([](double x) { return x; }, false);
      r = {-(hi - lo), at_hi};
      if (at_hi >= 0 && at_lo >= 0 && at_hi != at_lo) {
        s[at_hi] = T(-1);
        s[at_lo] = T(1);
      }
      break;
    }
    case Objective::None:
      break;
  }
  return r;
}

}  // namespace

ObjectiveValue evaluate_objective(Objective kind, const Tensor& v, Tensor& seed) {
  ObjectiveValue r;
  dispatch_float(v.dtype(), [&](auto tag) { r = evaluate_typed<decltype(tag)>(kind, v, seed); });
  return r;
}

}  // namespace grist
