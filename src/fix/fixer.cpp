#include "fix/fixer.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "data/dataset.h"
#include "analysis/half_hazards.h"
#include "analysis/trained_weights.h"
#include "fix/assumptions.h"
#include "onnx/export.h"
#include "onnx/import.h"

namespace grist {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

int32_t node_index(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int32_t>(i);
  return -1;
}

std::string chain_text(const Graph& g, int32_t node, const std::string& loss) {
  const ValueId target = !loss.empty() ? g.find_value(loss) : (g.outputs.empty() ? kNoValue : g.outputs[0]);
  auto path = g.path_to(node, target);
  if (path.empty()) return "";
  std::vector<std::string> names;
  for (int32_t n : path)
    names.push_back(
        fmt::format("{} '{}'", g.nodes[static_cast<size_t>(n)].op_type, g.nodes[static_cast<size_t>(n)].name));
  names.push_back(fmt::format("'{}'", g.value(target).name));
  return fmt::format("{}", fmt::join(names, " -> "));
}

// The constants a repair may take in `format`, preferred first; KeepFloat32's: the region's sizes, smallest first.
std::vector<double> constants_for(const Graph& g, const RepairMatch& m, DType format) {
  if (!takes_constant(m.kind)) return {0};
  if (m.kind == RepairKind::KeepFloat32) {
    std::vector<double> sizes;
    const auto longest = keep_float32_region(g, m, 4).size();
    for (size_t k = 1; k <= longest; ++k) sizes.push_back(static_cast<double>(k));
    return sizes;
  }
  const auto values = repair_values(m.kind, format);
  if (values.empty()) return {default_constant(m, format)};
  return values;
}

// The nodes downstream of a repair's nodes in `g`.
std::set<std::string> cone_names(const Graph& g, const std::string& prefix) {
  std::vector<bool> reached(g.values.size(), false);
  std::set<std::string> names;
  for (const Node& n : g.nodes) {
    bool hit = starts_with(n.name, prefix);
    for (ValueId in : n.inputs) hit |= in != kNoValue && reached[static_cast<size_t>(in)];
    if (!hit) continue;
    names.insert(n.name);
    for (ValueId out : n.outputs)
      if (out != kNoValue) reached[static_cast<size_t>(out)] = true;
  }
  return names;
}

// Whether `v` is non-negative whatever finite values the float inputs and trained weights take (a sum of exps or of
// magnitudes): the structure of the expression, not the ranges assumed, decides it.
bool structurally_nonnegative(const Graph& g, ValueId v, const Manifest* m) {
  IntervalOptions io;
  io.manifest = m;
  const Interval any{-FLT_MAX, FLT_MAX};
  for (ValueId id : g.inputs)
    if (is_float(g.value(id).dtype)) io.assumed[g.value(id).name] = any;
  for (const auto& name : trained_weight_names(g, m)) io.assumed[name] = any;
  auto a = analyze_intervals(g, io);
  if (!a) return false;
  const IntervalTensor& t = a->values[static_cast<size_t>(v)];
  return !t.may_be_nan && t.hull().lo >= 0;
}

// The format the hazard's op meets in `p`: the run's 16-bit format where the op's result (an overflow) or its
// operand (a flush to 0) is held in it; float32 (Undefined) where it is not — an Exp that autocast or a region
// kept in float32 computes in float32 overflows at 88.72, not at 11.09, and wants float32's constants.
DType hazard_format(const Graph& g, int32_t node, Failure failure, int operand, Precision p) {
  const DType format = precision_format(p);
  if (format == DType::Undefined || node < 0) return format;
  const Node& n = g.nodes[static_cast<size_t>(node)];
  const bool overflow =
      failure == Failure::HalfOverflow || failure == Failure::ExpOverflow || failure == Failure::PowOverflow;
  const ValueId v = overflow ? (n.outputs.empty() ? kNoValue : n.outputs[0])
                             : (n.has_input(static_cast<size_t>(operand)) ? n.inputs[static_cast<size_t>(operand)]
                                                                         : kNoValue);
  if (v == kNoValue) return format;
  return values_in_format(g, p)[static_cast<size_t>(v)] ? format : DType::Undefined;
}

// Repairs one hazard on `cur`: the first candidate and constant whose check (a) passes.
Status repair_one(HazardFix& h, Graph& cur, ScanBaseline& base, const ScanOptions& so,
                  const std::set<std::string>& pending, std::vector<Graph>& history) {
  const Manifest* manifest = so.manifest;
  const int32_t idx = node_index(cur, h.site.node_name);
  int operand = h.site.operand;
  Failure failure = h.site.failure;
  const DType format = hazard_format(cur, idx, failure, operand, so.precision);
  h.format = format;
  auto candidates = repair_candidates(cur, idx, failure, operand, format);
  if (candidates.empty()) {
    h.scan.state = CheckState::Failed;
    h.scan.detail = fmt::format("no graph repair: {}", fix_hint_for(cur, idx, failure, operand));
    return Status::ok();
  }
  std::set<std::string> others = pending;
  others.erase(h.site.node_name);
  std::string first_failure;
  for (RepairMatch& m : candidates) {
    if (m.kind == RepairKind::DivisorGuard || m.kind == RepairKind::PowBaseGuard)
      m.operand_nonnegative = structurally_nonnegative(cur, m.source, manifest);
    for (double c : constants_for(cur, m, format)) {
      Graph edited = cur;
      auto applied = apply_repair(edited, m, c);
      if (!applied) {
        h.attempts.push_back({m.kind, c, applied.message()});
        continue;
      }
      // What is proved is what will be written: the ONNX the rewrite exports, read back (types and shapes
      // from ONNX's inference, as any tool reading the file sees them).
      auto bytes = export_onnx_bytes(edited);
      auto read = bytes ? import_onnx_bytes(*bytes, "the repaired model") : Result<Graph>(bytes.error());
      if (!read) {
        h.attempts.push_back({m.kind, c, fmt::format("the rewrite is not valid ONNX: {}", read.message())});
        continue;
      }
      Graph trial = std::move(read).value();
      auto ev = check_scan(cur, base, trial, so, applied->prefix, others);
      if (!ev) return ev.error();
      h.attempts.push_back({m.kind, c, ev->result.passed() ? "accepted" : ev->result.detail});
      if (!ev->result.passed()) {
        if (first_failure.empty()) first_failure = fmt::format("{}: {}", repair_entry(m.kind).id, ev->result.detail);
        continue;
      }
      h.repaired = true;
      h.match = m;
      h.applied = std::move(applied).value();
      h.scan = ev->result;
      // The Casts around a region kept in float32 are no expression of their own to prove.
      if (m.kind != RepairKind::KeepFloat32) {
        auto local = prove_locally(trial, ev->after.analysis, h.applied.prefix, so.precision);
        if (local) h.local = std::move(local).value();
      }
      cur = std::move(trial);
      base = std::move(ev->after);
      history.push_back(cur);
      return Status::ok();
    }
  }
  h.scan.state = CheckState::Failed;
  h.scan.detail = fmt::format("no repair is proved: {}", first_failure);
  return Status::ok();
}

// The hull of every data input over `batches` batches of the manifest's data.
Result<std::map<std::string, Interval>> data_hulls(const Dataset& fresh, int64_t batch, int batches) {
  std::optional<Dataset> data(fresh);
  std::map<std::string, Interval> hull;
  for (int k = 0; k < batches; ++k) {
    Batch b;
    GRIST_TRY(data->next_batch(b));
    for (const auto& [name, t] : b) {
      if (data->spec(name).role != InputRole::Data) continue;
      Interval& h = hull.try_emplace(name, Interval{kInf, -kInf}).first->second;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double v = t.get_as_double(i);
        if (v == v) h = {std::min(h.lo, v), std::max(h.hi, v)};
      }
    }
    if (data->pool_size() > 0 && (k + 1) * batch >= data->pool_size()) break;
  }
  return hull;
}

}  // namespace

