#include "fix/verify.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "data/dataset.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "analysis/trained_weights.h"
#include "fix/assumptions.h"
#include "fix/float64.h"
#include "analysis/half_hazards.h"
#include "engine/grad_scaler.h"
#include "engine/scaled_step.h"

namespace grist {

std::string_view check_state_name(CheckState s) {
  switch (s) {
    case CheckState::NotRun:
      return "not run";
    case CheckState::Passed:
      return "passed";
    case CheckState::Failed:
      return "FAILED";
    case CheckState::NotApplicable:
      return "n/a";
  }
  return "?";
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// As the scan's own: under a 16-bit precision the intervals are rounded to the format where the run rounds.
IntervalOptions interval_options(const Graph& g, const ScanOptions& o) {
  IntervalOptions io;
  io.format = precision_format(o.precision);
  if (io.format != DType::Undefined) io.in_format = values_in_format(g, o.precision);
  io.autocast = is_autocast(o.precision);
  io.manifest = o.manifest;
  io.batch = o.batch;
  io.given = o.given;
  io.assumed = o.assumed;
  return io;
}

std::string interval_text(Interval i) { return fmt::format("[{:.4g}, {:.4g}]", i.lo, i.hi); }

// Float, or of a type nobody declared (a value a rewrite added): it may be float.
bool is_float_tensor(const IntervalTensor& t) { return is_float(t.dtype) || t.dtype == DType::Undefined; }

// A node that turns bounded float inputs into an unbounded float output: where the scan sees a new NaN/Inf
// producer even though the node has no hazard entry (a sum overflowing).
bool opens_from_bounded(const Node& n, const std::vector<IntervalTensor>& values) {
  bool any_open = false;
  for (ValueId in : n.inputs) {
    if (in == kNoValue) continue;
    const IntervalTensor& t = values[static_cast<size_t>(in)];
    if (is_float_tensor(t) && !t.bounded()) return false;
  }
  for (ValueId out : n.outputs) {
    if (out == kNoValue) continue;
    const IntervalTensor& t = values[static_cast<size_t>(out)];
    any_open |= is_float_tensor(t) && !t.bounded();
  }
  return any_open;
}

// The nodes downstream of the nodes named `prefix`... (them included), by index.
std::vector<int32_t> forward_cone(const Graph& g, const std::string& prefix) {
  std::vector<bool> reached(g.values.size(), false), in_cone(g.nodes.size(), false);
  std::vector<int32_t> cone;
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[static_cast<size_t>(i)];
    bool hit = starts_with(n.name, prefix);
    for (ValueId in : n.inputs) hit |= in != kNoValue && reached[static_cast<size_t>(in)];
    if (!hit) continue;
    cone.push_back(i);
    for (ValueId out : n.outputs)
      if (out != kNoValue) reached[static_cast<size_t>(out)] = true;
  }
  return cone;
}

// `after` with every value the repair's nodes pass to the rest of the model multiplied by 0: an overflow that
// remains there is caused by the model's other operands, not by the repair's values.
Result<Graph> zero_repair_outputs(const Graph& after, const std::string& prefix) {
  Graph g = after;
  std::vector<ValueId> outs;
  for (const Node& n : g.nodes) {
    if (!starts_with(n.name, prefix)) continue;
    for (ValueId out : n.outputs) {
      if (out == kNoValue) continue;
      const DType dt = g.value(out).dtype;
      if (!(is_float(dt) || dt == DType::Undefined)) continue;
      bool read_outside = std::find(g.outputs.begin(), g.outputs.end(), out) != g.outputs.end();
      for (int32_t c : g.value(out).consumers)
        read_outside |= !starts_with(g.nodes[static_cast<size_t>(c)].name, prefix);
      if (read_outside) outs.push_back(out);
    }
  }
  for (ValueId v : outs) {
    const DType dt = g.value(v).dtype == DType::Undefined ? DType::Float32 : g.value(v).dtype;
    Value zero_v, scaled_v;
    zero_v.name = g.value(v).name + "/probe_zero";
    zero_v.dtype = dt;
    scaled_v.name = g.value(v).name + "/probe";
    scaled_v.dtype = dt;
    const std::string zero_name = zero_v.name, scaled_name = scaled_v.name;
    const ValueId zero = g.add_value(std::move(zero_v));
    const ValueId scaled = g.add_value(std::move(scaled_v));
    const std::vector<int32_t> consumers = g.value(v).consumers;
    for (int32_t c : consumers) {
      Node& n = g.nodes[static_cast<size_t>(c)];
      if (starts_with(n.name, prefix)) continue;
      for (ValueId& in : n.inputs)
        if (in == v) in = scaled;
    }
    for (ValueId& out : g.outputs)
      if (out == v) out = scaled;
    Tensor t(dt, Shape{});
    t.fill_zero();
    Attribute a;
    a.type = Attribute::Type::Tensor;
    a.t = std::make_shared<const Tensor>(std::move(t));
    Node k;
    k.name = zero_name;
    k.op_type = "Constant";
    k.outputs = {zero};
    k.attributes = {{"value", a}};
    Node mul;
    mul.name = scaled_name;
    mul.op_type = "Mul";
    mul.inputs = {v, zero};
    mul.outputs = {scaled};
    g.nodes.push_back(std::move(k));
    g.nodes.push_back(std::move(mul));
  }
  GRIST_TRY(g.sort_topologically());
  return g;
}

}  // namespace

