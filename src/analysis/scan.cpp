#include "analysis/scan.h"

#include <cfloat>
#include <cmath>
#include <chrono>

namespace grist {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ProvedSafe: return "proved safe";
    case Verdict::MayFail: return "may fail";
    case Verdict::PropagatedOnly: return "propagated only";
  }
  return "?";
}

int ScanReport::count(Verdict v) const {
  int n = 0;
  for (const auto& h : verdicts) n += h.verdict == v;
  return n;
}

namespace {

// The danger zones of DEBAR and RANUM (PEERS.md), which grist shares: an operand this close to the pole
// fails in the forward pass or in its derivative (sqrt′(0) = ∞, log′(v) = 1/v, a quotient by a denormal),
// and exp this close to its limit overflows as soon as a few such terms are summed.
constexpr double kTiny = 1e-37;
constexpr double kExpDanger = 87.5;  // ≈ ln(1e38); expf overflows above 88.72

bool all_whole(const IntervalTensor& t) {
  if (!t.exact) return t.hull().lo == t.hull().hi && std::floor(t.hull().lo) == t.hull().lo;
  for (int64_t i = 0; i < t.exact->numel(); ++i) {
    double v = t.exact->get_as_double(i);
    if (v != std::floor(v)) return false;
  }
  return true;
}

// Whether the operand's interval meets the failure's danger zone (the float32-exact conditions).
bool meets_danger(const HazardSite& s, const Node& node, const std::vector<IntervalTensor>& values,
                  std::string& danger) {
  const IntervalTensor& v = values[static_cast<size_t>(s.operand_value)];
  const Interval h = v.hull();
  const bool nan = v.may_be_nan;
  switch (s.failure) {
    case Failure::LogOfNonPositive: danger = "≤ 1e-37"; return nan || h.lo <= kTiny;
    case Failure::DivisionByZero: danger = "[-1e-37, 1e-37]"; return nan || (h.lo <= kTiny && h.hi >= -kTiny);
    case Failure::SqrtOfNegative:
      danger = "≤ 1e-37 (< 0, or an infinite derivative at 0)";
      return nan || h.lo <= kTiny;
    case Failure::ExpOverflow: danger = "≥ 87.5"; return nan || h.hi >= kExpDanger;
    case Failure::PowZeroToNegative: {
      danger = "∋ 0 with exponent < 0";
      const IntervalTensor* e = node.has_input(1) ? &values[static_cast<size_t>(node.inputs[1])] : nullptr;
      return nan || (h.contains(0) && (!e || e->may_be_nan || e->hull().lo < 0));
    }
    case Failure::PowNegativeToFraction: {
      danger = "< 0 with a fractional exponent";
      const IntervalTensor* e = node.has_input(1) ? &values[static_cast<size_t>(node.inputs[1])] : nullptr;
      return nan || (h.lo < 0 && (!e || e->may_be_nan || !all_whole(*e)));
    }
    case Failure::PowOverflow: {
      danger = "a power beyond FLT_MAX";
      const ValueId out = node.outputs.empty() ? kNoValue : node.outputs[0];
      if (nan || out == kNoValue) return true;
      const IntervalTensor& y = values[static_cast<size_t>(out)];
      const Interval yh = y.hull();
      return y.may_be_nan || !(std::fabs(yh.lo) <= FLT_MAX && std::fabs(yh.hi) <= FLT_MAX);
    }
    case Failure::LogSoftmaxSpread: danger = "spread > FLT_MAX"; return nan || !(h.hi - h.lo < FLT_MAX);
    case Failure::LossZeroDenominator: {
      danger = "total weight = 0";
      const ValueId out = node.outputs.empty() ? kNoValue : node.outputs[0];
      return nan || out == kNoValue || values[static_cast<size_t>(out)].may_be_nan;
    }
    case Failure::RangeZeroDelta: danger = "∋ 0"; return nan || h.contains(0);
  }
  return true;
}

bool inputs_bounded(const Node& node, const std::vector<IntervalTensor>& values) {
  for (ValueId id : node.inputs)
    if (id != kNoValue && !values[static_cast<size_t>(id)].bounded()) return false;
  return true;
}

bool float_outputs_bounded(const Node& node, const std::vector<IntervalTensor>& values) {
  for (ValueId id : node.outputs) {
    if (id == kNoValue) continue;
    const IntervalTensor& t = values[static_cast<size_t>(id)];
    if ((is_float(t.dtype) || t.dtype == DType::Undefined) && !t.bounded()) return false;
  }
  return true;
}

}  // namespace

Result<ScanReport> scan(const Graph& g, const ScanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  IntervalOptions io;
  io.manifest = options.manifest;
  io.batch = options.batch;
  io.given = options.given;
  io.assumed = options.assumed;
  auto analysis = analyze_intervals(g, io);
  if (!analysis) return analysis.error();
  const std::vector<IntervalTensor>& values = analysis->values;

  ScanReport report;
  report.assumptions = std::move(analysis->assumptions);
  report.unbounded_nodes = std::move(analysis->unbounded_nodes);
  std::vector<HazardSite> sites = find_hazards(g);

  // Taint: which may-fail sites each value's openness can come from, walked in execution order.
  std::vector<std::vector<int>> taint(g.values.size());
  size_t next = 0;
  for (int32_t n = 0; n < static_cast<int32_t>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    std::vector<int> inherited;
    for (ValueId id : node.inputs)
      if (id != kNoValue)
        for (int s : taint[static_cast<size_t>(id)])
          if (std::find(inherited.begin(), inherited.end(), s) == inherited.end()) inherited.push_back(s);
    std::vector<int> produced;
    for (; next < sites.size() && sites[next].node == n; ++next) {
      HazardVerdict v;
      v.site = sites[next];
      const IntervalTensor& operand = values[static_cast<size_t>(v.site.operand_value)];
      v.operand = operand.hull();
      v.operand_may_be_nan = operand.may_be_nan;
      bool meets = meets_danger(v.site, node, values, v.danger);
      // A finite operand can still overflow the op (a tiny divisor): an open output from bounded inputs.
      if (!meets && inputs_bounded(node, values) && !float_outputs_bounded(node, values)) {
        meets = true;
        v.danger += " (or the result overflows)";
      }
      const std::vector<int>& from = taint[static_cast<size_t>(v.site.operand_value)];
      if (!meets) {
        v.verdict = Verdict::ProvedSafe;
      } else if (!from.empty() && !operand.bounded()) {
        v.verdict = Verdict::PropagatedOnly;
        v.upstream = from;
      } else {
        v.verdict = Verdict::MayFail;
        produced.push_back(v.site.id);
      }
      report.verdicts.push_back(std::move(v));
    }
    inherited.insert(inherited.end(), produced.begin(), produced.end());
    for (ValueId id : node.outputs)
      if (id != kNoValue) taint[static_cast<size_t>(id)] = inherited;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace grist