bool HazardFix::fixed() const {
  if (!repaired) return repaired_with > 0 && repairer_fixed;
  for (const CheckResult* c : {&scan, &hunt, &data, &training, &witness})
    if (c->state == CheckState::Failed) return false;
  return true;
}

namespace {

// One run of grist fix, phase by phase: what to repair, the repairs (each proved by check a), the repaired model
// written as ONNX, then checks (b), (d), (c), the witness and the preconditions. Each phase reads what the
// ones before it left in the result.
class FixRun {
 public:
  FixRun(const Graph& g, const FixOptions& o)
      : g_(g), o_(o), scan_manifest_(o.has_manifest ? &o.manifest : nullptr),
        so_(stated_scan_options(g, scan_manifest_, o.batch, o.assumed, o.manifest.precision)) {}

  Result<FixResult> run() {
    r_.precision = o_.manifest.precision;
    GRIST_TRY(select());
    GRIST_TRY(repair_all());
    r_.repair_seconds = since(start_);
    GRIST_TRY(write_back());
    GRIST_TRY(check_hunt());
    auto loaded = Dataset::create(o_.manifest, g_, o_.batch, o_.manifest.search.seed);
    if (!loaded) return loaded.error();
    GRIST_TRY(check_training(*loaded));
    GRIST_TRY(check_data(*loaded));
    check_witness();
    GRIST_TRY(preconditions(*loaded));
    // A hazard another repair removed is fixed when that repair is.
    for (HazardFix& h : r_.hazards)
      for (const HazardFix& by : r_.hazards)
        if (h.repaired_with && by.site.id == h.repaired_with) h.repairer_fixed = by.fixed();
    r_.seconds = since(start_);
    return std::move(r_);
  }