Result<ScanBaseline> scan_baseline(const Graph& g, const ScanOptions& o) {
  ScanBaseline b;
  auto r = scan(g, o);
  if (!r) return r.error();
  b.report = std::move(r).value();
  auto a = analyze_intervals(g, interval_options(g, o));
  if (!a) return a.error();
  b.analysis = std::move(a).value();
  return b;
}

Result<ScanEvidence> check_scan(const Graph& before, const ScanBaseline& base, const Graph& after, const ScanOptions& o,
                                const std::string& prefix, const std::set<std::string>& pending) {
  ScanEvidence e;
  auto scanned = scan_baseline(after, o);
  if (!scanned) return scanned.error();
  e.after = std::move(scanned).value();
  std::set<std::string> hazard_nodes;
  bool safe = true;
  for (const HazardVerdict& v : e.after.report.verdicts) {
    hazard_nodes.insert(v.site.node_name);
    if (starts_with(v.site.node_name, prefix)) {
      e.repaired.push_back(
          fmt::format("{}: {}, operand {}", v.site.label(), verdict_name(v.verdict), interval_text(v.operand)));
      safe &= v.verdict == Verdict::ProvedSafe;
    } else if (v.verdict == Verdict::MayFail && !pending.count(v.site.node_name)) {
      e.new_may_fail.push_back(v.site.label());
    }
  }
  const auto& now = e.after.analysis.values;
  std::optional<IntervalAnalysis> probe;  // the repair's values zeroed, computed when needed
  bool probe_failed = false;
  for (int32_t i : forward_cone(after, prefix)) {
    const Node& n = after.nodes[static_cast<size_t>(i)];
    if (hazard_nodes.count(n.name) || !opens_from_bounded(n, now)) continue;
    // The same node opening the same way before the repair is not the repair's doing.
    bool already = false;
    for (const Node& b : before.nodes)
      if (b.name == n.name) already = opens_from_bounded(b, base.analysis.values);
    if (already) continue;
    // Nor is an overflow the model's other operands cause: it stays with the repair's values at 0 (a loss's
    // other term overflowing, which the original's unbounded values used to hide).
    if (!probe && !probe_failed) {
      auto zeroed = zero_repair_outputs(after, prefix);
      auto a = zeroed ? analyze_intervals(*zeroed, interval_options(*zeroed, o))
                      : Result<IntervalAnalysis>(zeroed.error());
      if (a) {
        // The probe graph adds values after the original ones: ids of `after` mean the same there.
        probe.emplace(std::move(a).value());
      } else {
        probe_failed = true;
      }
    }
    if (probe && opens_from_bounded(n, probe->values)) {
      e.elsewhere.push_back(fmt::format("{} '{}'", n.op_type, n.name));
      continue;
    }
    Interval h{kInf, -kInf};
    for (ValueId out : n.outputs)
      if (out != kNoValue) h = now[static_cast<size_t>(out)].hull();
    e.new_overflows.push_back(
        fmt::format("{} '{}' (output {} from bounded inputs)", n.op_type, n.name, interval_text(h)));
  }
  const bool ok = safe && e.new_may_fail.empty() && e.new_overflows.empty();
  e.result.state = ok ? CheckState::Passed : CheckState::Failed;
  if (ok) {
    e.result.detail = e.repaired.empty() ? "proved: the repaired expression has no hazardous op left, and nothing "
                                           "new may fail or overflow"
                                         : fmt::format("proved safe: {}", fmt::join(e.repaired, "; "));
    if (!e.elsewhere.empty())
      e.result.detail += fmt::format(
          " (downstream, {} may overflow because of the model's other operands, with or "
          "without the repair)",
          fmt::join(e.elsewhere, ", "));
  } else if (!safe) {
    e.result.detail = fmt::format("not proved: {}", fmt::join(e.repaired, "; "));
  } else if (!e.new_may_fail.empty()) {
    e.result.detail = fmt::format("new may-fail hazards: {}", fmt::join(e.new_may_fail, "; "));
  } else {
    e.result.detail = fmt::format("the repaired values can overflow downstream: {}", fmt::join(e.new_overflows, "; "));
  }
  return e;
}

