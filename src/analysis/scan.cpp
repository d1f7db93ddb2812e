#include "analysis/scan.h"

#include <chrono>

#include <algorithm>

#include "analysis/half_hazards.h"
#include "analysis/trained_weights.h"
#include "analysis/training_bounds.h"

namespace grist {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ProvedSafe: return "proved safe";
    case Verdict::MayFail: return "may fail";
    case Verdict::PropagatedOnly: return "propagated only";
  }
  return "?";
}

std::string_view scope_name(Scope s) {
  switch (s) {
    case Scope::EveryRun: return "every run";
    case Scope::StatedWeights: return "stated weight ranges";
    case Scope::Steps: return "first N steps";
    case Scope::InitialWeights: return "initial weights";
  }
  return "?";
}

int ScanReport::count(Verdict v) const {
  int n = 0;
  for (const auto& h : verdicts) n += h.verdict == v;
  return n;
}

int ScanReport::count(Verdict v, Scope s) const {
  int n = 0;
  for (const auto& h : verdicts) n += h.verdict == v && h.scope == s;
  return n;
}

namespace {

// Whether the operand's interval meets its failure kind's danger zone (ops/hazard.cpp).
bool meets_danger(const HazardSite& s, const Node& node, const std::vector<IntervalTensor>& values,
                  std::string& danger, DType format) {
  const FailureKind& kind = failure_kind(s.failure);
  danger = danger_in_format(s.failure, format);
  auto intervals = [&](const std::vector<ValueId>& ids) {
    std::vector<const IntervalTensor*> v(ids.size(), nullptr);
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] != kNoValue) v[i] = &values[static_cast<size_t>(ids[i])];
    return v;
  };
  const std::vector<const IntervalTensor*> in = intervals(node.inputs), out = intervals(node.outputs);
  const IntervalTensor& operand = values[static_cast<size_t>(s.operand_value)];
  return operand.may_be_nan || kind.meets_danger(DangerContext{node, operand, in, out, format});
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

// Whether the site's operand meets its danger zone in `values`, or its bounded inputs give an open output.
bool may_fail_in(const HazardSite& s, const Node& node, const std::vector<IntervalTensor>& values,
                 std::string& danger, DType format) {
  if (meets_danger(s, node, values, danger, format)) return true;
  // A finite operand can still overflow the op (a tiny divisor): an open output from bounded inputs.
  if (inputs_bounded(node, values) && !float_outputs_bounded(node, values)) {
    danger += " (or the result overflows)";
    return true;
  }
  return false;
}

// The format whose danger zones a site meets: its value's (analysis/half_hazards.h, value_formats) — the run's
// where the op computes in it (under amp-*, an op autocast keeps in float32 meets float32's: exp overflows past
// 88.7 there, not 11.09), the stored one where the model holds the value in float16/bfloat16. A half-precision
// site exists only where a format rounds: its operand (HalfUnderflow) or result (HalfOverflow) is in one.
DType danger_format(const Graph& g, const HazardSite& s, const std::vector<DType>& formats) {
  if (s.failure == Failure::HalfUnderflow || s.failure == Failure::HalfOverflow)
    return formats[static_cast<size_t>(s.operand_value)];
  for (ValueId out : g.nodes[static_cast<size_t>(s.node)].outputs)
    if (out != kNoValue && formats[static_cast<size_t>(out)] != DType::Undefined)
      return formats[static_cast<size_t>(out)];
  return DType::Undefined;
}

bool any_format(const std::vector<DType>& formats) {
  return std::any_of(formats.begin(), formats.end(), [](DType f) { return f != DType::Undefined; });
}

IntervalOptions interval_options(const Graph& g, const ScanOptions& o, TrainedWeights trained, int64_t steps) {
  IntervalOptions io;
  io.format = precision_format(o.precision);
  if (io.format != DType::Undefined) io.in_format = values_in_format(g, o.precision);
  io.autocast = is_autocast(o.precision);
  io.manifest = o.manifest;
  io.batch = o.batch;
  io.given = o.given;
  io.assumed = o.assumed;
  io.trained = trained;
  io.steps = steps;
  return io;
}

// For each verdict in `pending` (safe at the initial weights), the most training steps its proof holds for:
// analyses at N = 1, 4, 16, ... steps of the optimizer's bound until each has failed once (or N reaches the
// cap), then bisection between the last safe N and the first unsafe one. Inclusion-isotonic intervals make
// a proof at N one for every smaller N.
Status find_safe_steps(const Graph& g, const ScanOptions& o, std::vector<HazardVerdict*>& pending) {
  std::vector<int64_t> safe(pending.size(), 0), unsafe(pending.size(), 0);
  const std::vector<DType> formats = value_formats(g, o.precision);
  auto probe = [&](int64_t n, const std::vector<size_t>& which) -> Status {
    auto a = analyze_intervals(g, interval_options(g, o, TrainedWeights::Steps, n));
    if (!a) return a.error();
    for (size_t k : which) {
      std::string danger;
      const HazardSite& s = pending[k]->site;
      if (may_fail_in(s, g.nodes[static_cast<size_t>(s.node)], a->values, danger,
                      danger_format(g, s, formats))) {
        if (unsafe[k] == 0 || n < unsafe[k]) unsafe[k] = n;
      } else {
        safe[k] = std::max(safe[k], n);
      }
    }
    return Status::ok();
  };
  std::vector<size_t> all(pending.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  for (int64_t n = 1; n <= o.max_steps; n *= 4) {
    std::vector<size_t> open;
    for (size_t k : all)
      if (unsafe[k] == 0) open.push_back(k);
    if (open.empty()) break;
    GRIST_TRY(probe(n, open));
  }
  // Bisection, shared by the verdicts with the same bracket; at most 10 halvings (a bracket's 1/1024).
  for (int round = 0; round < 10; ++round) {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> brackets;
    for (size_t k : all)
      if (unsafe[k] > safe[k] + 1) brackets[{safe[k], unsafe[k]}].push_back(k);
    if (brackets.empty()) break;
    for (const auto& [range, which] : brackets) GRIST_TRY(probe(range.first + (range.second - range.first) / 2, which));
  }
  for (size_t k = 0; k < pending.size(); ++k) {
    HazardVerdict& v = *pending[k];
    if (safe[k] == 0) continue;  // one step may already break it
    v.verdict = Verdict::ProvedSafe;
    v.scope = Scope::Steps;
    v.safe_steps = safe[k];
    v.steps_capped = unsafe[k] == 0;
  }
  return Status::ok();
}

}  // namespace