 private:
  HazardFix hazard_from(const HazardVerdict& v, std::string reason) const {
    HazardFix h;
    h.site = v.site;
    h.verdict = v.verdict;
    h.operand = v.operand;
    h.danger = v.danger;
    h.reason = std::move(reason);
    h.chain = chain_text(g_, v.site.node, o_.manifest.loss);
    return h;
  }

  // The hazards to repair: what the scan says may fail, and what the witness triggered.
  Status select() {
    auto base = scan_baseline(g_, so_);
    if (!base) return base.error();
    base_ = std::move(base).value();
    r_.original_scan = base_.report;
    // Say where the stated weight ranges come from (the scan only sees them as assumed).
    const auto stated = trained_weight_ranges(g_, scan_manifest_);
    for (RangeAssumption& a : r_.original_scan.assumptions)
      if (auto it = stated.find(a.name); it != stated.end() && !o_.assumed.count(a.name))
        a.reason = "stated for the proofs: " + it->second.why;
    // What may fail in the program decides what to repair: the scan as `grist scan` makes it, the trained
    // weights unbounded (any run of the training), the user's --assume kept. A hazard proved safe only
    // under the stated weight ranges (RANUM's default, which training leaves) is still repaired; its repair
    // is then proved under those ranges.
    ScanOptions program_options;
    program_options.manifest = scan_manifest_;
    program_options.batch = o_.batch;
    program_options.assumed = o_.assumed;
    program_options.initial_weights = false;
    program_options.step_bounds = false;
    program_options.precision = o_.manifest.precision;
    auto program = scan(g_, program_options);
    if (!program) return program.error();
    r_.program_scan = std::move(program).value();
    auto program_may_fail = [&](const HazardSite& s) -> const HazardVerdict* {
      for (const auto& pv : r_.program_scan.verdicts)
        if (pv.site.node_name == s.node_name && pv.verdict == Verdict::MayFail) return &pv;
      return nullptr;
    };
    for (const auto& v : base_.report.verdicts)
      if (v.verdict != Verdict::ProvedSafe || program_may_fail(v.site)) pending_.insert(v.site.node_name);
    auto wanted = [&](const HazardSite& s) {
      return o_.hazard.empty() || o_.hazard == s.node_name || o_.hazard == std::to_string(s.id);
    };
    bool hazard_known = o_.hazard.empty();
    for (const auto& v : base_.report.verdicts) {
      hazard_known |= wanted(v.site);
      const bool by_witness =
          o_.witness && (o_.witness->producer == v.site.node_name ||
                         (o_.witness->hazard_node == v.site.node_name && o_.witness->producer.empty()));
      const HazardVerdict* in_program = program_may_fail(v.site);
      if (!wanted(v.site) || (v.verdict != Verdict::MayFail && !in_program && !by_witness && o_.hazard.empty()))
        continue;
      std::string reason =
          v.verdict == Verdict::MayFail
              ? fmt::format("the scan: operand [{:.4g}, {:.4g}] meets {}", v.operand.lo, v.operand.hi, v.danger)
          : in_program
              ? fmt::format("the scan: with the trained weights unbounded (any run of its training) operand "
                            "[{:.4g}, {:.4g}] meets {}; within the stated weight ranges it is {}",
                            in_program->operand.lo, in_program->operand.hi, in_program->danger,
                            verdict_name(v.verdict))
              : fmt::format("the scan: {}", verdict_name(v.verdict));
      if (by_witness) reason += "; the witness triggers it";
      r_.hazards.push_back(hazard_from(v, std::move(reason)));
      history_of_.push_back(0);
      if (by_witness) pending_.insert(v.site.node_name);
    }
    if (!hazard_known) {
      std::string list;
      for (const auto& v : base_.report.verdicts) list += (list.empty() ? "" : ", ") + v.site.label();
      return make_error("--hazard '{}' names no hazard of the model (hazards: {})", o_.hazard,
                        list.empty() ? std::string("none") : list);
    }
    return Status::ok();
  }