Result<LocalProof> prove_locally(const Graph& after, const IntervalAnalysis& analysis, const std::string& prefix,
                                 Precision precision) {
  LocalProof p;
  Graph sub;
  sub.opsets = after.opsets;
  sub.name = "repair";
  std::set<ValueId> produced;
  std::vector<const Node*> nodes;
  for (const Node& n : after.nodes)
    if (starts_with(n.name, prefix)) {
      nodes.push_back(&n);
      for (ValueId out : n.outputs)
        if (out != kNoValue) produced.insert(out);
    }
  if (nodes.empty()) return make_error("no node of the repair '{}' in the model", prefix);
  std::map<ValueId, ValueId> map;
  std::vector<ValueId> externals;
  auto value_of = [&](ValueId id) {
    if (auto it = map.find(id); it != map.end()) return it->second;
    Value v;
    v.name = after.value(id).name;
    v.dtype = after.value(id).dtype;
    if (!produced.count(id)) {
      v.kind = ValueKind::Input;
      v.shape = after.value(id).shape;
      if (v.dtype == DType::Undefined) v.dtype = analysis.values[static_cast<size_t>(id)].dtype;
      externals.push_back(id);
    }
    const ValueId nid = sub.add_value(std::move(v));
    if (!produced.count(id)) sub.inputs.push_back(nid);
    map[id] = nid;
    return nid;
  };
  for (const Node* n : nodes) {
    Node c = *n;
    for (ValueId& in : c.inputs)
      if (in != kNoValue) in = value_of(in);
    for (ValueId& out : c.outputs)
      if (out != kNoValue) out = value_of(out);
    sub.nodes.push_back(std::move(c));
  }
  for (ValueId id : produced) {
    bool read_outside = std::find(after.outputs.begin(), after.outputs.end(), id) != after.outputs.end();
    for (int32_t c : after.value(id).consumers)
      read_outside |= !starts_with(after.nodes[static_cast<size_t>(c)].name, prefix);
    if (read_outside) sub.outputs.push_back(map.at(id));
  }
  GRIST_TRY(sub.sort_topologically());
  for (ValueId id : externals)
    if (!analysis.values[static_cast<size_t>(id)].exact) p.operands.push_back(after.value(id).name);

  auto proved_with = [&](double r) -> Result<bool> {
    ScanOptions o;
    o.precision = precision;
    for (ValueId id : externals) {
      IntervalTensor t = analysis.values[static_cast<size_t>(id)];
      if (!t.exact && is_float(t.dtype)) {
        t.lo = {-r};
        t.hi = {r};
        t.blocks = Shape{};
        t.may_be_nan = false;
      }
      o.given[after.value(id).name] = std::move(t);
    }
    auto s = scan(sub, o);
    if (!s) return s.error();
    return s->count(Verdict::ProvedSafe) == static_cast<int>(s->verdicts.size());
  };
  auto any = proved_with(FLT_MAX);
  if (!any) return any.error();
  if (*any) {
    p.any_finite = true;
    p.bound = FLT_MAX;
    p.text =
        fmt::format("proved safe for every finite value of {} (whatever the weights are)",
                    p.operands.empty() ? std::string("its operands") : fmt::format("{}", fmt::join(p.operands, ", ")));
    return p;
  }
  // Largest R = 10^e, e in [-3, 38], by bisection to 0.01 in the exponent.
  double lo = -3, hi = std::log10(FLT_MAX);
  auto at_lo = proved_with(std::pow(10.0, lo));
  if (!at_lo) return at_lo.error();
  if (!*at_lo) {
    p.text = "not proved locally: the repaired expression needs the rest of the model's ranges";
    return p;
  }
  while (hi - lo > 0.01) {
    const double mid = (lo + hi) / 2;
    auto ok = proved_with(std::pow(10.0, mid));
    if (!ok) return ok.error();
    (*ok ? lo : hi) = mid;
  }
  p.bound = std::pow(10.0, lo);
  p.text = fmt::format(
      "proved safe while {} stay within ±{:.3g} (whatever the weights are)",
      p.operands.empty() ? std::string("its operands") : fmt::format("{}", fmt::join(p.operands, ", ")), p.bound);
  return p;
}

