#include "fix/rewrite.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "ops/hazard.h"

namespace grist {

namespace {

Attribute int_attr(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::Int;
  a.i = v;
  return a;
}

Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::Ints;
  a.ints = std::move(v);
  return a;
}

// Adds nodes and values to a graph under one name prefix, and tidies up after.
class GraphEditor {
 public:
  GraphEditor(Graph& g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {
    for (const Node& n : g_.nodes) node_names_.insert(n.name);
    live_before_ = live_nodes();
    for (ValueId id : g_.initializers) used_before_.insert(id);
    for (ValueId id : g_.initializers)
      if (g_.value(id).consumers.empty()) used_before_.erase(id);
  }

  const std::string& prefix() const { return prefix_; }
  const std::vector<std::string>& added() const { return added_; }

  ValueId constant(double v, DType dtype) {
    Tensor t(dtype, Shape{});
    dispatch_float(dtype, [&](auto tag) { t.data<decltype(tag)>()[0] = static_cast<decltype(tag)>(v); });
    return constant_tensor(std::move(t));
  }

  ValueId constant_ints(const std::vector<int64_t>& v) {
    Tensor t(DType::Int64, Shape{static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return constant_tensor(std::move(t));
  }

  // A node of `op` reading `inputs`; returns its (single) output, of element type `dtype`.
  ValueId add(const std::string& op, std::vector<ValueId> inputs, DType dtype,
              std::vector<std::pair<std::string, Attribute>> attributes = {}) {
    Node n;
    n.op_type = op;
    n.name = unique_node_name(op);
    n.opset = opset();
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    n.outputs = {new_value(dtype)};
    const ValueId out = n.outputs[0];
    push(std::move(n));
    return out;
  }

  // Node `index` of the graph applied again, to `input0` instead of its first input.
  ValueId replay(int32_t index, ValueId input0) {
    Node n = g_.nodes[static_cast<size_t>(index)];
    n.name = unique_node_name(n.op_type);
    n.inputs[0] = input0;
    DType dtype = g_.value(input0).dtype;
    if (n.op_type == "Cast") dtype = static_cast<DType>(n.attr_int("to", 0));
    n.outputs = {new_value(dtype)};
    const ValueId out = n.outputs[0];
    push(std::move(n));
    return out;
  }

  // The new node that produced `produced` now writes `replaced`, whose old producer gets an unread value.
  void take_over(ValueId replaced, ValueId produced) {
    const int32_t old_node = g_.value(replaced).producer;
    const int32_t new_node = g_.value(produced).producer;
    for (ValueId& out : g_.nodes[static_cast<size_t>(new_node)].outputs)
      if (out == produced) out = replaced;
    if (old_node >= 0)
      for (ValueId& out : g_.nodes[static_cast<size_t>(old_node)].outputs)
        if (out == replaced) out = new_value(g_.value(replaced).dtype, g_.value(replaced).name + "/before_fix");
    g_.link();
  }

  // Removes the nodes the rewrite left unread (not those the model already had) and the weights only they
  // read, then restores topological order.
  Status finish(std::vector<std::string>& removed) {
    g_.link();
    const std::vector<bool> live = live_nodes();
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const bool was_there = i < live_before_.size();
      if (!live[i] && (!was_there || live_before_[i])) {
        removed.push_back(g_.nodes[i].name);
        continue;
      }
      kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    g_.link();
    std::vector<ValueId> inits;
    for (ValueId id : g_.initializers)
      if (!(used_before_.count(id) && g_.value(id).consumers.empty())) inits.push_back(id);
    g_.initializers = std::move(inits);
    return g_.sort_topologically();
  }

 private:
  int opset() const {
    auto it = g_.opsets.find("");
    return it == g_.opsets.end() ? 0 : static_cast<int>(it->second);
  }

  ValueId constant_tensor(Tensor t) {
    Attribute a;
    a.type = Attribute::Type::Tensor;
    const DType dtype = t.dtype();
    a.t = std::make_shared<const Tensor>(std::move(t));
    return add("Constant", {}, dtype, {{"value", a}});
  }

  std::string unique_node_name(const std::string& op) {
    std::string name = fmt::format("{}/{}", prefix_, op);
    for (int k = 2; node_names_.count(name); ++k) name = fmt::format("{}/{}_{}", prefix_, op, k);
    node_names_.insert(name);
    return name;
  }

  ValueId new_value(DType dtype, std::string base = {}) {
    if (base.empty()) base = fmt::format("{}/out", prefix_);
    std::string name = base;
    for (int k = 2; g_.find_value(name) != kNoValue; ++k) name = fmt::format("{}_{}", base, k);
    Value v;
    v.name = name;
    v.dtype = dtype;
    return g_.add_value(std::move(v));
  }

  void push(Node n) {
    added_.push_back(n.name);
    g_.nodes.push_back(std::move(n));
    g_.link();
  }

  // A node is live when a graph output depends on it (nodes are in topological order, new ones after).
  std::vector<bool> live_nodes() const {
    std::vector<bool> live(g_.nodes.size(), false);
    std::vector<bool> wanted(g_.values.size(), false);
    for (ValueId id : g_.outputs) wanted[static_cast<size_t>(id)] = true;
    // New nodes are appended, so a reverse walk must go over them first; repeat until nothing changes.
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = g_.nodes.size(); i-- > 0;) {
        if (live[i]) continue;
        bool any = false;
        for (ValueId out : g_.nodes[i].outputs) any |= out != kNoValue && wanted[static_cast<size_t>(out)];
        if (!any) continue;
        live[i] = changed = true;
        for (ValueId in : g_.nodes[i].inputs)
          if (in != kNoValue) wanted[static_cast<size_t>(in)] = true;
      }
    }
    return live;
  }

  Graph& g_;
  std::string prefix_;
  std::unordered_set<std::string> node_names_;
  std::vector<bool> live_before_;
  std::set<ValueId> used_before_;
  std::vector<std::string> added_;
};

DType float_type_of(const Graph& g, ValueId v) {
  const DType t = g.value(v).dtype;
  return is_float(t) ? t : DType::Float32;
}

ValueId apply_chain(GraphEditor& e, const std::vector<int32_t>& chain, ValueId v) {
  for (int32_t n : chain) v = e.replay(n, v);
  return v;
}

// The sign of d with sign(0) = 1, so that d = s·|d| and s·s = 1: where(d ≥ 0, 1, −1).
ValueId unit_sign(GraphEditor& e, ValueId d, DType dt) {
  const ValueId ge = e.add("GreaterOrEqual", {d, e.constant(0, dt)}, DType::Bool);
  return e.add("Where", {ge, e.constant(1, dt), e.constant(-1, dt)}, dt);
}

// max(|d|, ε): the magnitude of the guarded divisor, which the scan proves ≥ ε in one interval (a guarded d itself,
// ≤ −ε or ≥ ε, is one interval across 0).
ValueId guarded_magnitude(GraphEditor& e, ValueId d, double eps, DType dt, bool nonnegative) {
  const ValueId m = nonnegative ? d : e.add("Abs", {d}, dt);
  return e.add("Max", {m, e.constant(eps, dt)}, dt);
}

bool whole(double v) { return std::isfinite(v) && v == std::floor(v); }

// The region's nodes computed in float32 whatever the run's precision, its float inputs from the rest of the model
// entering through Cast(to=FLOAT) and its result leaving through one (not kept: its output is rounded to the
// format again, the `.half()` after the float32 computation). In float32 both Casts are identities.
Result<AppliedRepair> keep_in_float32(Graph& g, GraphEditor& e, const RepairMatch& m, int size, AppliedRepair out) {
  const std::vector<int32_t> region = keep_float32_region(g, m, size);
  GRIST_CHECK(static_cast<int>(region.size()) == size, "the chain of single-reader ops ends after {} node{}",
              region.size(), region.size() == 1 ? "" : "s");
  std::vector<std::string> names;
  for (int32_t n : region) names.push_back(g.nodes[static_cast<size_t>(n)].name);
  const std::set<int32_t> inside(region.begin(), region.end());
  const auto to_float = [] {
    Attribute a;
    a.type = Attribute::Type::Int;
    a.i = static_cast<int64_t>(DType::Float32);
    return std::vector<std::pair<std::string, Attribute>>{{"to", a}};
  };
  std::vector<std::pair<std::string, ValueId>> entries;  // (node name, input replaced) to rewire
  for (int32_t n : region) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId in = node.inputs[i];
      if (in == kNoValue || !is_float(g.value(in).dtype)) continue;
      const Value& v = g.value(in);
      const bool constant = v.kind == ValueKind::Initializer ||
                            (v.producer >= 0 && g.nodes[static_cast<size_t>(v.producer)].op_type == "Constant");
      if (constant || (v.producer >= 0 && inside.count(v.producer))) continue;
      entries.emplace_back(node.name, in);
    }
  }
  for (const auto& [name, in] : entries) {
    const ValueId cast = e.add("Cast", {in}, DType::Float32, to_float());
    g.nodes.back().keep_float32 = true;
    for (Node& node : g.nodes)
      if (node.name == name)
        for (ValueId& x : node.inputs)
          if (x == in) x = cast;
  }
  // The exit: the last node writes a new value, which the Cast reads and hands on under the old name.
  const ValueId result = g.nodes[static_cast<size_t>(region.back())].outputs[0];
  const ValueId exit = e.add("Cast", {result}, DType::Float32, to_float());
  e.take_over(result, exit);
  Node& cast = g.nodes[static_cast<size_t>(g.value(result).producer)];
  for (Node& node : g.nodes)
    if (node.name == names.back()) cast.inputs[0] = node.outputs[0];
  for (Node& node : g.nodes)
    if (std::find(names.begin(), names.end(), node.name) != names.end()) node.keep_float32 = true;
  // A Constant only the region reads is float32 as well (its ε; initializers: read_only_in_float32).
  g.link();
  for (Node& node : g.nodes) {
    if (node.op_type != "Constant" || node.outputs.empty() || node.outputs[0] == kNoValue) continue;
    const auto& readers = g.value(node.outputs[0]).consumers;
    if (!readers.empty() && std::all_of(readers.begin(), readers.end(), [&](int32_t c) {
          return g.nodes[static_cast<size_t>(c)].keep_float32;
        })) {
      node.keep_float32 = true;
      names.push_back(node.name);
    }
  }
  out.kept_float32 = names;
  out.added_nodes = e.added();
  GRIST_TRY(e.finish(out.removed_nodes));
  return out;
}

}  // namespace

