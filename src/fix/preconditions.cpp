#include "fix/preconditions.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "analysis/trained_weights.h"
#include "fix/assumptions.h"

namespace grist {

std::string_view box_scope_name(BoxScope s) {
  switch (s) {
    case BoxScope::Inputs: return "I";
    case BoxScope::Weights: return "W";
    case BoxScope::Both: return "W+I";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
using Boxes = std::map<std::string, Interval>;

struct Variable {
  std::string name;
  std::string kind;     // "input" or "weight"
  Interval assumed;     // where the search may grow to
  Interval data{kInf, -kInf};  // inputs: the data's hull; weights: the initial values' hull
};

double width(Interval i) { return i.hi - i.lo; }

Interval hull_of(const Tensor& t) {
  Interval h{kInf, -kInf};
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    if (v == v) h = {std::min(h.lo, v), std::max(h.hi, v)};
  }
  return h;
}

Interval clamp_into(Interval i, Interval to) {
  return {std::clamp(i.lo, to.lo, to.hi), std::clamp(i.hi, to.lo, to.hi)};
}

// Runs the scan under boxes and says whether the hazard is proved safe; counts the scans and keeps to budgets.
class Prover {
 public:
  Prover(const Graph& g, const PreconditionOptions& o, std::string node, Failure failure, Clock::time_point deadline)
      : g_(g), o_(o), node_(std::move(node)), failure_(failure), deadline_(deadline) {}

  int probes() const { return probes_; }
  bool exhausted() const { return probes_ >= o_.max_probes || Clock::now() >= deadline_; }

  Result<bool> proved(const Boxes& boxes) {
    ++probes_;
    Boxes all = o_.assumed;
    for (const auto& [name, b] : boxes) all[name] = b;
    auto r = scan(g_, stated_scan_options(g_, o_.manifest, o_.batch, all, o_.precision));
    if (!r) return r.error();
    for (const HazardVerdict& v : r->verdicts)
      if (v.site.node_name == node_ && v.site.failure == failure_) return v.verdict == Verdict::ProvedSafe;
    return make_error("the hazard at '{}' is not in the model", node_);
  }

 private:
  const Graph& g_;
  const PreconditionOptions& o_;
  std::string node_;
  Failure failure_;
  Clock::time_point deadline_;
  int probes_ = 0;
};

// The largest u in [0, 1] with f(u) true (f(0) true, f monotone), to a relative precision `tol` of u itself: a
// search down from 1 by factors of 8 finds its order of magnitude (a weight box may need to be 1e-5 of the
// assumed range), a bisection the rest. Below 2^-30 it is 0.
Result<double> bisect(const std::function<Result<bool>(double)>& f, double tol, const Prover& p) {
  double ok = 0, bad = 1;
  for (double u = 1; u >= 0x1p-30 && !p.exhausted(); u /= 8) {
    auto r = f(u);
    if (!r) return r.error();
    if (*r) {
      ok = u;
      break;
    }
    bad = u;
  }
  if (ok == 1 || ok == 0) return ok;
  while (bad - ok > tol * ok && !p.exhausted()) {
    const double mid = (ok + bad) / 2;
    auto r = f(mid);
    if (!r) return r.error();
    (*r ? ok : bad) = mid;
  }
  return ok;
}

Interval between(Interval from, Interval to, double t) {
  return {from.lo + t * (to.lo - from.lo), from.hi + t * (to.hi - from.hi)};
}

Boxes boxes_of(const std::vector<Variable>& vars, const std::vector<Interval>& b) {
  Boxes out;
  for (size_t i = 0; i < vars.size(); ++i) out[vars[i].name] = b[i];
  return out;
}

// The widest box over `vars` (each starting at an anchor that is proved safe), grown toward the assumed ranges:
// all bounds together first, then each bound alone, until no bound moves; then each bound is checked to break
// the proof when widened by the tolerance.
Result<Precondition> grow(BoxScope scope, const std::vector<Variable>& vars, const PreconditionOptions& o,
                          Prover& prover, const std::vector<Interval>& start = {}) {
  Precondition p;
  p.scope = scope;
  if (vars.empty()) {
    p.note = scope == BoxScope::Inputs ? "the model has no data input to constrain" : "no weight trains";
    return p;
  }
  // Anchors, preferred first: a box already proved (W+I starts from the I or W answer), the data's (or initial
  // weights') own range, its midpoint, zero.
  std::vector<std::vector<Interval>> anchors(3);
  if (!start.empty()) anchors.insert(anchors.begin(), start);
  for (const Variable& v : vars) {
    const Interval own = v.data.lo <= v.data.hi ? clamp_into(v.data, v.assumed) : v.assumed;
    const double mid = (own.lo + own.hi) / 2;
    const double zero = std::clamp(0.0, v.assumed.lo, v.assumed.hi);
    const size_t k = start.empty() ? 0 : 1;
    anchors[k].push_back(own);
    anchors[k + 1].push_back({mid, mid});
    anchors[k + 2].push_back({zero, zero});
  }
  std::vector<Interval> box;
  for (const auto& a : anchors) {
    auto ok = prover.proved(boxes_of(vars, a));
    if (!ok) return ok.error();
    if (*ok) {
      box = a;
      break;
    }
  }
  if (box.empty()) {
    p.note = "no box is proved safe, not even a single point (the data's or the initial weights' midpoint, or 0)";
    p.probes = prover.probes();
    return p;
  }
  std::vector<Interval> target;
  for (const Variable& v : vars) target.push_back(v.assumed);
  // 1. Every bound toward the assumed range at once.
  const std::vector<Interval> anchor = box;
  auto t = bisect(
      [&](double u) {
        std::vector<Interval> b;
        for (size_t i = 0; i < vars.size(); ++i) b.push_back(between(anchor[i], target[i], u));
        return prover.proved(boxes_of(vars, b));
      },
      o.tolerance, prover);
  if (!t) return t.error();
  for (size_t i = 0; i < vars.size(); ++i) box[i] = between(anchor[i], target[i], *t);
  // 1b. When that could not move (a weight that cannot leave its initial span), the variables still at a single
  // point together: a zero-initialised bias then gets a box in a few scans, not one scan-hungry pass each.
  if (*t == 0) {
    std::vector<size_t> points;
    for (size_t i = 0; i < vars.size(); ++i)
      if (width(box[i]) == 0 && width(target[i]) > 0) points.push_back(i);
    if (!points.empty() && points.size() < vars.size()) {
      const std::vector<Interval> from = box;
      auto u = bisect(
          [&](double x) {
            std::vector<Interval> b = from;
            for (size_t i : points) b[i] = between(from[i], target[i], x);
            return prover.proved(boxes_of(vars, b));
          },
          o.tolerance, prover);
      if (!u) return u.error();
      for (size_t i : points) box[i] = between(from[i], target[i], *u);
    }
  }
  // 2. Each bound alone, in passes, until none moves by more than the tolerance.
  auto bound_of = [](Interval& i, bool hi) -> double& { return hi ? i.hi : i.lo; };
  for (int pass = 0; pass < 3 && !prover.exhausted(); ++pass) {
    bool moved = false;
    for (size_t i = 0; i < vars.size(); ++i)
      for (bool hi : {false, true}) {
        const double from = bound_of(box[i], hi), to = bound_of(target[i], hi);
        const double span = std::fabs(to - from);
        if (span == 0 || prover.exhausted()) continue;
        auto u = bisect(
            [&](double x) {
              std::vector<Interval> b = box;
              bound_of(b[i], hi) = from + x * (to - from);
              return prover.proved(boxes_of(vars, b));
            },
            o.tolerance, prover);
        if (!u) return u.error();
        const double now = from + *u * (to - from);
        moved |= std::fabs(now - from) > o.tolerance * std::max(width(box[i]), 1e-12 * width(target[i]));
        bound_of(box[i], hi) = now;
      }
    if (!moved) break;
  }
  // 3. Maximal: widening any bound that stops short of the assumed range by the tolerance breaks the proof.
  p.maximal = !prover.exhausted();
  for (size_t i = 0; i < vars.size() && p.maximal; ++i)
    for (bool hi : {false, true}) {
      const double to = bound_of(target[i], hi);
      if (bound_of(box[i], hi) == to) continue;
      std::vector<Interval> b = box;
      // The tolerance (1 %) of the box's own width: meaningful for a box of 1e-5 of its range as for one of 0.9.
      const double step = o.tolerance * std::max(width(box[i]), 1e-12 * width(target[i]));
      bound_of(b[i], hi) = hi ? std::min(to, b[i].hi + step) : std::max(to, b[i].lo - step);
      auto ok = prover.proved(boxes_of(vars, b));
      if (!ok) return ok.error();
      if (*ok) p.maximal = false;
    }
  p.found = true;
  p.width = 1;
  double log_widths = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    VariableBox vb;
    vb.name = vars[i].name;
    vb.kind = vars[i].kind;
    vb.assumed = vars[i].assumed;
    vb.box = box[i];
    vb.relative_width = width(vars[i].assumed) > 0 ? width(box[i]) / width(vars[i].assumed) : 1;
    vb.data = vars[i].data;
    vb.holds_data = !(vars[i].data.lo <= vars[i].data.hi) ||
                    (box[i].lo <= vars[i].data.lo && vars[i].data.hi <= box[i].hi);
    if (vb.kind == "input") p.holds_data = p.holds_data && vb.holds_data;
    p.width = std::min(p.width, vb.relative_width);
    log_widths += std::log(std::max(vb.relative_width, 1e-300));
    p.boxes.push_back(std::move(vb));
  }
  p.mean_width = std::exp(log_widths / static_cast<double>(vars.size()));
  if (!p.holds_data) p.note = "the input box excludes some of the manifest's data";
  if (prover.exhausted()) p.note += std::string(p.note.empty() ? "" : "; ") + "the search's budget ran out";
  p.probes = prover.probes();
  return p;
}

}  // namespace