namespace {

struct Compared {
  double diff = 0, scale = 0;
  int64_t compared = 0, skipped = 0, repaired = 0, broken = 0;
  double relative() const { return scale > 0 ? diff / scale : (diff > 0 ? kInf : 0); }
};

void compare_tensors(const Tensor& a, const Tensor& b, Compared& c) {
  if (a.shape() != b.shape()) {
    c.broken += std::max<int64_t>(1, a.numel());
    return;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get_as_double(i), y = b.get_as_double(i);
    if (!std::isfinite(x)) {
      ++c.skipped;
      c.repaired += std::isfinite(y);
      continue;
    }
    ++c.compared;
    if (!std::isfinite(y)) {
      ++c.broken;
      continue;
    }
    c.diff = std::max(c.diff, std::fabs(x - y));
    c.scale = std::max({c.scale, std::fabs(x), std::fabs(y)});
  }
}

// One model run on the check's batches: its outputs and loss gradients by the names the report uses.
class Runner {
 public:
  static Result<Runner> create(const Graph& g, const Manifest& m, const DataCheckOptions& o, bool float64) {
    Runner r;
    r.g_ = &g;
    r.float64_ = float64;
    ExecutorOptions eo;
    eo.dropout_training = false;
    eo.flush_denormals = m.ftz && !float64;
    eo.seed = o.seed;
    // float64 is the exact reference: no format to round to.
    eo.precision = float64 ? Precision::Fp32 : o.precision.value_or(m.precision);
    auto ex = Executor::create(g, eo);
    if (!ex) return ex.error();
    r.ex_.emplace(std::move(ex).value());
    for (const auto& [name, t] : o.weights)
      if (g.find_value(name) != kNoValue) GRIST_TRY(r.ex_->set_input(name, r.convert(t)));
    if (!m.loss.empty()) {
      r.loss_ = g.find_value(m.loss);
    } else {
      for (ValueId out : g.outputs)
        if (r.loss_ == kNoValue && is_float(g.value(out).dtype)) r.loss_ = out;
    }
    return r;
  }

  void want_gradients(const std::vector<std::string>& names) {
    for (const auto& n : names)
      if (g_->find_value(n) != kNoValue) {
        wrt_.push_back(g_->find_value(n));
        wrt_names_.push_back(n);
      }
  }

  // Runs the batch; false (and nothing recorded) when the model is not finite on it.
  Result<bool> run(const Batch& batch, std::map<std::string, Tensor>& out) {
    for (const auto& [name, t] : batch)
      if (g_->find_value(name) != kNoValue) GRIST_TRY(ex_->set_input(name, convert(t)));
    GRIST_TRY(ex_->forward());
    if (ex_->forward_event().found) return false;
    for (ValueId v : g_->outputs)
      out[fmt::format("{} {}", v == loss_ ? "loss" : "output", g_->value(v).name)] = ex_->value(v);
    if (loss_ == kNoValue || wrt_.empty()) return true;
    GRIST_TRY(ex_->backward(loss_, wrt_));
    if (ex_->backward_event().found) return false;
    for (size_t i = 0; i < wrt_.size(); ++i)
      if (const Tensor* gr = ex_->grad(wrt_[i]))
        out[fmt::format("d {} / d {}", g_->value(loss_).name, wrt_names_[i])] = *gr;
    return true;
  }

