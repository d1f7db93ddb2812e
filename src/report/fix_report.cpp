#include "report/fix_report.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/scan_report.h"

namespace grist {

namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

nlohmann::json bound_json(double v) {
  if (std::isfinite(v)) return v;
  return v > 0 ? "inf" : "-inf";
}

// The constant and why it has that value: the format's own reason where the hazard's op is in a 16-bit format.
std::string_view constant_source(const HazardFix& h) {
  const std::string_view note = repair_values_note(h.match.kind, h.format);
  return note.empty() ? repair_entry(h.match.kind).constant : note;
}

std::string constant_text(const HazardFix& h) {
  if (!takes_constant(h.match.kind)) return "";
  if (h.match.kind == RepairKind::KeepFloat32)
    return fmt::format("{} node{} kept in float32: {} (listed in the model's metadata_props {})",
                       h.applied.kept_float32.size(), h.applied.kept_float32.size() == 1 ? "" : "s",
                       fmt::join(h.applied.kept_float32, ", "), kKeepFloat32Key);
  return fmt::format("{} ({})", number(h.applied.constant), constant_source(h));
}

// Boxes narrower than what was assumed: the ones a user must enforce.
std::vector<const VariableBox*> constrained(const Precondition& p) {
  std::vector<const VariableBox*> out;
  for (const auto& b : p.boxes)
    if (b.box.lo > b.assumed.lo || b.box.hi < b.assumed.hi) out.push_back(&b);
  return out;
}

std::string precondition_text(const Precondition& p) {
  if (!p.found) return fmt::format("none ({})", p.note);
  std::vector<std::string> parts;
  for (const VariableBox* b : constrained(p))
    parts.push_back(fmt::format(
        "{} ∈ [{}, {}] ({:.3g} of {} [{}, {}]{})", b->name, number(b->box.lo), number(b->box.hi), b->relative_width,
        b->kind == "input" ? "the input's" : "the weight's", number(b->assumed.lo), number(b->assumed.hi),
        b->kind == "input" ? (b->holds_data ? ", holds the data" : ", EXCLUDES some data")
                           : (b->holds_data ? ", holds the initial weights" : ", EXCLUDES the initial weights")));
  if (parts.empty()) return "none needed: the assumed ranges are already safe";
  std::string s = fmt::format("{}; width {:.3g} (geometric mean {:.3g}){}", fmt::join(parts, ", "), p.width,
                              p.mean_width, p.maximal ? ", maximal" : "");
  if (!p.note.empty()) s += "; " + p.note;
  return s;
}

nlohmann::json check_json(const CheckResult& c) {
  return {{"state", std::string(check_state_name(c.state))}, {"detail", c.detail}};
}

nlohmann::json precondition_json(const Precondition& p) {
  nlohmann::json boxes = nlohmann::json::array();
  for (const auto& b : p.boxes)
    boxes.push_back({{"name", b.name},
                     {"kind", b.kind},
                     {"assumed", {bound_json(b.assumed.lo), bound_json(b.assumed.hi)}},
                     {"box", {bound_json(b.box.lo), bound_json(b.box.hi)}},
                     {"relative_width", b.relative_width},
                     {"holds_data", b.holds_data}});
  return {{"scope", std::string(box_scope_name(p.scope))},
          {"found", p.found},
          {"width", p.width},
          {"mean_width", p.mean_width},
          {"size", p.size},
          {"holds_data", p.holds_data},
          {"maximal", p.maximal},
          {"probes", p.probes},
          {"note", p.note},
          {"boxes", boxes},
          {"pytorch", precondition_code(p, false)},
          {"tensorflow", precondition_code(p, true)}};
}

std::string status_of(const HazardFix& h) {
  if (h.repaired_with)
    return h.fixed() ? fmt::format("FIXED with #{}", h.repaired_with)
                     : fmt::format("REMOVED by #{}, whose repair failed a check", h.repaired_with);
  if (!h.repaired) return "NOT FIXED";
  return h.fixed() ? "FIXED" : "REPAIRED, A CHECK FAILED";
}

std::string base64(const std::string& bytes) {
  static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v =
        (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out += kTable[(v >> (6 * k)) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kTable[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace

std::string precondition_code(const Precondition& p, bool tf) {
  if (!p.found) return "";
  std::vector<std::string> lines;
  for (const VariableBox* b : constrained(p)) {
    const std::string lo = number(b->box.lo), hi = number(b->box.hi);
    if (b->kind == "input") {
      lines.push_back(tf ? fmt::format("{0} = tf.clip_by_value({0}, {1}, {2})", b->name, lo, hi)
                         : fmt::format("{0} = {0}.clamp({1}, {2})", b->name, lo, hi));
    } else {
      lines.push_back(tf ? fmt::format("{0}.assign(tf.clip_by_value({0}, {1}, {2}))  # after every step, or "
                                       "constraint=lambda w: tf.clip_by_value(w, {1}, {2})",
                                       b->name, lo, hi)
                         : fmt::format("with torch.no_grad(): {0}.clamp_({1}, {2})  # after every optimizer step",
                                       b->name, lo, hi));
    }
  }
  return fmt::format("{}", fmt::join(lines, "\n"));
}

std::string to_text(const FixResult& r, const FixContext& c) {
  int fixed = 0;
  for (const auto& h : r.hazards) fixed += h.fixed();
  std::string s = fmt::format(
      "grist fix {}{}: {} hazard{} to repair ({} may fail of {} in the scan), {} fixed, {} not\n"
      "  {:.2f} s: repairs and proofs {:.2f} s, hunt {:.2f} s, data {:.2f} s, training {:.2f} s, preconditions {:.2f} "
      "s\n",
      c.model, r.precision == Precision::Fp32 ? "" : fmt::format(" in {}", precision_name(r.precision)),
      r.hazards.size(), r.hazards.size() == 1 ? "" : "s", r.program_scan.count(Verdict::MayFail),
      r.program_scan.verdicts.size(), fixed, static_cast<int>(r.hazards.size()) - fixed, r.seconds, r.repair_seconds,
      r.hunt_seconds, r.data_seconds, r.training_seconds, r.precondition_seconds);
  if (!c.fixed_path.empty())
    s += fmt::format("repaired model: {} (checked by onnx::checker; the original is untouched)\n", c.fixed_path);
  else if (!r.changed)
    s += "no repair was applied: no file written\n";
  for (const HazardFix& h : r.hazards) {
    s += fmt::format("\n{} — {}\n", h.site.label(), status_of(h));
    s += fmt::format("  why: {}\n", h.reason);
    if (!h.chain.empty()) s += fmt::format("  chain: {}\n", h.chain);
    if (h.repaired_with && h.made_safe) {
      s += fmt::format("  the repair of #{} makes it safe: no repair of its own\n", h.repaired_with);
    } else if (h.repaired_with) {
      s += fmt::format("  its node is gone: the repair of #{} replaced the expression it was part of\n",
                       h.repaired_with);
    } else if (h.repaired) {
      const RepairEntry& e = repair_entry(h.match.kind);
      s += fmt::format("  repair: {} [{}], recognised as {}\n", e.title, e.id, h.match.pattern);
      s += fmt::format("    ONNX: {}\n", e.onnx);
      s += fmt::format("      added {}; removed {}\n", fmt::join(h.applied.added_nodes, ", "),
                       h.applied.removed_nodes.empty() ? std::string("nothing")
                                                       : fmt::format("{}", fmt::join(h.applied.removed_nodes, ", ")));
      s += fmt::format("    PyTorch: {}\n    TensorFlow: {}\n", e.pytorch, e.tensorflow);
      const std::string k = constant_text(h);
      if (!k.empty()) s += fmt::format("    constant: {}\n", k);
    }
    if (!h.repaired_with) {
      s += fmt::format("  (a) scan:     {}{}\n", check_state_name(h.scan.state),
                       h.scan.detail.empty() ? "" : " — " + h.scan.detail);
      if (h.repaired && !h.local.text.empty()) s += fmt::format("      locally:  {}\n", h.local.text);
    }
    if (h.repaired) {
      s += fmt::format("  (b) hunt:     {} — {}\n", check_state_name(h.hunt.state), h.hunt.detail);
      s += fmt::format("  (c) data:     {} — {}\n", check_state_name(h.data.state), h.data.detail);
      s += fmt::format("  (d) training: {} — {}\n", check_state_name(h.training.state), h.training.detail);
      if (h.witness.state != CheckState::NotRun)
        s += fmt::format("  witness:      {} — {}\n", check_state_name(h.witness.state), h.witness.detail);
    }
    if (h.has_preconditions) {
      s += "  preconditions (RANUM's kind, on the original; boxes that make the scan prove it safe):\n";
      for (const Precondition* p : {&h.preconditions.inputs, &h.preconditions.weights, &h.preconditions.both}) {
        s += fmt::format("    {:<4} {}\n", box_scope_name(p->scope), precondition_text(*p));
        if (p->scope == BoxScope::Both) continue;
        for (bool tf : {false, true}) {
          const std::string code = precondition_code(*p, tf);
          if (code.empty()) continue;
          std::string indented;  // one clamp a line, under the first
          const std::string next_line = "\n" + std::string(tf ? 21 : 18, ' ');
          for (char ch : code) indented += ch == '\n' ? next_line : std::string(1, ch);
          s += fmt::format("         {}: {}\n", tf ? "TensorFlow" : "PyTorch", indented);
        }
      }
    }
    std::vector<std::string> rejected;
    for (const auto& a : h.attempts)
      if (a.outcome != "accepted")
        rejected.push_back(fmt::format("{}{} ({})", repair_entry(a.kind).id,
                                       takes_constant(a.kind) ? " " + number(a.constant) : "", a.outcome));
    if (!rejected.empty()) s += fmt::format("  tried first: {}\n", fmt::join(rejected, "; "));
  }
  if (r.changed) {
    s += fmt::format("\nthe repaired model: {} may fail, {} proved safe, {} propagated only\n",
                     r.fixed_scan.count(Verdict::MayFail), r.fixed_scan.count(Verdict::ProvedSafe),
                     r.fixed_scan.count(Verdict::PropagatedOnly));
    s += fmt::format("  (c) against the original: {} — {}\n", check_state_name(r.data.result.state),
                     r.data.result.detail);
    s += fmt::format("  (d) training: {} — {}", check_state_name(r.training.result.state), r.training.result.detail);
    if (r.original_training.result.state == CheckState::Failed)
      s += fmt::format("; the original's: {}", r.original_training.failure);
    else if (r.original_training.result.state == CheckState::Passed)
      s += fmt::format("; the original's stayed finite ({} steps): the repair is to blame", r.original_training.steps);
    s += "\n";
    if (!r.witness_on_fixed.empty())
      s += fmt::format("  witness: on the original {}; on the repaired model {}\n", r.witness_on_original,
                       r.witness_on_fixed);
  }
  s += "assumed ranges (the proofs hold under these; set them with --assume NAME=LO,HI or the manifest):\n";
  for (const RangeAssumption& a : r.original_scan.assumptions)
    s += fmt::format("  {:<13} {:<24} [{}, {}] ({})\n", a.kind, a.name, number(a.range.lo), number(a.range.hi),
                     a.reason);
  return s;
}

nlohmann::json to_json(const FixResult& r, const FixContext& c) {
  nlohmann::json j;
  j["model"] = c.model;
  j["precision"] = std::string(precision_name(r.precision));
  j["fixed_model"] = c.fixed_path;
  j["seconds"] = r.seconds;
  j["hunt_seconds"] = r.hunt_seconds;
  j["precondition_seconds"] = r.precondition_seconds;
  j["repair_seconds"] = r.repair_seconds;
  j["data_seconds"] = r.data_seconds;
  j["training_seconds"] = r.training_seconds;
  nlohmann::json hz = nlohmann::json::array();
  for (const HazardFix& h : r.hazards) {
    nlohmann::json x{{"id", h.site.id},
                     {"node", h.site.node_name},
                     {"op_type", h.site.op_type},
                     {"failure", std::string(failure_name(h.site.failure))},
                     {"verdict", std::string(verdict_name(h.verdict))},
                     {"operand", {bound_json(h.operand.lo), bound_json(h.operand.hi)}},
                     {"reason", h.reason},
                     {"chain", h.chain},
                     {"status", status_of(h)},
                     {"fixed", h.fixed()},
                     {"repaired", h.repaired},
                     {"repaired_with", h.repaired_with}};
    if (h.repaired) {
      const RepairEntry& e = repair_entry(h.match.kind);
      x["repair"] = {{"id", std::string(e.id)},
                     {"title", std::string(e.title)},
                     {"pattern", h.match.pattern},
                     {"onnx", std::string(e.onnx)},
                     {"pytorch", std::string(e.pytorch)},
                     {"tensorflow", std::string(e.tensorflow)},
                     {"constant", takes_constant(h.match.kind) ? nlohmann::json(h.applied.constant) : nlohmann::json()},
                     {"constant_source", std::string(constant_source(h))},
                     {"added_nodes", h.applied.added_nodes},
                     {"removed_nodes", h.applied.removed_nodes},
                     {"kept_float32", h.applied.kept_float32}};
      x["local_proof"] = {{"any_finite", h.local.any_finite},
                          {"bound", bound_json(h.local.bound)},
                          {"operands", h.local.operands},
                          {"text", h.local.text}};
    }
    x["checks"] = {{"scan", check_json(h.scan)},
                   {"hunt", check_json(h.hunt)},
                   {"data", check_json(h.data)},
                   {"training", check_json(h.training)},
                   {"witness", check_json(h.witness)}};
    nlohmann::json tried = nlohmann::json::array();
    for (const auto& a : h.attempts)
      tried.push_back(
          {{"repair", std::string(repair_entry(a.kind).id)}, {"constant", a.constant}, {"outcome", a.outcome}});
    x["attempts"] = tried;
    if (h.has_preconditions)
      x["preconditions"] = {{"I", precondition_json(h.preconditions.inputs)},
                            {"W", precondition_json(h.preconditions.weights)},
                            {"W+I", precondition_json(h.preconditions.both)}};
    hz.push_back(std::move(x));
  }
  j["hazards"] = std::move(hz);
  j["fixed_scan"] = {{"may_fail", r.fixed_scan.count(Verdict::MayFail)},
                     {"proved_safe", r.fixed_scan.count(Verdict::ProvedSafe)},
                     {"propagated_only", r.fixed_scan.count(Verdict::PropagatedOnly)}};
  j["data"] = {{"check", check_json(r.data.result)}, {"worst", r.data.worst}, {"worst_tensor", r.data.worst_tensor}};
  j["training"] = {{"check", check_json(r.training.result)},
                   {"steps", r.training.steps},
                   {"original", check_json(r.original_training.result)}};
  nlohmann::json as = nlohmann::json::array();
  for (const RangeAssumption& a : r.original_scan.assumptions)
    as.push_back({{"name", a.name},
                  {"kind", a.kind},
                  {"range", {bound_json(a.range.lo), bound_json(a.range.hi)}},
                  {"reason", a.reason}});
  j["assumed_ranges"] = std::move(as);
  return j;
}

nlohmann::json to_sarif(const FixResult& r, const FixContext& c, size_t max_embedded_bytes) {
  // The results are the program's may-fail hazards, as `grist scan --sarif` writes them.
  nlohmann::json sarif = to_sarif(r.program_scan, c.model);
  nlohmann::json& results = sarif["runs"][0]["results"];
  const bool embed = !r.fixed_bytes.empty() && r.fixed_bytes.size() <= max_embedded_bytes;
  const std::string content = embed ? base64(r.fixed_bytes) : std::string();
  size_t k = 0;
  for (const HazardVerdict& v : r.program_scan.verdicts) {
    if (v.verdict != Verdict::MayFail) continue;
    nlohmann::json& result = results[k++];
    for (const HazardFix& h : r.hazards) {
      if (h.site.node_name != v.site.node_name || !h.fixed()) continue;
      const HazardFix* by = &h;
      if (h.repaired_with)
        for (const HazardFix& o : r.hazards)
          if (o.site.id == h.repaired_with) by = &o;
      const RepairEntry& e = repair_entry(by->match.kind);
      const std::string text = fmt::format(
          "{} (verified: scan, hunt, data, training). PyTorch: {}. TensorFlow: {}. The repaired model: {}", e.title,
          e.pytorch, e.tensorflow, c.fixed_path.empty() ? std::string("not written") : c.fixed_path);
      result["message"]["text"] =
          result["message"]["text"].get<std::string>() + " Verified fix: " + std::string(e.title) + ".";
      if (!embed) continue;  // a fix object needs an artifact change
      // The whole model file replaced by the repaired one (every repair of the run is in it).
      nlohmann::json replacement{{"deletedRegion", {{"byteOffset", 0}, {"byteLength", c.model_bytes}}},
                                 {"insertedContent", {{"binary", content}}}};
      result["fixes"] = nlohmann::json::array(
          {{{"description", {{"text", text}}},
            {"artifactChanges", nlohmann::json::array({{{"artifactLocation", {{"uri", c.model}}},
                                                        {"replacements", nlohmann::json::array({replacement})}}})}}});
    }
  }
  return sarif;
}

}  // namespace grist
