#include "analysis/half_hazards.h"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "engine/autocast.h"

namespace grist {

namespace {

// Ops whose rounded result can pass the format's max although their inputs are in range: products and
// convolutions (accumulated in float32, rounded once), sums and sums of squares, Mul, Pow, Exp. A mean or a
// max cannot: computed in float32 and rounded once, it stays within its inputs' range.
constexpr std::array<std::string_view, 10> kOverflowOps{"MatMul", "Gemm", "Conv", "ConvTranspose", "ReduceSum",
                                                        "ReduceSumSquare", "ReduceL2", "Mul", "Pow", "Exp"};

// Operands that fail once they flush to 0: (op, input).
struct UnderflowOperand {
  std::string_view op;
  int input;
  std::string_view condition;
};
constexpr std::array<UnderflowOperand, 4> kUnderflowOperands{{
    {"Div", 1, "divisor"},
    {"Reciprocal", 0, "input"},
    {"Log", 0, "input"},
    {"Sqrt", 0, "input"},
}};

bool float_or_unknown(DType t) { return t == DType::Float32 || t == DType::Undefined; }

bool is_constant(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  return v.kind == ValueKind::Initializer ||
         (v.producer >= 0 && g.nodes[static_cast<size_t>(v.producer)].op_type == "Constant");
}

std::string_view format_name(DType f) { return f == DType::Float16 ? "float16" : "bfloat16"; }

// Whether `node` reads a float value computed in float32 (not a constant): its result, in the format, is that
// value rounded down to the format.
bool reads_float32_value(const Graph& g, const Node& node, const std::vector<DType>& formats) {
  for (ValueId id : node.inputs)
    if (id != kNoValue && float_or_unknown(g.value(id).dtype) && formats[static_cast<size_t>(id)] == DType::Undefined &&
        !is_constant(g, id))
      return true;
  return false;
}

}  // namespace

std::vector<bool> values_in_format(const Graph& g, Precision p) {
  std::vector<bool> in(g.values.size(), false);
  if (precision_format(p) == DType::Undefined) return in;
  if (!is_autocast(p)) {
    for (size_t i = 0; i < g.values.size(); ++i) in[i] = float_or_unknown(g.values[i].dtype);
    for (const Node& node : g.nodes)  // computed in float32 (Node::keep_float32)
      if (node.keep_float32)
        for (ValueId id : node.outputs)
          if (id != kNoValue) in[static_cast<size_t>(id)] = false;
    for (ValueId id : g.initializers)
      if (read_only_in_float32(g, id)) in[static_cast<size_t>(id)] = false;
    return in;
  }
  // Autocast: inputs and weights stay float32; the rules of Executor::autocast_output_in_format.
  for (const Node& node : g.nodes) {
    const AutocastRule rule = node.domain.empty() ? autocast_rule(node.op_type) : AutocastRule::Follow;
    bool out = rule == AutocastRule::LowerPrecision && !node.keep_float32;
    if (!node.keep_float32 && (rule == AutocastRule::Promote || rule == AutocastRule::Follow)) {
      bool any = false, all = true, others_constant = true;
      for (ValueId id : node.inputs) {
        if (id == kNoValue || !float_or_unknown(g.value(id).dtype)) continue;
        if (in[static_cast<size_t>(id)]) {
          any = true;
          continue;
        }
        all = false;
        others_constant = others_constant && is_constant(g, id);
      }
      out = rule == AutocastRule::Promote ? any && all : any && others_constant;
    }
    for (ValueId id : node.outputs)
      if (id != kNoValue) in[static_cast<size_t>(id)] = out && float_or_unknown(g.value(id).dtype);
  }
  return in;
}

std::vector<DType> stored_formats(const Graph& g) {
  auto half = [](DType t) { return t == DType::Float16 || t == DType::BFloat16; };
  std::vector<DType> stored(g.values.size(), DType::Undefined);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (half(g.values[i].dtype)) stored[i] = g.values[i].dtype;
  for (const Node& node : g.nodes) {
    DType from = DType::Undefined;
    if (node.domain.empty() && node.op_type == "Cast") {
      from = static_cast<DType>(node.attr_int("to", 0));
    } else {
      bool agree = true;
      for (ValueId id : node.inputs) {
        if (id == kNoValue) continue;
        const DType t = half(stored[static_cast<size_t>(id)]) ? stored[static_cast<size_t>(id)] : g.value(id).dtype;
        if (!is_float(t)) continue;  // indices, shapes, axes
        agree = agree && (from == DType::Undefined || from == t);
        from = t;
      }
      if (!agree) from = DType::Undefined;
    }
    if (!half(from)) continue;
    for (ValueId id : node.outputs)
      if (id != kNoValue && g.value(id).dtype == DType::Undefined) stored[static_cast<size_t>(id)] = from;
  }
  return stored;
}

std::vector<DType> value_formats(const Graph& g, Precision p) {
  const DType format = precision_format(p);
  const std::vector<bool> in = values_in_format(g, p);
  std::vector<DType> formats = stored_formats(g);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (formats[i] == DType::Undefined && in[i]) formats[i] = format;
  return formats;
}

std::vector<HazardSite> find_hazards_in(const Graph& g, Precision p) {
  std::vector<HazardSite> sites = find_hazards(g);
  const std::vector<DType> formats = value_formats(g, p);
  if (std::all_of(formats.begin(), formats.end(), [](DType f) { return f == DType::Undefined; })) return sites;
  const std::string keep_float32 =
      "keep the op in float32: Cast its inputs to float32 and its result back (autocast's custom_fwd, .float())";
  for (int32_t n = 0; n < static_cast<int32_t>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    if (!node.domain.empty()) continue;
    auto site = [&](Failure f, Objective o, int operand, ValueId v, std::string condition, std::string hint) {
      HazardSite s;
      s.node = n;
      s.node_name = node.name;
      s.op_type = node.op_type;
      s.operand = operand;
      s.operand_value = v;
      s.failure = f;
      s.objective = o;
      s.objective_value = v;
      s.condition = std::move(condition);
      s.fix_hint = std::move(hint);
      sites.push_back(std::move(s));
    };
    const bool overflows = std::find(kOverflowOps.begin(), kOverflowOps.end(), node.op_type) != kOverflowOps.end();
    // The format of the result (the run's, or the one the model stores it in).
    const DType format = !node.outputs.empty() && node.outputs[0] != kNoValue
                             ? formats[static_cast<size_t>(node.outputs[0])]
                             : DType::Undefined;
    const bool result_in_format = format != DType::Undefined;
    // An Exp the catalogue already has (ExpOverflow, maximise its input) is one hazard, not two: its site
    // says the format's own threshold (exp passes 65504 above ln 65504 = 11.09, not float32's 88.72).
    auto exp_site = std::find_if(sites.begin(), sites.end(), [&](const HazardSite& s) {
      return s.node == n && s.failure == Failure::ExpOverflow;
    });
    if (result_in_format && exp_site != sites.end()) {
      exp_site->condition = format == DType::Float16 ? "Exp input > 11.09 = ln 65504 (float16's max)"
                                                     : "Exp input > 88.72 (bfloat16's max)";
    } else if (overflows && result_in_format) {
      site(Failure::HalfOverflow, Objective::NegMaxAbs, 0, node.outputs[0],
           fmt::format("{} result beyond {}'s max", node.op_type, format_name(format)), keep_float32);
    } else if (result_in_format && reads_float32_value(g, node, formats)) {
      // A float32 value rounded to the format here (the exit Cast of a region kept in float32, an autocast
      // export's Cast to float16, an op autocast runs in half on a float32 operand) overflows past its max.
      site(Failure::HalfOverflow, Objective::NegMaxAbs, 0, node.outputs[0],
           fmt::format("{} result beyond {}'s max (a float32 value rounded to it)", node.op_type,
                       format_name(format)),
           "keep the value's consumers in float32 too, or bound it before it returns to the format");
    }
    for (const UnderflowOperand& u : kUnderflowOperands) {
      if (u.op != node.op_type || !node.has_input(static_cast<size_t>(u.input))) continue;
      const ValueId v = node.inputs[static_cast<size_t>(u.input)];
      const DType operand_format = formats[static_cast<size_t>(v)];
      if (operand_format == DType::Undefined) continue;
      site(Failure::HalfUnderflow, Objective::MinAbs, u.input, v,
           fmt::format("{} {} flushes to 0 in {}", node.op_type, u.condition, format_name(operand_format)),
           operand_format == DType::Float16
               ? "an ε the format holds (1e-5 rather than 1e-8 in float16), or " + keep_float32
               : keep_float32);
    }
  }
  // Execution order (the scan walks sites with their nodes), the float32 site first at a node; ids from 1.
  std::stable_sort(sites.begin(), sites.end(),
                   [](const HazardSite& a, const HazardSite& b) { return a.node < b.node; });
  for (size_t i = 0; i < sites.size(); ++i) sites[i].id = static_cast<int>(i) + 1;
  return sites;
}

}  // namespace grist