 private:
  Tensor convert(const Tensor& t) const {
    if (!float64_ || t.dtype() != DType::Float32) return t;
    Tensor d;
    cast_tensor(t, DType::Float64, d);
    return d;
  }

  const Graph* g_ = nullptr;
  bool float64_ = false;
  std::optional<Executor> ex_;
  ValueId loss_ = kNoValue;
  std::vector<ValueId> wrt_;
  std::vector<std::string> wrt_names_;
};

}  // namespace

namespace {

// The tensors of two models over the same batches, compared where the first is finite.
struct PairRun {
  std::map<std::string, Compared> diff;
  std::vector<std::string> order;
  int batches = 0, unusable = 0, repaired_batches = 0, broken_batches = 0;
};

// `batches` < 0: as many as the options and their time cap allow; else exactly that many.
Result<PairRun> run_pair(const Graph& a, const Graph& b, const DataCheckOptions& o, bool float64, int batches) {
  const auto start = std::chrono::steady_clock::now();
  const Manifest& m = *o.manifest;
  std::vector<std::string> wrt = trained_weight_names(a, &m);
  for (const auto& name : o.data->input_names())
    if (o.data->spec(name).role == InputRole::Data) wrt.push_back(name);
  auto ra = Runner::create(a, m, o, float64);
  if (!ra) return ra.error();
  auto rb = Runner::create(b, m, o, float64);
  if (!rb) return rb.error();
  ra->want_gradients(wrt);
  rb->want_gradients(wrt);
  PairRun p;
  std::optional<Dataset> data(*o.data);  // a fresh copy: every run sees the same batches
  for (int k = 0; k < (batches < 0 ? o.batches : batches); ++k) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (batches < 0 && k > 0 && elapsed > o.seconds_cap) break;
    Batch batch;
    GRIST_TRY(data->next_batch(batch));
    GRIST_TRY(data->redraw(batch));
    std::map<std::string, Tensor> ta, tb;
    auto fa = ra->run(batch, ta);
    if (!fa) return fa.error();
    auto fb = rb->run(batch, tb);
    if (!fb) return fb.error();
    if (!*fa) {
      // The original breaks on this batch: nothing of it to preserve, only whether the repair runs finite.
      ++p.unusable;
      p.repaired_batches += *fb;
      continue;
    }
    if (!*fb) ++p.broken_batches;
    for (const auto& [name, x] : ta) {
      if (!p.diff.count(name)) p.order.push_back(name);
      Compared& c = p.diff[name];
      if (auto y = tb.find(name); y != tb.end()) {
        compare_tensors(x, y->second, c);
      } else {
        c.broken += std::max<int64_t>(1, x.numel());  // the repaired model lost it (a gradient path cut)
      }
    }
    ++p.batches;
  }
  return p;
}

}  // namespace