  // Each hazard in turn on the model repaired so far; then the hazards the original only propagated that may
  // fail once the ones upstream are repaired, for up to three rounds.
  Status repair_all() {
    cur_ = g_;
    ScanBaseline cur_base = base_;
    history_ = {g_};
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < r_.hazards.size(); ++i) {
        HazardFix& h = r_.hazards[i];
        if (h.repaired || h.repaired_with || h.scan.state != CheckState::NotRun) continue;
        if (node_index(cur_, h.site.node_name) < 0) {
          for (const HazardFix& other : r_.hazards)
            if (std::find(other.applied.removed_nodes.begin(), other.applied.removed_nodes.end(),
                          h.site.node_name) != other.applied.removed_nodes.end())
              h.repaired_with = other.site.id;
          if (!h.repaired_with) h.reason += " (its node is gone)";
          pending_.erase(h.site.node_name);
          continue;
        }
        // Under a 16-bit precision a repair upstream (a larger ε, a region kept in float32) often makes the
        // hazards after it safe, or removes a format's site altogether (a value no longer in the format): those
        // are fixed by it, not wrapped again.
        if (precision_format(so_.precision) != DType::Undefined && last_repaired_ > 0 && !h.repaired_with) {
          const HazardVerdict* now = nullptr;
          for (const auto& v : cur_base.report.verdicts)
            if (v.site.node_name == h.site.node_name && v.site.failure == h.site.failure) now = &v;
          if (!now || now->verdict == Verdict::ProvedSafe) {
            h.repaired_with = last_repaired_;
            h.made_safe = true;
            h.reason += fmt::format("; {} once #{} was repaired", now ? "proved safe" : "no longer a hazard",
                                    last_repaired_);
            pending_.erase(h.site.node_name);
            continue;
          }
        }
        GRIST_TRY(repair_one(h, cur_, cur_base, so_, pending_, history_));
        if (h.repaired) {
          pending_.erase(h.site.node_name);
          history_of_[i] = history_.size() - 1;
          last_repaired_ = h.site.id;
        }
      }
      if (!o_.hazard.empty()) break;
      bool added = false;
      for (const auto& v : cur_base.report.verdicts) {
        if (v.verdict != Verdict::MayFail || !pending_.count(v.site.node_name)) continue;
        bool known = false;
        for (const HazardFix& h : r_.hazards) known |= h.site.node_name == v.site.node_name;
        if (known) continue;
        for (const auto& orig : base_.report.verdicts)
          if (orig.site.node_name == v.site.node_name) {
            r_.hazards.push_back(hazard_from(orig, fmt::format("may fail once the hazards upstream are repaired "
                                                               "(the original: {})",
                                                               verdict_name(orig.verdict))));
            history_of_.push_back(0);
            added = true;
          }
      }
      if (!added) break;
    }
    r_.fixed_scan = cur_base.report;
    r_.changed = history_.size() > 1;
    return Status::ok();
  }

  // The repaired model as ONNX (what is written), read back (what the checks run on).
  Status write_back() {
    if (!r_.changed) {
      r_.fixed = g_;
      return Status::ok();
    }
    ExportOptions eo;
    std::string doc = "Repaired by grist fix:";
    for (const HazardFix& h : r_.hazards)
      if (h.repaired) {
        doc += fmt::format(" {} → {};", h.site.label(), repair_entry(h.match.kind).title);
        eo.metadata.emplace_back(fmt::format("grist.fix.{}", h.site.node_name),
                                 std::string(repair_entry(h.match.kind).id));
      }
    eo.doc_string = doc;
    auto bytes = export_onnx_bytes(cur_, eo);
    if (!bytes) return bytes.error();
    r_.fixed_bytes = std::move(bytes).value();
    auto back = import_onnx_bytes(r_.fixed_bytes, "the repaired model");
    if (!back) return back.error();
    r_.fixed = std::move(back).value();
    return Status::ok();
  }

  // (b) the hunt on the repaired model, every hazard, the same seed; its triggers attributed to the repairs.
  Status check_hunt() {
    if (!r_.changed) return Status::ok();
    const auto hunt_start = Clock::now();
    HuntOptions ho;
    ho.manifest = o_.manifest;
    ho.manifest.target.clear();
    ho.manifest.search.time_limit = o_.hunt_seconds / 60.0;
    if (o_.hunt_iterations > 0) ho.manifest.search.max_iterations = o_.hunt_iterations;
    ho.batch_size = o_.batch;
    ho.all = true;
    ho.independent = true;
    auto hunted = hunt(r_.fixed, ho);
    if (!hunted) return make_error("the hunt on the repaired model: {}", hunted.message());
    r_.hunt = std::move(hunted).value();
    r_.hunted = true;
    r_.hunt_seconds = since(hunt_start);

    std::set<std::string> unrepaired;
    for (const auto& v : r_.fixed_scan.verdicts)
      if (v.verdict != Verdict::ProvedSafe) unrepaired.insert(v.site.node_name);
    int64_t iterations = 0;
    int hunted_hazards = 0;
    std::vector<std::string> triggers, preexisting;
    for (const auto& out : r_.hunt.outcomes) {
      iterations += out.iterations;
      hunted_hazards += out.skipped.empty();
      if (!out.triggered) continue;
      // A trigger at a repair's own nodes is the repair's, whatever the original does on that input: the repair
      // was to remove that failure.
      bool at_a_repair = false;
      for (const HazardFix& h : r_.hazards) at_a_repair |= h.repaired && starts_with(out.event.node_name, h.applied.prefix);
      if (at_a_repair) {
        triggers.push_back(out.event.node_name);
        continue;
      }
      // A trigger downstream that the original shows on the same input (and weights) is not the repair's: it was
      // there, masked by the hazard the repair removed, or elsewhere.
      WitnessData w;
      for (const auto& [name, t] : out.witness.inputs) w.inputs.emplace_back(name, t);
      for (const auto& [name, t] : out.witness.weights) w.weights.emplace_back(name, t);
      w.pass = out.pass;
      w.dropout = out.witness.dropout;
      w.rng_state = out.witness.rng_state;
      w.loss = o_.manifest.loss;
      w.ftz = o_.manifest.ftz;
      w.precision = o_.manifest.precision;
      if (out.witness.scaler) w.loss_scale = out.witness.scaler->scale;
      auto on_original =
          out.pass == TriggerPass::OptimizerStep ? Result<NonFiniteEvent>(NonFiniteEvent{}) : run_witness(g_, w);
      if (on_original && on_original->found) {
        const std::string note = fmt::format("{} (the original breaks on the same input, at {})", out.event.node_name,
                                             on_original->node_name);
        if (std::find(preexisting.begin(), preexisting.end(), note) == preexisting.end()) preexisting.push_back(note);
        continue;
      }
      triggers.push_back(out.event.node_name);
    }
    for (HazardFix& h : r_.hazards) {
      if (!h.repaired) continue;
      const std::set<std::string> cone = cone_names(r_.fixed, h.applied.prefix);
      std::vector<std::string> hits;
      for (const auto& t : triggers)
        if (starts_with(t, h.applied.prefix) || (cone.count(t) && !unrepaired.count(t))) hits.push_back(t);
      h.hunt.state = hits.empty() ? CheckState::Passed : CheckState::Failed;
      if (!hits.empty()) {
        h.hunt.detail = fmt::format("the hunt triggers {}", fmt::join(hits, ", "));
      } else if (r_.hunt.hazards.empty()) {
        h.hunt.detail = "the repaired model has no hazardous op left to hunt";
      } else {
        h.hunt.detail = fmt::format(
            "the hunt ({} of {} hazards hunted, {} iterations, {:.1f} s, seed {}) triggered nothing at the repair "
            "or downstream of it",
            hunted_hazards, r_.hunt.hazards.size(), iterations, r_.hunt.seconds, o_.manifest.search.seed);
      }
      if (hits.empty() && !triggers.empty())
        h.hunt.detail += fmt::format(" (it triggered {} elsewhere)", fmt::join(triggers, ", "));
      if (!preexisting.empty()) h.hunt.detail += fmt::format("; not new: {}", fmt::join(preexisting, "; "));
    }
    return Status::ok();
  }

  // (d) the training of the repaired model; the original's too when it fails, to tell whose failure it is.
  Status check_training(const Dataset& data) {
    const auto training_start = Clock::now();
    if (r_.changed) {
      auto t = run_training(r_.fixed, o_.manifest, data, o_.batch, o_.train_steps, o_.manifest.search.seed,
                            o_.train_seconds);
      if (!t) return make_error("the training check: {}", t.message());
      r_.training = std::move(t).value();
      if (r_.training.result.state == CheckState::Failed) {
        auto t0 = run_training(g_, o_.manifest, data, o_.batch, o_.train_steps, o_.manifest.search.seed,
                               o_.train_seconds);
        if (t0) r_.original_training = std::move(t0).value();
      }
    }
    for (HazardFix& h : r_.hazards) {
      if (!h.repaired) continue;
      h.training = r_.training.result;
      if (r_.training.result.state != CheckState::Failed || r_.original_training.result.state != CheckState::Failed)
        continue;
      // The repaired model's training failing where the original's fails too is not the repair's doing.
      const std::set<std::string> cone = cone_names(r_.fixed, h.applied.prefix);
      bool ours = false;
      for (const auto& name : cone) ours |= r_.training.failure.find("'" + name + "'") != std::string::npos;
      if (ours) continue;
      h.training.state = CheckState::Passed;
      h.training.detail = fmt::format("not the repair's: the repaired model's training fails ({}) as the original's "
                                      "does ({})",
                                      r_.training.failure, r_.original_training.failure);
    }
    r_.training_seconds = since(training_start);
    return Status::ok();
  }

  // (c) the original against the repaired model, and each repair against the model before it, at the weights the
  // repaired model's training reached (initial weights are often zeros, which compare little).
  Status check_data(const Dataset& data) {
    const auto data_start = Clock::now();
    DataCheckOptions dc;
    dc.manifest = &o_.manifest;
    dc.data = &data;
    dc.batch = o_.batch;
    dc.batches = o_.data_batches;
    dc.seed = o_.manifest.search.seed;
    dc.seconds_cap = 0.5;
    const bool trained = r_.training.result.passed() && !r_.training.weights.empty() && r_.training.steps > 0;
    if (trained) dc.weights = r_.training.weights;
    const std::string at = trained ? fmt::format(" (at the weights {} training steps reached)", r_.training.steps) : "";
    if (r_.changed) {
      auto whole = compare_on_data(g_, r_.fixed, dc);
      if (!whole) return make_error("the data check: {}", whole.message());
      r_.data = std::move(whole).value();
      r_.data.result.detail += at;
      // A half-precision repair must leave the float32 model as it was: compared in float32 too.
      if (o_.manifest.precision != Precision::Fp32) {
        DataCheckOptions in_fp32 = dc;
        in_fp32.precision = Precision::Fp32;
        auto fp32 = compare_on_data(g_, r_.fixed, in_fp32);
        if (!fp32) return make_error("the data check in float32: {}", fp32.message());
        r_.data.result.detail = fmt::format("in {}: {}; in fp32: {}", precision_name(o_.manifest.precision),
                                            r_.data.result.detail, fp32->result.detail);
        if (fp32->result.state == CheckState::Failed) r_.data.result.state = CheckState::Failed;
      }
    }
    int repairs = 0;
    for (const HazardFix& h : r_.hazards) repairs += h.repaired;
    dc.seconds_cap /= std::max(1, repairs);  // the repairs one by one share the whole check's time
    for (size_t i = 0; i < r_.hazards.size(); ++i) {
      HazardFix& h = r_.hazards[i];
      if (!h.repaired) continue;
      if (repairs == 1) {
        h.data = r_.data.result;
        continue;
      }
      const size_t k = history_of_[i];
      auto step = compare_on_data(history_[k - 1], history_[k], dc);
      if (!step) return make_error("the data check: {}", step.message());
      h.data = step->result;
      h.data.detail += at;
    }
    r_.data_seconds = since(data_start);
    return Status::ok();
  }

  // The witness must break the original and run finite on the repaired model.
  void check_witness() {
    if (!o_.witness) return;
    auto before = run_witness(g_, *o_.witness);
    r_.witness_on_original = before ? (before->found ? before->describe() : std::string("finite")) : before.message();
    auto after = run_witness(r_.fixed, *o_.witness);
    r_.witness_on_fixed = after ? (after->found ? after->describe() : std::string("finite")) : after.message();
    for (HazardFix& h : r_.hazards) {
      if (h.site.node_name != o_.witness->producer && h.site.node_name != o_.witness->hazard_node) continue;
      // A witness that does not break the original (or cannot be run on it) shows nothing about the repair.
      if (!before || !before->found) {
        h.witness.state = CheckState::Failed;
        h.witness.detail = fmt::format("the witness does not break the original: {}", r_.witness_on_original);
        continue;
      }
      const bool finite = after && !after->found;
      h.witness.state = finite ? CheckState::Passed : CheckState::Failed;
      h.witness.detail =
          finite ? fmt::format("the witness that broke the original ({}) runs finite", r_.witness_on_original)
                 : fmt::format("the witness still breaks the repaired model: {}", r_.witness_on_fixed);
    }
  }

  // RANUM's kind of fix, on the original model, in what is left of the time target.
  Status preconditions(const Dataset& data) {
    if (!o_.preconditions) return Status::ok();
    const auto pre_start = Clock::now();
    PreconditionOptions po;
    po.manifest = scan_manifest_;
    po.batch = o_.batch;
    po.assumed = o_.assumed;
    po.max_probes = o_.precondition_probes;
    po.precision = o_.manifest.precision;
    const double budget = o_.precondition_seconds >= 0 ? o_.precondition_seconds
                                                       : std::clamp(o_.target_seconds - since(start_), 0.5, 5.0);
    po.seconds_budget = budget / std::max<double>(1, static_cast<double>(r_.hazards.size()));
    auto hulls = data_hulls(data, o_.batch, 32);
    if (hulls) po.data = std::move(hulls).value();
    for (HazardFix& h : r_.hazards) {
      auto p = find_preconditions(g_, h.site.node_name, h.site.failure, po);
      if (!p) return make_error("preconditions of {}: {}", h.site.label(), p.message());
      h.preconditions = std::move(p).value();
      h.has_preconditions = true;
    }
    r_.precondition_seconds = since(pre_start);
    return Status::ok();
  }

  const Graph& g_;
  const FixOptions& o_;
  const Manifest* scan_manifest_;
  const ScanOptions so_;
  const Clock::time_point start_ = Clock::now();
  FixResult r_;
  ScanBaseline base_;                 // the original's scan
  std::set<std::string> pending_;     // original hazards not proved safe and not yet repaired
  Graph cur_;                         // the model repaired so far
  std::vector<Graph> history_;        // the original, then the model after each accepted repair
  std::vector<size_t> history_of_;    // per hazard: its repair's index into history_ (0: none)
  int last_repaired_ = 0;             // the id of the hazard repaired last
};

}  // namespace

Result<FixResult> fix_model(const Graph& g, const FixOptions& o) { return FixRun(g, o).run(); }

}  // namespace grist