bool takes_constant(RepairKind kind) {
  switch (kind) {
    case RepairKind::NormGuard:
    case RepairKind::DivisorGuard:
    case RepairKind::ExpClamp:
    case RepairKind::PowBaseGuard:
    case RepairKind::LogitsClamp:
    case RepairKind::LogClamp:
    case RepairKind::SqrtClamp:
    case RepairKind::PowBaseBound:
    case RepairKind::KeepFloat32:  // its constant: the region's size in nodes
    case RepairKind::HalfEpsilon:
      return true;
    default:
      return false;
  }
}

double default_constant(const RepairMatch& m, DType format) {
  const auto values = repair_values(m.kind, format);
  if ((m.kind == RepairKind::LogClamp || m.kind == RepairKind::SqrtClamp) && values.empty()) return clamp_tiny();
  if (m.kind == RepairKind::PowBaseBound && m.exponent && *m.exponent > 1)
    return std::pow(format_limits(format).max / 2, 1.0 / *m.exponent);
  return values.empty() ? 0 : values.front();
}

Result<AppliedRepair> apply_repair(Graph& g, const RepairMatch& m, double c) {
  GRIST_CHECK(m.hazard_node >= 0 && m.hazard_node < static_cast<int32_t>(g.nodes.size()),
              "repair of a node not in the graph");
  GRIST_CHECK(repair_entry(m.kind).graph_repair, "{} has no graph repair", repair_entry(m.kind).id);
  GRIST_CHECK(m.source != kNoValue && m.replaced != kNoValue, "repair {}: nothing matched", repair_entry(m.kind).id);
  AppliedRepair out;
  out.prefix = g.nodes[static_cast<size_t>(m.hazard_node)].name + "/grist_fix";
  out.constant = takes_constant(m.kind) ? c : 0;
  GraphEditor e(g, out.prefix);
  const int opset = g.opsets.count("") ? static_cast<int>(g.opsets.at("")) : 0;
  const ValueId x = apply_chain(e, m.pre_chain, m.source);
  const DType dt = float_type_of(g, x);  // the new nodes read x: a float Cast in the chain decides their type
  auto reduce_attrs = [&](const std::vector<int64_t>& axes, bool keepdims) {
    std::vector<std::pair<std::string, Attribute>> attrs{{"keepdims", int_attr(keepdims ? 1 : 0)}};
    if (!axes.empty()) attrs.emplace_back("axes", ints_attr(axes));
    return attrs;
  };
  auto reduce_log_sum_exp = [&](ValueId v, const std::vector<int64_t>& axes, bool keepdims) {
    if (opset >= 18) {  // axes became an input
      std::vector<ValueId> in{v};
      if (!axes.empty()) in.push_back(e.constant_ints(axes));
      return e.add("ReduceLogSumExp", in, dt, {{"keepdims", int_attr(keepdims ? 1 : 0)}});
    }
    return e.add("ReduceLogSumExp", {v}, dt, reduce_attrs(axes, keepdims));
  };
  const Node hazard = g.nodes[static_cast<size_t>(m.hazard_node)];
  ValueId y = kNoValue;
  switch (m.kind) {
    case RepairKind::LogSoftmax:
    case RepairKind::SoftmaxCrossEntropy:
      y = e.add("LogSoftmax", {x}, dt, {{"axis", int_attr(m.axis)}});
      break;
    case RepairKind::LogSumExpForm:
      y = e.add("Sub", {x, reduce_log_sum_exp(x, m.axes, true)}, dt);
      break;
    case RepairKind::LogSigmoid:
      y = e.add("Neg", {e.add("Softplus", {e.add("Neg", {x}, dt)}, dt)}, dt);
      break;
    case RepairKind::LogOneMinusSigmoid:
      y = e.add("Neg", {e.add("Softplus", {x}, dt)}, dt);
      break;
    case RepairKind::LogSumExp:
      y = reduce_log_sum_exp(x, m.axes, m.keepdims);
      break;
    case RepairKind::Softplus:
      y = e.add("Softplus", {x}, dt);
      break;
    case RepairKind::StableSoftmax:
      y = e.add("Softmax", {x}, dt, {{"axis", int_attr(m.axis)}});
      break;
    case RepairKind::SqrtOfExp:
      y = e.add("Exp", {e.add("Mul", {x, e.constant(0.5, dt)}, dt)}, dt);
      break;
    case RepairKind::NormGuard:
      y = e.add("Div", {m.numerator, e.add("Max", {x, e.constant(c, dt)}, dt)}, dt);
      break;
    case RepairKind::DivisorGuard: {
      // a / d' with d' = s·max(|d|, ε) is (a·s) / max(|d|, ε): the same value, with a divisor ≥ ε.
      const ValueId mag = guarded_magnitude(e, x, c, dt, m.operand_nonnegative);
      ValueId num = m.numerator;
      if (!m.operand_nonnegative) {
        const ValueId s = unit_sign(e, x, dt);
        num = num == kNoValue ? s : e.add("Mul", {num, s}, dt);
      }
      y = num == kNoValue ? e.add("Reciprocal", {mag}, dt) : e.add("Div", {num, mag}, dt);
      break;
    }
    case RepairKind::LogClamp:
      y = e.add("Log", {e.add("Max", {x, e.constant(c, dt)}, dt)}, dt);
      break;
    case RepairKind::SqrtClamp:
      y = e.add("Sqrt", {e.add("Max", {x, e.constant(c, dt)}, dt)}, dt);
      break;
    case RepairKind::ExpClamp:
      y = e.add("Exp", {e.add("Min", {x, e.constant(c, dt)}, dt)}, dt);
      break;
    case RepairKind::PowBaseGuard: {
      // A whole exponent keeps negative bases: (s·|x|)^e = s^e·|x|^e, s^e = s for an odd e and 1 for an even one.
      // A fractional one cannot take them: the base is clamped at ε.
      const bool whole_exponent = m.exponent && whole(*m.exponent);
      if (!whole_exponent || m.operand_nonnegative) {
        y = e.add("Pow", {e.add("Max", {x, e.constant(c, dt)}, dt), hazard.inputs[1]}, dt);
        break;
      }
      y = e.add("Pow", {guarded_magnitude(e, x, c, dt, false), hazard.inputs[1]}, dt);
      if (std::fmod(*m.exponent, 2.0) != 0) y = e.add("Mul", {y, unit_sign(e, x, dt)}, dt);
      break;
    }
    case RepairKind::PowBaseBound: {
      const ValueId base = e.add("Max", {e.add("Min", {x, e.constant(c, dt)}, dt), e.constant(-c, dt)}, dt);
      y = e.add("Pow", {base, hazard.inputs[1]}, dt);
      break;
    }
    case RepairKind::LogitsClamp: {
      const ValueId clipped = e.add("Max", {e.add("Min", {x, e.constant(c, dt)}, dt), e.constant(-c, dt)}, dt);
      y = e.add("LogSoftmax", {clipped}, dt, {{"axis", int_attr(m.axis)}});
      break;
    }
    case RepairKind::HalfEpsilon:
      y = e.add("Add", {x, e.constant(c, dt)}, dt);
      break;
    case RepairKind::KeepFloat32:
      return keep_in_float32(g, e, m, static_cast<int>(c), out);
    case RepairKind::LossWeights:
    case RepairKind::RangeDelta:
      return make_error("{} has no graph repair", repair_entry(m.kind).id);
  }
  y = apply_chain(e, m.chain, y);
  e.take_over(m.replaced, y);
  out.added_nodes = e.added();
  GRIST_TRY(e.finish(out.removed_nodes));
  return out;
}

}  // namespace grist
