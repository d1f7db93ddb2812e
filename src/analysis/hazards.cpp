#include "analysis/hazards.h"

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

}  // namespace grist
