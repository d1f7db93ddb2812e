#include "report/scan_report.h"

#include <fmt/format.h>

namespace grist {

namespace {

std::string interval_text(Interval i, bool nan) {
  return fmt::format("[{:.6g}, {:.6g}]{}", i.lo, i.hi, nan ? " or NaN" : "");
}

nlohmann::json bound_json(double v) {
  if (std::isfinite(v)) return v;
  return v > 0 ? "inf" : "-inf";
}

// The verdict as a short label: "proved safe", "safe as stated", "safe 10 steps", "may fail", ...
std::string verdict_label(const HazardVerdict& v) {
  if (v.verdict != Verdict::ProvedSafe) return std::string(verdict_name(v.verdict));
  switch (v.scope) {
    case Scope::EveryRun: return "proved safe";
    case Scope::StatedWeights: return "safe as stated";
    case Scope::Steps: return fmt::format("safe {}{} steps", v.steps_capped ? ">=" : "", v.safe_steps);
    case Scope::InitialWeights: return "safe initially";
  }
  return "?";
}

// What a verdict's proof covers, or why it is open, in words.
std::string scope_text(const HazardVerdict& v) {
  if (v.verdict == Verdict::ProvedSafe) {
    switch (v.scope) {
      case Scope::EveryRun: return v.trained_operand ? "for every value the trained weights can take" : "";
      case Scope::StatedWeights: return "for the weight ranges you stated, not for every training run";
      case Scope::Steps:
        return fmt::format("for the first {} steps of the training's optimizer{}", v.safe_steps,
                           v.steps_capped ? " (at least: the search stopped there)" : "");
      case Scope::InitialWeights: return "at the initial weights only";
    }
  }
  if (v.verdict == Verdict::MayFail && v.trained_operand && !v.fails_initially)
    return "safe at the initial weights; the training step can move the weights there";
  return "";
}

// The 16-bit format the report is about: the precision's, else the one the model stores values in.
DType report_format(const ScanReport& r) {
  const DType p = precision_format(r.precision);
  return p != DType::Undefined ? p : r.stored_format;
}

std::string_view format_word(const ScanReport& r) {
  return report_format(r) == DType::Float16 ? "float16" : "bfloat16";
}

// Under a 16-bit format, what the format changes: "safe in float32, may fail in float16" ("" otherwise).
std::string format_verdict(const ScanReport& r, const HazardVerdict& v) {
  if (report_format(r) == DType::Undefined || v.verdict == Verdict::ProvedSafe || !v.safe_in_float32) return "";
  return fmt::format("safe in float32, {} in {}", verdict_name(v.verdict), format_word(r));
}

}  // namespace

std::string to_text(const ScanReport& r, const std::string& model) {
  std::string s = fmt::format("grist scan {}: {} hazards: {} may fail, {} proved safe, {} propagated only ({:.1f} ms)\n",
                              model, r.verdicts.size(), r.count(Verdict::MayFail), r.count(Verdict::ProvedSafe),
                              r.count(Verdict::PropagatedOnly), r.seconds * 1e3);
  if (report_format(r) != DType::Undefined) {
    int format_only = 0;
    for (const HazardVerdict& v : r.verdicts) format_only += !format_verdict(r, v).empty();
    const std::string mode = r.precision != Precision::Fp32
                                 ? fmt::format("precision {}", precision_name(r.precision))
                                 : fmt::format("model stored in {}", format_word(r));
    s += fmt::format("{}: intervals rounded to {} where the run rounds; {} hazard{} safe in float32 may fail in {}\n",
                     mode, format_word(r), format_only, format_only == 1 ? "" : "s", format_word(r));
  }
  if (!r.training.empty()) {
    int after_training = 0;
    for (const HazardVerdict& v : r.verdicts)
      after_training += v.verdict == Verdict::MayFail && v.trained_operand && !v.fails_initially;
    s += fmt::format("training: {}\n  proofs: {} for every run, {} for stated weight ranges, {} for a number of "
                     "steps; {} may fail only once training moves the weights\n",
                     r.training, r.count(Verdict::ProvedSafe, Scope::EveryRun),
                     r.count(Verdict::ProvedSafe, Scope::StatedWeights), r.count(Verdict::ProvedSafe, Scope::Steps),
                     after_training);
  }
  for (const HazardVerdict& v : r.verdicts) {
    s += fmt::format("  {:<16} {}: operand {}", verdict_label(v), v.site.label(),
                     interval_text(v.operand, v.operand_may_be_nan));
    if (v.verdict == Verdict::MayFail) s += fmt::format(" meets {}", v.danger);
    if (const std::string scope = scope_text(v); !scope.empty()) s += " — " + scope;
    if (const std::string fv = format_verdict(r, v); !fv.empty()) s += " — " + fv;
    if (v.verdict == Verdict::PropagatedOnly) {
      std::vector<std::string> ids;
      for (int id : v.upstream) ids.push_back(fmt::format("#{}", id));
      s += fmt::format(" (open because of {})", fmt::join(ids, ", "));
    }
    s += "\n";
    if (v.verdict == Verdict::MayFail && !v.site.fix_hint.empty()) s += fmt::format("{:19}fix: {}\n", "", v.site.fix_hint);
  }
  s += "assumed ranges (set them with --assume NAME=LO,HI, a manifest's [inputs.NAME] range or [scan] trained_weights, "
       "or train only some weights):\n";
  for (const RangeAssumption& a : r.assumptions)
    s += fmt::format("  {:<13} {:<24} {} ({})\n", a.kind, a.name, interval_text(a.range, false), a.reason);
  if (!r.unbounded_nodes.empty())
    s += fmt::format("ops without an interval transfer (outputs unbounded): {}\n", fmt::join(r.unbounded_nodes, ", "));
  return s;
}

nlohmann::json to_json(const ScanReport& r, const std::string& model) {
  nlohmann::json j;
  j["model"] = model;
  j["seconds"] = r.seconds;
  j["precision"] = std::string(precision_name(r.precision));
  if (r.stored_format != DType::Undefined) j["stored_format"] = std::string(format_word(r));
  if (!r.training.empty()) j["training"] = {{"trained_weights", r.trained_weights}, {"bound", r.training}};
  j["summary"] = {{"hazards", r.verdicts.size()},
                  {"may_fail", r.count(Verdict::MayFail)},
                  {"proved_safe", r.count(Verdict::ProvedSafe)},
                  {"propagated_only", r.count(Verdict::PropagatedOnly)}};
  nlohmann::json hz = nlohmann::json::array();
  for (const HazardVerdict& v : r.verdicts) {
    nlohmann::json h{{"id", v.site.id},
                     {"node", v.site.node_name},
                     {"op_type", v.site.op_type},
                     {"failure", failure_name(v.site.failure)},
                     {"failure_id", failure_id(v.site.failure)},
                     {"condition", v.site.condition},
                     {"verdict", verdict_name(v.verdict)},
                     {"scope", scope_name(v.scope)},
                     {"trained_operand", v.trained_operand},
                     {"operand", {bound_json(v.operand.lo), bound_json(v.operand.hi)}},
                     {"operand_may_be_nan", v.operand_may_be_nan},
                     {"danger", v.danger},
                     {"pattern", v.site.pattern},
                     {"fix_hint", v.site.fix_hint}};
    if (!v.upstream.empty()) h["upstream"] = v.upstream;
    if (v.verdict != Verdict::ProvedSafe) {
      h.erase("scope");
      h["fails_at_initial_weights"] = v.fails_initially;
    }
    if (v.verdict == Verdict::ProvedSafe && v.scope == Scope::Steps) {
      h["safe_steps"] = v.safe_steps;
      h["safe_steps_at_least"] = v.steps_capped;
    }
    if (const std::string scope = scope_text(v); !scope.empty()) h["scope_text"] = scope;
    if (report_format(r) != DType::Undefined) {
      h["safe_in_float32"] = v.safe_in_float32;
      if (const std::string fv = format_verdict(r, v); !fv.empty()) h["format_verdict"] = fv;
    }
    hz.push_back(std::move(h));
  }
  j["hazards"] = std::move(hz);
  nlohmann::json as = nlohmann::json::array();
  for (const RangeAssumption& a : r.assumptions)
    as.push_back({{"name", a.name}, {"kind", a.kind}, {"range", {bound_json(a.range.lo), bound_json(a.range.hi)}},
                  {"reason", a.reason}});
  j["assumed_ranges"] = std::move(as);
  j["unbounded_nodes"] = r.unbounded_nodes;
  return j;
}

nlohmann::json to_sarif(const ScanReport& r, const std::string& model) {
  // One rule per failure kind that has a may-fail result (a stable id without spaces and a readable name);
  // each result points at the model file, with the node's 1-based position in the graph's execution order as
  // its line (said in the rule's help), and at the node as a logical location.
  nlohmann::json rules = nlohmann::json::array();
  std::vector<std::string> rule_ids;
  nlohmann::json results = nlohmann::json::array();
  for (const HazardVerdict& v : r.verdicts) {
    if (v.verdict != Verdict::MayFail) continue;
    const std::string id = fmt::format("grist/{}", failure_id(v.site.failure));
    if (std::find(rule_ids.begin(), rule_ids.end(), id) == rule_ids.end()) {
      rule_ids.push_back(id);
      rules.push_back(
          {{"id", id},
           {"name", std::string(failure_name(v.site.failure))},
           {"shortDescription", {{"text", fmt::format("{} can produce NaN/Inf", v.site.op_type)}}},
           {"fullDescription",
            {{"text", fmt::format("The interval analysis cannot exclude {} at this node for the assumed input and "
                                  "weight ranges.", failure_name(v.site.failure))}}},
           {"help",
            {{"text", fmt::format("{} The location's line is the node's 1-based position in the model graph's "
                                  "execution order (an ONNX file has no source lines); its logical location names "
                                  "the node.",
                                  v.site.fix_hint)}}},
           {"defaultConfiguration", {{"level", "warning"}}}});
    }
    const std::string scope = scope_text(v);
    const std::string text = fmt::format("{}: operand {} meets {}{}. Fix: {}", v.site.label(),
                                         interval_text(v.operand, v.operand_may_be_nan), v.danger,
                                         scope.empty() ? "" : " (" + scope + ")", v.site.fix_hint);
    nlohmann::json location{
        {"physicalLocation",
         {{"artifactLocation", {{"uri", model}}}, {"region", {{"startLine", v.site.node + 1}}}}},
        {"logicalLocations",
         nlohmann::json::array({{{"name", v.site.node_name},
                                 {"fullyQualifiedName", fmt::format("{}/{}", model, v.site.node_name)},
                                 {"kind", "function"}}})}};
    results.push_back({{"ruleId", id},
                       {"ruleIndex", std::find(rule_ids.begin(), rule_ids.end(), id) - rule_ids.begin()},
                       {"level", "warning"},
                       {"message", {{"text", text}}},
                       {"locations", nlohmann::json::array({location})}});
  }
  nlohmann::json run{{"tool", {{"driver", {{"name", "grist"}, {"version", "0.1.0"}, {"rules", rules}}}}},
                     {"artifacts", nlohmann::json::array({{{"location", {{"uri", model}}}}})},
                     {"results", results}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", nlohmann::json::array({run})}};
}

}  // namespace grist