Result<DataComparison> compare_on_data(const Graph& a, const Graph& b, const DataCheckOptions& o) {
  GRIST_CHECK(o.manifest != nullptr && o.data != nullptr, "the data check needs the manifest and its data");
  auto run = run_pair(a, b, o, false, -1);
  if (!run) return run.error();
  const PairRun& p = *run;
  DataComparison r;
  r.batches = p.batches;
  r.repaired_batches = p.repaired_batches;
  r.broken_batches = p.broken_batches;
  int64_t broken = p.broken_batches, repaired = 0;
  bool above = false;
  for (const auto& name : p.order) {
    const Compared& c = p.diff.at(name);
    TensorDifference d;
    d.name = name;
    d.relative = c.relative();
    d.compared = c.compared;
    d.skipped = c.skipped;
    d.repaired = c.repaired;
    d.broken = c.broken;
    d.within = d.relative <= o.tolerance;
    above |= !d.within;
    broken += c.broken;
    repaired += c.repaired;
    if (d.relative >= r.worst) {
      r.worst = d.relative;
      r.worst_tensor = name;
    }
    r.tensors.push_back(std::move(d));
  }
  // Above the tolerance in float32: evaluate both formulas in float64 on the same batches. If they agree there, the
  // float32 difference is rounding (a stable form is often the more exact of the two), not the repair's doing.
  bool float64_ran = false;
  if (above && broken == 0) {
    auto wa = widen_to_float64(a);
    auto wb = widen_to_float64(b);
    if (wa && wb) {
      auto wide = run_pair(*wa, *wb, o, true, p.batches + p.unusable);
      if (wide && wide->batches == p.batches) {
        float64_ran = true;
        double largest = 0;
        for (const auto& [name, c] : wide->diff) largest = std::max(largest, c.scale);
        for (TensorDifference& d : r.tensors) {
          auto it = wide->diff.find(d.name);
          if (it == wide->diff.end()) continue;
          d.float64_relative = it->second.relative();
          d.zero_in_exact = it->second.compared > 0 && it->second.scale <= 1e-12 * largest;
          d.within = d.within || d.float64_relative <= o.tolerance || d.zero_in_exact;
        }
        // The largest difference is then that of the tensors that are not rounding noise of a zero.
        r.worst = 0;
        r.worst_tensor.clear();
        for (const TensorDifference& d : r.tensors)
          if (!d.zero_in_exact && d.relative >= r.worst) r.worst = d.relative, r.worst_tensor = d.name;
      }
    }
  }
  const std::string where =
      fmt::format("{} tensors on {} batch{} of {}", r.tensors.size(), r.batches, r.batches == 1 ? "" : "es", o.batch);
  const DType format = precision_format(o.precision.value_or(o.manifest->precision));
  const std::string format_name(format == DType::Undefined ? "float32" : dtype_name(format));
  if (r.batches == 0) {
    r.result.state = broken > 0 ? CheckState::Failed : CheckState::NotApplicable;
    r.result.detail = fmt::format(
        "the original is not finite on any of the {} batches of the manifest's data; the "
        "repaired model is finite on {} of them",
        p.unusable, p.repaired_batches);
    return r;
  }
  bool within = true;
  for (const auto& d : r.tensors) within &= d.within;
  r.result.state = broken == 0 && within ? CheckState::Passed : CheckState::Failed;
  if (broken > 0) {
    r.result.detail = fmt::format(
        "the repaired model is not finite where the original is ({} element{} and {} "
        "batch{}, on {})",
        broken - p.broken_batches, broken - p.broken_batches == 1 ? "" : "s", p.broken_batches,
        p.broken_batches == 1 ? "" : "es", where);
    return r;
  }
  r.result.detail = fmt::format("max relative difference {:.3g} ({}) on {}", r.worst, r.worst_tensor, where);
  // Say why a tensor above the tolerance passes, or the first that fails.
  const TensorDifference *failing = nullptr, *rounding = nullptr, *noise = nullptr;
  for (const auto& d : r.tensors) {
    if (d.relative <= o.tolerance) continue;
    if (!d.within && !failing) failing = &d;
    if (d.within && d.zero_in_exact && !noise) noise = &d;
    if (d.within && !d.zero_in_exact && !rounding) rounding = &d;
  }
  if (failing) {
    r.result.detail += fmt::format("; {} above {:.0e}{}", failing->name, o.tolerance,
                                   float64_ran ? fmt::format(" in float64 too ({:.3g})", failing->float64_relative) : "");
  } else {
    if (rounding)
      r.result.detail += fmt::format("; {} rounding: in float64 the two models agree to {:.2g}", format_name,
                                     rounding->float64_relative);
    if (noise)
      r.result.detail += fmt::format(
          "; {} is 0 in exact arithmetic: in float64 both models' values are below 1e-12 of the largest value "
          "compared (rounding noise, not compared)",
          noise->name);
  }
  if (p.unusable > 0)
    r.result.detail += fmt::format("; {} batch{} where the original is not finite (the repaired model is finite on {})",
                                   p.unusable, p.unusable == 1 ? "" : "es", p.repaired_batches);
  else if (repaired > 0)
    r.result.detail +=
        fmt::format("; {} element{} non-finite in the original are finite now", repaired, repaired == 1 ? "" : "s");
  return r;
}