Result<PreconditionSet> find_preconditions(const Graph& g, const std::string& node_name, Failure failure,
                                           const PreconditionOptions& o) {
  // The ranges the scan assumes without a precondition: what every box is measured against.
  auto base = scan(g, stated_scan_options(g, o.manifest, o.batch, o.assumed, o.precision));
  if (!base) return base.error();
  std::map<std::string, Interval> assumed;
  for (const RangeAssumption& a : base->assumptions) assumed[a.name] = a.range;
  const std::vector<std::string> trained = trained_weight_names(g, o.manifest);

  std::vector<Variable> inputs, weights;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (!is_float(v.dtype)) continue;
    if (o.manifest) {
      auto it = o.manifest->inputs.find(v.name);
      if (it != o.manifest->inputs.end() && it->second.role != InputRole::Data) continue;
    }
    auto a = assumed.find(v.name);
    if (a == assumed.end()) continue;
    Variable var{v.name, "input", a->second, {kInf, -kInf}};
    if (auto d = o.data.find(v.name); d != o.data.end()) var.data = d->second;
    inputs.push_back(std::move(var));
  }
  for (const std::string& name : trained) {
    auto a = assumed.find(name);
    if (a == assumed.end()) continue;
    weights.push_back({name, "weight", a->second, hull_of(*g.value(g.find_value(name)).initial)});
  }
  // Unbounded assumed ranges give the search nowhere finite to grow to: FLT_MAX stands for them.
  for (auto* vars : {&inputs, &weights})
    for (Variable& v : *vars)
      v.assumed = {std::max(v.assumed.lo, -double(FLT_MAX)), std::min(v.assumed.hi, double(FLT_MAX))};

  PreconditionSet s;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(o.seconds_budget));
  // Each scope gets its share of what is left of the time: I and W a third each, W+I the rest.
  auto search = [&](BoxScope scope, const std::vector<Variable>& vars, int left,
                    const std::vector<Interval>& start) -> Result<Precondition> {
    const auto now = Clock::now();
    Prover prover(g, o, node_name, failure, now + (deadline - now) / left);
    return grow(scope, vars, o, prover, start);
  };
  auto i = search(BoxScope::Inputs, inputs, 3, {});
  if (!i) return i.error();
  s.inputs = std::move(i).value();
  auto w = search(BoxScope::Weights, weights, 2, {});
  if (!w) return w.error();
  s.weights = std::move(w).value();
  // W+I grows from the better of the two answers (either is a W+I box: the other side at its assumed range).
  std::vector<Variable> both = inputs;
  both.insert(both.end(), weights.begin(), weights.end());
  auto as_both = [&](const Precondition& p) {
    std::vector<Interval> b;
    for (const Variable& v : both) {
      Interval x = v.assumed;
      for (const auto& vb : p.boxes)
        if (vb.name == v.name) x = vb.box;
      b.push_back(x);
    }
    return b;
  };
  // The better: the larger volume relative to the assumed box (the sum of the log relative widths).
  auto log_volume = [](const Precondition& p) {
    double v = 0;
    for (const auto& vb : p.boxes) v += std::log(std::max(vb.relative_width, 1e-300));
    return p.found ? v : -kInf;
  };
  // A box that holds the data first (a precondition that forbids normal data is no fix), then the larger volume.
  std::vector<Interval> start;
  if (s.inputs.found || s.weights.found) {
    const bool inputs_hold = s.inputs.found && s.inputs.holds_data;
    const bool take_inputs = s.inputs.found && (!s.weights.found || (inputs_hold && log_volume(s.inputs) >=
                                                                                        log_volume(s.weights)));
    start = as_both(take_inputs ? s.inputs : s.weights);
  }
  auto b = search(BoxScope::Both, both, 1, start);
  if (!b) return b.error();
  s.both = std::move(b).value();
  const double n = static_cast<double>(std::max<size_t>(1, both.size()));
  for (Precondition* p : {&s.inputs, &s.weights, &s.both}) p->size = p->found ? std::exp(log_volume(*p) / n) : 0;
  return s;
}

}  // namespace grist
