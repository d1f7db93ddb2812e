#include "fix/patterns.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace grist {

namespace {

const Node* producer_of(const Graph& g, ValueId v) {
  if (v == kNoValue) return nullptr;
  const int32_t p = g.value(v).producer;
  return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
}

int32_t producer_index(const Graph& g, ValueId v) { return v == kNoValue ? -1 : g.value(v).producer; }

// The tensor behind a constant: an initializer or a Constant node, through Identity and Cast.
const Tensor* constant_tensor(const Graph& g, ValueId v) {
  for (int hops = 0; v != kNoValue && hops < 4; ++hops) {
    const Value& val = g.value(v);
    if (val.initial) return val.initial.get();
    const Node* p = producer_of(g, v);
    if (!p) return nullptr;
    if (p->op_type == "Constant") {
      const Attribute* a = p->attr("value");
      return a && a->t ? a->t.get() : nullptr;
    }
    if ((p->op_type != "Identity" && p->op_type != "Cast") || !p->has_input(0)) return nullptr;
    v = p->inputs[0];
  }
  return nullptr;
}

std::optional<double> scalar_constant(const Graph& g, ValueId v) {
  const Tensor* t = constant_tensor(g, v);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->get_as_double(0);
}

bool is_scalar(const Graph& g, ValueId v, double want) {
  auto c = scalar_constant(g, v);
  return c && *c == want;
}

std::optional<int> rank_of(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (!val.shape) return std::nullopt;
  return static_cast<int>(val.shape->size());
}

// A reduction's axes, from its attribute or (ReduceSum from opset 13, the others from 18) its second input;
// nullopt when they are not constant. Empty: every axis.
std::optional<std::vector<int64_t>> reduce_axes(const Graph& g, const Node& n) {
  if (n.has_input(1)) {
    const Tensor* t = constant_tensor(g, n.inputs[1]);
    if (!t) return std::nullopt;
    return t->to_int_vector();
  }
  return n.attr_ints("axes");
}

// Unsqueeze's axes: an attribute before opset 13, a constant input since.
std::optional<std::vector<int64_t>> unsqueeze_axes(const Graph& g, const Node& u) {
  if (!u.has_input(1)) return u.attr_ints("axes");
  const Tensor* t = constant_tensor(g, u.inputs[1]);
  if (!t) return std::nullopt;
  return t->to_int_vector();
}

bool is_float_type(DType t) { return t == DType::Undefined || is_float(t); }

enum class Pass { Stop, Replay, Drop };

// How an op between two ops of one expression is treated: selections, reshapes and float casts commute with an
// element-wise function (replayed after the stable form); Abs and Relu are identities on the non-negative values
// every recognised form computes (dropped).
Pass pass_of(const Graph& g, const Node& n) {
  static const std::set<std::string> kMoves = {"Identity", "Unsqueeze", "Squeeze",        "Reshape",
                                               "Flatten",  "Transpose", "Expand",         "Tile",
                                               "Slice",    "Gather",    "GatherElements", "GatherND"};
  if (!n.has_input(0) || n.outputs.empty()) return Pass::Stop;
  if (kMoves.count(n.op_type)) return Pass::Replay;
  if (n.op_type == "Cast")
    return is_float(static_cast<DType>(n.attr_int("to", 0))) && is_float_type(g.value(n.inputs[0]).dtype) ? Pass::Replay
                                                                                                          : Pass::Stop;
  if (n.op_type == "Abs" || n.op_type == "Relu") return Pass::Drop;
  return Pass::Stop;
}

struct Upstream {
  ValueId value = kNoValue;     // the first value not passed through
  std::vector<int32_t> replay;  // passed nodes to apply again, source side first
  std::vector<int32_t> passed;  // every passed node
};

// From `v` up through the ops `pass_of` lets through; `allowed` restricts which (empty: all).
Upstream walk_up(const Graph& g, ValueId v, const std::set<std::string>& allowed = {}) {
  Upstream u;
  for (;;) {
    const int32_t p = producer_index(g, v);
    if (p < 0) break;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    const Pass pass = pass_of(g, n);
    if (pass == Pass::Stop || (!allowed.empty() && !allowed.count(n.op_type))) break;
    u.passed.push_back(p);
    if (pass == Pass::Replay) u.replay.push_back(p);
    v = n.inputs[0];
  }
  u.value = v;
  std::reverse(u.replay.begin(), u.replay.end());
  std::reverse(u.passed.begin(), u.passed.end());
  return u;
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// exp(x) / Σexp(x) over one axis, broadcast back by keepdims or an Unsqueeze of that axis, then Expand/Tile.
struct SoftmaxDiv {
  ValueId x = kNoValue;
  int64_t axis = -1;
  bool clipped_numerator = false;
  std::vector<int32_t> matched;
};

std::optional<SoftmaxDiv> match_softmax_div(const Graph& g, int32_t div) {
  const Node& d = g.nodes[static_cast<size_t>(div)];
  if (d.op_type != "Div" || !d.has_input(0) || !d.has_input(1)) return std::nullopt;
  const Upstream num = walk_up(g, d.inputs[0], {"Identity"});
  const int32_t e1 = producer_index(g, num.value);
  if (e1 < 0 || g.nodes[static_cast<size_t>(e1)].op_type != "Exp") return std::nullopt;
  const ValueId x = g.nodes[static_cast<size_t>(e1)].inputs[0];
  const Upstream den = walk_up(g, d.inputs[1], {"Identity", "Expand", "Tile", "Unsqueeze"});
  const int32_t s = producer_index(g, den.value);
  if (s < 0) return std::nullopt;
  const Node& sum = g.nodes[static_cast<size_t>(s)];
  if (sum.op_type != "ReduceSum" || !sum.has_input(0)) return std::nullopt;
  const Upstream inner = walk_up(g, sum.inputs[0], {"Identity"});
  const int32_t e2 = producer_index(g, inner.value);
  if (e2 < 0 || g.nodes[static_cast<size_t>(e2)].op_type != "Exp") return std::nullopt;
  // The numerator may clip what the sum does not (exp(clamp(x, −87, 87)) / Σexp(x), a half-done guard): where the
  // clip acts, that quotient is no softmax of x at all.
  std::vector<int32_t> clips;
  const ValueId x2 = g.nodes[static_cast<size_t>(e2)].inputs[0];
  ValueId at = x;
  while (at != x2) {
    const int32_t c = producer_index(g, at);
    if (c < 0) return std::nullopt;
    const Node& clip = g.nodes[static_cast<size_t>(c)];
    const bool bounded_by_constants =
        (clip.op_type == "Clip" || clip.op_type == "Min" || clip.op_type == "Max") && clip.has_input(0) &&
        std::all_of(clip.inputs.begin() + 1, clip.inputs.end(),
                    [&](ValueId v) { return v == kNoValue || constant_tensor(g, v) != nullptr; });
    if (!bounded_by_constants || clips.size() > 3) return std::nullopt;
    clips.push_back(c);
    at = clip.inputs[0];
  }
  auto axes = reduce_axes(g, sum);
  if (!axes || axes->size() != 1) return std::nullopt;
  const int64_t axis = (*axes)[0];
  const auto rank = rank_of(g, x2);
  auto normalized = [&](int64_t a) { return a < 0 && rank ? a + *rank : a; };
  // The sum must come back on the axis it removed, or never have removed it.
  int unsqueezes = 0;
  for (int32_t n : den.passed) {
    const Node& u = g.nodes[static_cast<size_t>(n)];
    if (u.op_type != "Unsqueeze") continue;
    ++unsqueezes;
    const std::optional<std::vector<int64_t>> ua = unsqueeze_axes(g, u);
    if (!ua || ua->size() != 1 || normalized((*ua)[0]) != normalized(axis)) return std::nullopt;
  }
  const bool keepdims = sum.attr_int("keepdims", 1) != 0;
  if ((keepdims && unsqueezes != 0) || (!keepdims && unsqueezes != 1)) return std::nullopt;
  // Before opset 13 Softmax normalises over every axis from `axis` on: the same only for the last axis.
  if (d.opset > 0 && d.opset < 13 && !(rank && normalized(axis) == *rank - 1)) return std::nullopt;
  SoftmaxDiv m;
  m.x = x2;
  m.axis = axis;
  m.clipped_numerator = !clips.empty();
  m.matched = {e1, s, div};
  append(m.matched, clips);
  if (e2 != e1) m.matched.push_back(e2);
  append(m.matched, num.passed);
  append(m.matched, den.passed);
  append(m.matched, inner.passed);
  return m;
}

int64_t softmax_axis(const Node& n) { return n.attr_int("axis", n.opset > 0 && n.opset < 13 ? 1 : -1); }

// Whether a log-probability feeds a loss against labels: a product, an NLL loss or a gather of the target's entry.
bool feeds_cross_entropy(const Graph& g, ValueId logp) {
  std::vector<ValueId> todo{logp};
  for (int hops = 0; hops < 6 && !todo.empty(); ++hops) {
    std::vector<ValueId> next;
    for (ValueId v : todo)
      for (int32_t c : g.value(v).consumers) {
        const Node& n = g.nodes[static_cast<size_t>(c)];
        if (n.op_type == "Mul" || n.op_type == "NegativeLogLikelihoodLoss" || n.op_type == "GatherElements" ||
            (n.op_type == "Gather" && n.inputs[0] == v))
          return true;
        if (n.op_type == "Neg" || pass_of(g, n) == Pass::Replay)
          for (ValueId o : n.outputs)
            if (o != kNoValue) next.push_back(o);
      }
    todo = std::move(next);
  }
  return false;
}

RepairMatch base_match(RepairKind kind, std::string pattern, int32_t node, ValueId source, ValueId replaced) {
  RepairMatch m;
  m.kind = kind;
  m.pattern = std::move(pattern);
  m.hazard_node = node;
  m.source = source;
  m.replaced = replaced;
  m.matched = {node};
  return m;
}

// The stable forms of log(v): the first fitting one, or nothing.
std::optional<RepairMatch> stable_log(const Graph& g, int32_t log_node) {
  const Node& lg = g.nodes[static_cast<size_t>(log_node)];
  const ValueId out = lg.outputs[0];
  const Upstream up = walk_up(g, lg.inputs[0]);
  const int32_t p = producer_index(g, up.value);
  if (p < 0) return std::nullopt;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  auto finish = [&](RepairMatch m) {
    m.chain = up.replay;
    m.matched.push_back(p);
    append(m.matched, up.passed);
    return m;
  };
  if (n.op_type == "Softmax") {
    const bool ce = feeds_cross_entropy(g, out);
    const char* pattern = ce ? "softmax cross-entropy −Σ y·log(softmax(z))" : "log(softmax(x))";
    RepairMatch m = base_match(ce ? RepairKind::SoftmaxCrossEntropy : RepairKind::LogSoftmax, pattern, log_node,
                               n.inputs[0], out);
    m.axis = softmax_axis(n);
    return finish(std::move(m));
  }
  if (n.op_type == "Sigmoid")
    return finish(base_match(RepairKind::LogSigmoid, "log(sigmoid(x))", log_node, n.inputs[0], out));
  if (n.op_type == "Sub" && n.has_input(1) && is_scalar(g, n.inputs[0], 1.0)) {
    const Upstream q = walk_up(g, n.inputs[1]);
    const int32_t s = producer_index(g, q.value);
    if (s >= 0 && g.nodes[static_cast<size_t>(s)].op_type == "Sigmoid") {
      RepairMatch m = base_match(RepairKind::LogOneMinusSigmoid, "log(1 − sigmoid(x))", log_node,
                                 g.nodes[static_cast<size_t>(s)].inputs[0], out);
      m.pre_chain = q.replay;
      m.matched.push_back(s);
      append(m.matched, q.passed);
      return finish(std::move(m));
    }
    return std::nullopt;
  }
  if (n.op_type == "Add" && n.has_input(1)) {
    for (int k = 0; k < 2; ++k) {
      if (!is_scalar(g, n.inputs[static_cast<size_t>(k)], 1.0)) continue;
      const Upstream e = walk_up(g, n.inputs[static_cast<size_t>(1 - k)]);
      const int32_t ex = producer_index(g, e.value);
      if (ex < 0 || g.nodes[static_cast<size_t>(ex)].op_type != "Exp") continue;
      RepairMatch m = base_match(RepairKind::Softplus, "log(1 + exp(x))", log_node,
                                 g.nodes[static_cast<size_t>(ex)].inputs[0], out);
      m.pre_chain = e.replay;
      m.matched.push_back(ex);
      append(m.matched, e.passed);
      return finish(std::move(m));
    }
    return std::nullopt;
  }
  if (n.op_type == "ReduceSum" && n.has_input(0)) {
    const Upstream e = walk_up(g, n.inputs[0]);
    const int32_t ex = producer_index(g, e.value);
    auto axes = reduce_axes(g, n);
    if (ex < 0 || g.nodes[static_cast<size_t>(ex)].op_type != "Exp" || !axes) return std::nullopt;
    if (n.has_input(1) && axes->empty() && n.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    RepairMatch m =
        base_match(RepairKind::LogSumExp, "log(Σexp(x))", log_node, g.nodes[static_cast<size_t>(ex)].inputs[0], out);
    m.axes = *axes;
    m.keepdims = n.attr_int("keepdims", 1) != 0;
    m.pre_chain = e.replay;
    m.matched.push_back(ex);
    append(m.matched, e.passed);
    return finish(std::move(m));
  }
  if (n.op_type == "Div") {
    auto sd = match_softmax_div(g, p);
    if (!sd) return std::nullopt;
    if (sd->clipped_numerator) return std::nullopt;
    RepairMatch m = base_match(RepairKind::LogSumExpForm, "log(exp(x) / Σexp(x))", log_node, sd->x, out);
    m.axes = {sd->axis};
    append(m.matched, sd->matched);
    m.chain = up.replay;
    append(m.matched, up.passed);
    return m;
  }
  return std::nullopt;
}

std::optional<RepairMatch> stable_softmax(const Graph& g, int32_t div) {
  auto sd = match_softmax_div(g, div);
  if (!sd) return std::nullopt;
  RepairMatch m =
      base_match(RepairKind::StableSoftmax,
                 sd->clipped_numerator ? "exp(clip(x)) / Σexp(x) (the numerator's clip is dropped: where it "
                                         "acted, the quotient was no softmax)"
                                       : "exp(x) / Σexp(x)",
                 div, sd->x, g.nodes[static_cast<size_t>(div)].outputs[0]);
  m.axis = sd->axis;
  append(m.matched, sd->matched);
  return m;
}

std::optional<RepairMatch> sqrt_of_exp(const Graph& g, int32_t sqrt_node) {
  const Node& s = g.nodes[static_cast<size_t>(sqrt_node)];
  const Upstream up = walk_up(g, s.inputs[0]);
  const int32_t e = producer_index(g, up.value);
  if (e < 0 || g.nodes[static_cast<size_t>(e)].op_type != "Exp") return std::nullopt;
  RepairMatch m = base_match(RepairKind::SqrtOfExp, "sqrt(exp(x))", sqrt_node,
                             g.nodes[static_cast<size_t>(e)].inputs[0], s.outputs[0]);
  m.chain = up.replay;
  m.matched.push_back(e);
  append(m.matched, up.passed);
  return m;
}

// x / ‖x‖: ReduceL2(x), sqrt(ReduceSumSquare(x)) or sqrt(Σ x·x), broadcast back, dividing x itself.
std::optional<RepairMatch> norm_division(const Graph& g, int32_t div) {
  const Node& d = g.nodes[static_cast<size_t>(div)];
  if (d.op_type != "Div" || !d.has_input(0) || !d.has_input(1)) return std::nullopt;
  const ValueId x = walk_up(g, d.inputs[0], {"Identity"}).value;
  const Upstream den = walk_up(g, d.inputs[1], {"Identity", "Expand", "Tile", "Unsqueeze", "Cast"});
  const int32_t n = producer_index(g, den.value);
  if (n < 0) return std::nullopt;
  const Node& norm = g.nodes[static_cast<size_t>(n)];
  std::vector<int32_t> matched{div, n};
  bool is_norm = false;
  if (norm.op_type == "ReduceL2") {
    is_norm = norm.inputs[0] == x;
  } else if (norm.op_type == "Sqrt") {
    const int32_t r = producer_index(g, norm.inputs[0]);
    if (r >= 0) {
      const Node& red = g.nodes[static_cast<size_t>(r)];
      matched.push_back(r);
      if (red.op_type == "ReduceSumSquare") is_norm = red.inputs[0] == x;
      if (red.op_type == "ReduceSum") {
        const int32_t sq = producer_index(g, red.inputs[0]);
        if (sq >= 0) {
          const Node& q = g.nodes[static_cast<size_t>(sq)];
          matched.push_back(sq);
          is_norm = (q.op_type == "Mul" && q.inputs[0] == x && q.has_input(1) && q.inputs[1] == x) ||
                    (q.op_type == "Pow" && q.inputs[0] == x && q.has_input(1) && is_scalar(g, q.inputs[1], 2.0));
        }
      }
    }
  }
  if (!is_norm) return std::nullopt;
  RepairMatch m = base_match(RepairKind::NormGuard, "x / ‖x‖", div, d.inputs[1], d.outputs[0]);
  m.numerator = d.inputs[0];
  m.matched = matched;
  append(m.matched, den.passed);
  return m;
}

// The matches of the downstream forms that consume Exp node `e` (log(1 + exp), log Σ exp, exp / Σ exp,
// sqrt(exp)), so an exp overflow gets the stable form its expression has.
std::vector<RepairMatch> forms_around_exp(const Graph& g, int32_t e) {
  std::vector<RepairMatch> out;
  for (int32_t n = 0; n < static_cast<int32_t>(g.nodes.size()); ++n) {
    const std::string& op = g.nodes[static_cast<size_t>(n)].op_type;
    std::optional<RepairMatch> m;
    if (op == "Log") m = stable_log(g, n);
    if (op == "Div") m = stable_softmax(g, n);
    if (op == "Sqrt") m = sqrt_of_exp(g, n);
    if (!m || std::find(m->matched.begin(), m->matched.end(), e) == m->matched.end()) continue;
    if (m->kind == RepairKind::LogSumExpForm) continue;  // its exp(x)/Σexp(x) is matched as the Div's form
    m->hazard_node = e;
    out.push_back(std::move(*m));
  }
  return out;
}

std::optional<double> constant_exponent(const Graph& g, const Node& pow) {
  return pow.has_input(1) ? scalar_constant(g, pow.inputs[1]) : std::nullopt;
}

// A float value, read by one node only (so moving its producer into float32 changes no other reader).
bool sole_float_reader(const Graph& g, ValueId v) {
  return v != kNoValue && is_float_type(g.value(v).dtype) && g.value(v).consumers.size() == 1 &&
         std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end();
}

bool overflows(Failure f) {
  return f == Failure::HalfOverflow || f == Failure::ExpOverflow || f == Failure::PowOverflow;
}

RepairMatch keep_float32(const Graph& g, int32_t node, Failure failure, int operand) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  RepairMatch m = base_match(RepairKind::KeepFloat32, n.op_type + " in float32", node,
                             n.inputs[static_cast<size_t>(operand)], n.outputs[0]);
  m.keep_upstream = !overflows(failure);
  return m;
}

// v + ε with a constant ε the format flushes or leaves subnormal (below 1e-5): the operand of a divisor, log or sqrt.
std::optional<RepairMatch> half_epsilon(const Graph& g, int32_t node, ValueId operand, DType format) {
  if (format != DType::Float16) return std::nullopt;
  const Upstream up = walk_up(g, operand, {"Identity"});
  const int32_t a = producer_index(g, up.value);
  if (a < 0 || g.nodes[static_cast<size_t>(a)].op_type != "Add") return std::nullopt;
  const Node& add = g.nodes[static_cast<size_t>(a)];
  for (int k = 0; k < 2 && add.has_input(1); ++k) {
    auto c = scalar_constant(g, add.inputs[static_cast<size_t>(k)]);
    if (!c || !(*c > 0 && *c < 1e-5)) continue;
    RepairMatch m = base_match(RepairKind::HalfEpsilon, fmt::format("v + {:g}", *c), node,
                               add.inputs[static_cast<size_t>(1 - k)], add.outputs[0]);
    m.matched.push_back(a);
    append(m.matched, up.passed);
    return m;
  }
  return std::nullopt;
}

}  // namespace

std::vector<int32_t> keep_float32_region(const Graph& g, const RepairMatch& m, int size) {
  std::vector<int32_t> region{m.hazard_node};
  while (static_cast<int>(region.size()) < size) {
    if (m.keep_upstream) {
      const Node& first = g.nodes[static_cast<size_t>(region.front())];
      // The first input computed by the model (not a constant) on the operand's side.
      ValueId in = region.size() == 1 ? m.source : kNoValue;
      for (size_t i = 0; in == kNoValue && i < first.inputs.size(); ++i)
        if (first.inputs[i] != kNoValue && !constant_tensor(g, first.inputs[i])) in = first.inputs[i];
      const int32_t p = producer_index(g, in);
      if (p < 0 || !sole_float_reader(g, in) || g.nodes[static_cast<size_t>(p)].outputs.size() != 1) break;
      region.insert(region.begin(), p);
    } else {
      const Node& last = g.nodes[static_cast<size_t>(region.back())];
      const ValueId out = last.outputs.empty() ? kNoValue : last.outputs[0];
      if (!sole_float_reader(g, out)) break;
      const int32_t c = g.value(out).consumers[0];
      if (g.nodes[static_cast<size_t>(c)].outputs.empty()) break;
      region.push_back(c);
    }
  }
  return region;
}

std::vector<RepairMatch> repair_candidates(const Graph& g, int32_t node, Failure failure, int operand,
                                           DType format) {
  std::vector<RepairMatch> out;
  if (node < 0 || node >= static_cast<int32_t>(g.nodes.size())) return out;
  const Node& n = g.nodes[static_cast<size_t>(node)];
  if (!n.has_input(static_cast<size_t>(operand)) || n.outputs.empty() || n.outputs[0] == kNoValue) return out;
  const ValueId v = n.inputs[static_cast<size_t>(operand)];
  const ValueId y = n.outputs[0];
  switch (failure) {
    case Failure::LogOfNonPositive: {
      if (n.op_type != "Log") break;
      if (auto m = stable_log(g, node)) out.push_back(std::move(*m));
      const Node* p = producer_of(g, v);
      const bool one_minus = p && p->op_type == "Sub" && p->has_input(0) && is_scalar(g, p->inputs[0], 1.0);
      out.push_back(base_match(RepairKind::LogClamp, one_minus ? "log(1 − v)" : "log(x)", node, v, y));
      break;
    }
    case Failure::SqrtOfNegative:
      if (n.op_type != "Sqrt") break;
      if (auto m = sqrt_of_exp(g, node)) out.push_back(std::move(*m));
      out.push_back(base_match(RepairKind::SqrtClamp, "sqrt(x)", node, v, y));
      break;
    case Failure::ExpOverflow:
      if (n.op_type != "Exp") break;
      out = forms_around_exp(g, node);
      if (format != DType::Undefined) out.push_back(keep_float32(g, node, failure, operand));
      out.push_back(base_match(RepairKind::ExpClamp, "exp(x)", node, v, y));
      break;
    case Failure::DivisionByZero: {
      if (n.op_type == "Div") {
        if (auto m = stable_softmax(g, node)) out.push_back(std::move(*m));
        if (auto m = norm_division(g, node)) out.push_back(std::move(*m));
      }
      if (n.op_type != "Div" && n.op_type != "Reciprocal") break;
      RepairMatch m = base_match(RepairKind::DivisorGuard, n.op_type == "Div" ? "a / d" : "1 / d", node, v, y);
      if (n.op_type == "Div") m.numerator = n.inputs[0];
      out.push_back(std::move(m));
      break;
    }
    case Failure::PowZeroToNegative:
    case Failure::PowNegativeToFraction: {
      if (n.op_type != "Pow") break;
      RepairMatch m = base_match(RepairKind::PowBaseGuard, "pow(x, e)", node, v, y);
      m.exponent = constant_exponent(g, n);
      out.push_back(std::move(m));
      break;
    }
    case Failure::PowOverflow: {
      if (n.op_type != "Pow") break;
      auto e = constant_exponent(g, n);
      if (!e || !(*e > 1)) break;  // a bound on the base needs a known exponent
      RepairMatch m = base_match(RepairKind::PowBaseBound, "pow(x, e)", node, v, y);
      m.exponent = e;
      out.push_back(std::move(m));
      break;
    }
    case Failure::LogSoftmaxSpread: {
      if (n.op_type != "LogSoftmax") break;
      RepairMatch m = base_match(RepairKind::LogitsClamp, "log_softmax(x)", node, v, y);
      m.axis = softmax_axis(n);
      out.push_back(std::move(m));
      break;
    }
    case Failure::HalfOverflow: {
      // A sum of exps overflowing is the softmax's or logsumexp's: their stable forms first.
      const int32_t e = n.op_type == "Exp" ? node : producer_index(g, walk_up(g, v, {"Identity"}).value);
      if (e >= 0 && g.nodes[static_cast<size_t>(e)].op_type == "Exp")
        for (RepairMatch& m : forms_around_exp(g, e)) out.push_back(std::move(m));
      out.push_back(keep_float32(g, node, failure, operand));
      break;
    }
    case Failure::HalfUnderflow:
      out.push_back(keep_float32(g, node, failure, operand));
      if (auto m = half_epsilon(g, node, v, format)) out.push_back(std::move(*m));
      break;
    case Failure::LossZeroDenominator:
    case Failure::RangeZeroDelta:
      break;
  }
  // Under a 16-bit format, the divisor, log and sqrt operands the format flushes: float32 there, or a larger ε.
  const bool underflow = failure == Failure::DivisionByZero || failure == Failure::LogOfNonPositive ||
                         failure == Failure::SqrtOfNegative;
  if (format != DType::Undefined && underflow && !out.empty()) {
    // Before the guard on the op's own operand (the last candidate), after the stable forms.
    std::vector<RepairMatch> half{keep_float32(g, node, failure, operand)};
    if (auto m = half_epsilon(g, node, v, format)) half.push_back(std::move(*m));
    out.insert(out.end() - 1, half.begin(), half.end());
  }
  return out;
}

std::string fix_hint_for(const Graph& g, int32_t node, Failure failure, int operand) {
  auto c = repair_candidates(g, node, failure, operand);
  if (!c.empty()) return repair_hint(c.front().kind);
  if (failure == Failure::RangeZeroDelta) return repair_hint(RepairKind::RangeDelta);
  return repair_hint(RepairKind::LossWeights);
}

}  // namespace grist