Result<TrainingRun> run_training(const Graph& g, const Manifest& m, const Dataset& fresh, int64_t batch, int64_t steps,
                                 uint64_t seed, double seconds_cap) {
  TrainingRun r;
  if (!m.train.enabled || m.loss.empty()) {
    r.result.state = CheckState::NotApplicable;
    r.result.detail = "the model does not train (no optimizer or no loss in the manifest)";
    return r;
  }
  std::optional<Dataset> data(fresh);
  ExecutorOptions eo;
  eo.flush_denormals = m.ftz;
  eo.seed = seed;
  eo.dropout_training = m.train.dropout;
  eo.precision = m.precision;
  auto ex = Executor::create(g, eo);
  if (!ex) return ex.error();
  const ValueId loss = g.find_value(m.loss);
  GRIST_CHECK(loss != kNoValue, "the loss '{}' is not a value of the model", m.loss);
  std::vector<ValueId> params;
  for (const auto& name : trained_weight_names(g, &m)) params.push_back(g.find_value(name));
  Optimizer opt(m.train.optimizer, params);
  // amp-* trains as the hunt does: GradScaler scales the loss, skips a step whose gradients hold an inf/NaN (its
  // normal behaviour, counted) and fails only once its scale collapses with the gradients still not finite.
  std::optional<GradScaler> scaler;
  if (is_autocast(m.precision)) scaler.emplace();
  Tensor scaled_seed;
  Batch b;
  // The time cap counts from the first step and never stops before it: no step run is no check.
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    if (step > 1 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds_cap)
      break;
    GRIST_TRY(data->next_batch(b));
    GRIST_TRY(data->redraw(b));
    for (const auto& [name, t] : b) GRIST_TRY(ex->set_input(name, t));
    GRIST_TRY(ex->forward());
    if (ex->forward_event().found) {
      r.failure = fmt::format("step {}, forward: {}", step, ex->forward_event().describe());
      break;
    }
    // The hunt's training step (engine/scaled_step.h), so that check (d) trains exactly as the hunt does.
    GradScaler* gs = scaler ? &*scaler : nullptr;
    GRIST_TRY(training_backward(*ex, loss, params, gs, scaled_seed));
    if (!gs && ex->backward_event().found) {
      r.failure = fmt::format("step {}, backward: {}", step, ex->backward_event().describe());
      break;
    }
    auto stepped = training_update(*ex, opt, gs);
    if (!stepped) return stepped.error();
    if (gs) {
      if (!*stepped && gs->collapsed() && ex->backward_event().found) {
        r.failure = fmt::format("step {}, backward: {} (the loss scale collapsed to {:g})", step,
                                ex->backward_event().describe(), gs->scale());
        break;
      }
      r.skipped_steps = gs->skipped_steps();
      r.loss_scale = gs->scale();
    }
    for (ValueId id : params)
      if (!all_finite(ex->value(id)))
        r.failure = fmt::format("step {}: the optimizer made '{}' non-finite", step, g.value(id).name);
    if (!r.failure.empty()) break;
    r.steps = step;
  }
  for (ValueId id : params) r.weights[g.value(id).name] = ex->value(id);
  if (r.failure.empty() && r.steps == 0) {
    r.result.state = CheckState::NotRun;
    r.result.detail = "no training step was asked for";
    return r;
  }
  const bool ok = r.failure.empty();
  r.result.state = ok ? CheckState::Passed : CheckState::Failed;
  r.result.detail = ok ? fmt::format("{} steps of its own training ({} on batches of {}) stayed finite", r.steps,
                                     m.train.optimizer.kind == OptimizerKind::SGD ? "SGD" : "its optimizer", batch)
                       : r.failure;
  if (ok && r.steps < steps) r.result.detail += fmt::format(" (of {} asked: the time cap was reached)", steps);
  if (scaler)
    r.result.detail += fmt::format("; {}: GradScaler skipped {} step{} (inf/NaN gradients, its normal behaviour), "
                                   "loss scale {:g}",
                                   precision_name(m.precision), r.skipped_steps, r.skipped_steps == 1 ? "" : "s",
                                   r.loss_scale);
  else if (m.precision != Precision::Fp32)
    r.result.detail += fmt::format(" in {}", precision_name(m.precision));
  return r;
}

}  // namespace grist