Result<ScanReport> scan(const Graph& g, const ScanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // The proof for every run: the weights the program trains may take any value, unless the user says.
  const std::vector<DType> formats = value_formats(g, options.precision);
  const TrainedWeights every_run = options.ranum_weights ? TrainedWeights::RanumDefault : TrainedWeights::Unbounded;
  auto analysis = analyze_intervals(g, interval_options(g, options, every_run, 0));
  if (!analysis) return analysis.error();
  const std::vector<IntervalTensor>& values = analysis->values;

  ScanReport report;
  report.precision = options.precision;
  if (precision_format(options.precision) == DType::Undefined)
    for (DType f : formats)
      if (f != DType::Undefined) {
        report.stored_format = f;
        break;
      }
  report.assumptions = std::move(analysis->assumptions);
  report.unbounded_nodes = std::move(analysis->unbounded_nodes);
  std::vector<HazardSite> sites = find_hazards_in(g, options.precision);
  const std::vector<bool> by_trained = reached_from(g, analysis->trained);
  const std::vector<bool> by_stated = reached_from(g, analysis->stated);
  for (bool t : analysis->trained) report.trained_weights += t;
  if (report.trained_weights > 0) {
    const Manifest* m = options.manifest;
    report.training = m ? fmt::format("{} weights trained by {}; {}", report.trained_weights,
                                      optimizer_kind_name(m->train.optimizer.kind), step_bound_rule(m->train.optimizer))
                        : fmt::format("no manifest: {} weights taken to train, optimizer unknown (no step bound)",
                                      report.trained_weights);
  }

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
      const bool meets = may_fail_in(v.site, node, values, v.danger, danger_format(g, v.site, formats));
      v.trained_operand = by_trained[static_cast<size_t>(v.site.operand_value)];
      const std::vector<int>& from = taint[static_cast<size_t>(v.site.operand_value)];
      if (!meets) {
        v.verdict = Verdict::ProvedSafe;
        v.scope = by_stated[static_cast<size_t>(v.site.operand_value)] ? Scope::StatedWeights : Scope::EveryRun;
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

  // Not proved for every run: where the weights' training is what opens the operand, say how far a proof
  // holds — at the initial weights, and for how many steps of the optimizer.
  std::vector<HazardVerdict*> open;
  for (HazardVerdict& v : report.verdicts) {
    v.fails_initially = v.verdict != Verdict::ProvedSafe && !v.trained_operand;
    if (v.verdict != Verdict::ProvedSafe && v.trained_operand) open.push_back(&v);
  }
  if (options.initial_weights && !open.empty()) {
    auto initial = analyze_intervals(g, interval_options(g, options, TrainedWeights::Initial, 0));
    if (!initial) return initial.error();
    std::vector<HazardVerdict*> safe_initially;
    for (HazardVerdict* v : open) {
      std::string danger;
      v->fails_initially =
          may_fail_in(v->site, g.nodes[static_cast<size_t>(v->site.node)], initial->values, danger,
                      danger_format(g, v->site, formats));
      if (!v->fails_initially) safe_initially.push_back(v);
    }
    // A propagated-only verdict whose upstream hazards all hold at the initial weights while it does not is
    // a producer of its own there.
    auto fails_initially = [&](int id) {
      for (const HazardVerdict& u : report.verdicts)
        if (u.site.id == id) return u.fails_initially;
      return true;
    };
    for (HazardVerdict* v : open) {
      if (v->verdict != Verdict::PropagatedOnly || !v->fails_initially) continue;
      if (std::none_of(v->upstream.begin(), v->upstream.end(), fails_initially)) {
        v->verdict = Verdict::MayFail;
        v->upstream.clear();
      }
    }
    const Manifest* m = options.manifest;
    if (options.step_bounds && m && !safe_initially.empty() && max_weight_move(m->train.optimizer, 1))
      GRIST_TRY(find_safe_steps(g, options, safe_initially));
  }
  // The same conditions in float32 (no rounding, float32's danger zones): what the format alone can break.
  if (any_format(formats)) {
    ScanOptions f32 = options;
    f32.precision = Precision::Fp32;
    IntervalOptions plain_options = interval_options(g, f32, every_run, 0);
    plain_options.round_stored = false;  // a float16-stored model's values as float32 would hold them
    auto plain = analyze_intervals(g, plain_options);
    if (!plain) return plain.error();
    for (HazardVerdict& v : report.verdicts) {
      std::string danger;
      v.safe_in_float32 =
          !may_fail_in(v.site, g.nodes[static_cast<size_t>(v.site.node)], plain->values, danger, DType::Undefined);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace grist
