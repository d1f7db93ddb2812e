#include "report/hunt_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "report/run_report.h"

namespace grist {

namespace {

const HazardSite* site_by_id(const HuntReport& r, int id) {
  for (const auto& s : r.hazards)
    if (s.id == id) return &s;
  return nullptr;
}

std::string chain_text(const Graph& g, const HazardOutcome& o, const HuntContext& c) {
  if (o.event.node < 0) return "";
  ValueId target = c.loss.empty() ? (g.outputs.empty() ? kNoValue : g.outputs[0]) : g.find_value(c.loss);
  auto path = g.path_to(o.event.node, target);
  if (path.empty()) return "";
  std::vector<std::string> names;
  for (int32_t n : path) names.push_back(fmt::format("{} '{}'", g.nodes[static_cast<size_t>(n)].op_type,
                                                     g.nodes[static_cast<size_t>(n)].name));
  names.push_back(fmt::format("'{}'", g.value(target).name));
  return fmt::format("{}", fmt::join(names, " -> "));
}

std::string class_text(const HazardOutcome& o) {
  switch (o.finding_class) {
    case FindingClass::InputReached:
      return "input-reached: these inputs fail at the weights the model's own training produced in this run";
    case FindingClass::TrainingReached:
      return fmt::format("training-reached: after {} of the model's own optimizer steps on crafted training batches "
                         "(from iteration {}; data within the inputs' ranges, labels from the label set); the witness "
                         "replays them{}",
                         o.witness.training.size(), o.training_from,
                         o.crafting_attempts > 1
                             ? fmt::format(" (attempt {}: the {} before it were undone)", o.crafting_attempts,
                                           o.crafting_attempts - 1)
                             : "");
    case FindingClass::WeightsPerturbed: {
      std::string s = "weights-perturbed: only moving the weights directly reached it; no training run was shown to";
      for (const auto& m : o.weight_moves) {
        s += fmt::format("\n    '{}' moved {:.3g} RMS in {} search steps", m.name, m.moved_rms, m.searched_steps);
        if (m.initial_rms > 0) s += fmt::format(" ({:.3g}x its initial RMS {:.3g})", m.moved_rms / m.initial_rms,
                                                m.initial_rms);
        s += m.trained_steps > 0
                 ? fmt::format("; the model's own training moved it {:.3g} RMS in {} steps", m.trained_rms,
                               m.trained_steps)
                 : "; the model's own training never moved it";
      }
      return s;
    }
  }
  return "";
}

std::string masked_text(const HazardOutcome& o) {
  if (o.masked_count == 0) return "";
  return fmt::format("  masked, did not propagate: {} (first at iteration {}, in {} pass{}); no weight's or input's "
                     "gradient became non-finite, so it is not a trigger\n",
                     o.masked.describe(), o.masked_iteration, o.masked_count, o.masked_count == 1 ? "" : "es");
}

// amp-* training: the steps loss scaling skipped (its normal behaviour), and a collapsed scale (a failure).
std::string loss_scaling_text(const HazardOutcome& o) {
  if (o.loss_scale <= 0 && !o.scale_collapsed) return "";
  if (o.scale_collapsed)
    return fmt::format("  loss scaling: the gradient stayed non-finite while the scale backed off to {:g} after {} "
                       "skipped step{}: a genuine failure, not an overflow loss scaling absorbs\n",
                       o.loss_scale, o.scaler_skipped_steps, o.scaler_skipped_steps == 1 ? "" : "s");
  return fmt::format("  loss scaling: {} training step{} skipped on an inf/NaN gradient (the scaler's normal "
                     "behaviour, not a trigger); scale {:g}\n",
                     o.scaler_skipped_steps, o.scaler_skipped_steps == 1 ? "" : "s", o.loss_scale);
}

}  // namespace

nlohmann::json to_json(const WeightMove& m) {
  return {{"weight", m.name},           {"moved_rms", m.moved_rms},         {"initial_rms", m.initial_rms},
          {"trained_rms", m.trained_rms}, {"trained_steps", m.trained_steps}, {"searched_steps", m.searched_steps}};
}

std::string violated_condition(const HuntReport& r, const HazardOutcome& o) {
  const NonFiniteEvent& e = o.event;
  const HazardSite* s = site_by_id(r, o.fired_site);
  if (s && !e.in_backward && s->failure == Failure::HalfOverflow)
    return fmt::format("{} at [{}] = {}", s->condition, fmt::join(e.first_index, ", "), e.first_value);
  if (s && !e.in_backward) {
    const auto k = static_cast<size_t>(s->operand);
    if (k < e.inputs.size() && e.inputs[k].has_value)
      return fmt::format("{} at [{}] = {}", s->condition, fmt::join(e.first_index, ", "), e.inputs[k].value);
    return s->condition;
  }
  return e.describe();
}

std::string hazards_text(const Graph& g, const HuntReport& r, const HuntContext& c) {
  std::string out;
  out += fmt::format("model {}: {} hazard{} ", c.model, r.hazards.size(), r.hazards.size() == 1 ? "" : "s");
  if (r.hazards.empty()) return out + "- no op that can produce NaN/Inf; nothing to hunt\n";
  out += "\n";
  for (const auto& s : r.hazards)
    out += fmt::format("  {}  objective {} on '{}'{}\n", s.label(), objective_name(s.objective),
                       g.value(s.objective_value).name, s.pattern.empty() ? "" : "  [" + s.pattern + "]");
  return out;
}

std::string outcome_text(const Graph& g, const HuntReport& r, const HazardOutcome& o, const HuntContext& c,
                         const WitnessFiles* w) {
  std::string out = "\n" + o.site.label() + "\n";
  if (!o.skipped.empty()) return out + fmt::format("  not hunted: {}\n", o.skipped);
  if (!o.triggered) {
    out += fmt::format("  not triggered: {} iterations in {:.2f} s (budget {:.1f} s), last objective {:.6g}{}\n",
                       o.iterations, o.seconds, o.budget_s, o.objective, o.stopped.empty() ? "" : "; " + o.stopped);
    return out + masked_text(o) + loss_scaling_text(o);
  }
  out += fmt::format("  TRIGGERED ({}) at iteration {} after {:.3f} s ({:.3f} s since start), {} pass, strategy {}{}\n",
                     finding_class_name(o.finding_class), o.iterations, o.seconds, o.seconds_since_start,
                     pass_name(o.pass), o.strategy,
                     o.weights_from > 0 ? fmt::format(" (weights stepped from iteration {})", o.weights_from) : "");
  out += fmt::format("  class: {}\n", class_text(o));
  if (o.weights_race)
    out += fmt::format("  race: the weights race found it (weights stepped from iteration {}, on a second thread); the "
                       "inputs and training, beside it, had reached nothing of their own in {} iterations\n",
                       o.weights_from, o.course_iterations);
  // The training twin's finding after its crafted attempts were undone is its own inputs' and training's.
  if (o.training_race)
    out += fmt::format("  race: the training race found it ({}, on a second thread); the inputs, beside it, had "
                       "reached nothing of their own in {} iterations\n",
                       o.training_from > 0 ? fmt::format("crafted training batches from iteration {}", o.training_from)
                                           : std::string("by its inputs and the program's own training, its crafted "
                                                         "attempts undone"),
                       o.course_iterations);
  if (o.race_iterations > 0)
    out += fmt::format("  race: the weights race triggered first, weights-perturbed after {:.3f} s (iteration {}); "
                       "this finding of a better class is reported instead\n",
                       o.race_seconds, o.race_iterations);
  out += fmt::format("  producer: {} '{}' -> '{}' {}: {} NaN, {} +Inf, {} -Inf\n",
                     o.event.op_type + (o.event.in_backward && o.pass != TriggerPass::OptimizerStep ? " gradient" : ""),
                     o.event.node_name, o.event.value_name, o.event.shape.str(), o.event.counts.nan,
                     o.event.counts.pos_inf, o.event.counts.neg_inf);
  out += fmt::format("  violated: {}\n", violated_condition(r, o));
  if (const std::string note = o.event.rounding_note(); !note.empty())
    out += fmt::format("  rounding: {}\n", note.substr(2));
  const HazardSite* fired = site_by_id(r, o.fired_site);
  if (o.fired_site != o.site.id)
    out += fired ? fmt::format("  note: hunting {} triggered hazard {} first\n", o.site.label(), fired->label())
                 : "  note: the producer is not one of the listed hazard sites\n";
  std::string chain = chain_text(g, o, c);
  if (!chain.empty()) out += fmt::format("  chain: {}\n", chain);
  if (fired && !fired->fix_hint.empty()) out += fmt::format("  fix: {}\n", fired->fix_hint);
  if (w) out += fmt::format("  witness: {}\n  replay: grist replay {}\n", w->npz, w->json);
  return out + masked_text(o) + loss_scaling_text(o);
}

std::string summary_text(const HuntReport& r) {
  int triggered = 0, skipped = 0;
  int by_class[3] = {0, 0, 0};
  std::vector<std::string> producers, not_hunted;
  for (const auto& o : r.outcomes) {
    triggered += o.triggered;
    skipped += !o.skipped.empty();
    if (!o.skipped.empty() && r.interrupted && o.skipped.find("interrupted") != std::string::npos)
      not_hunted.push_back(fmt::format("#{}", o.site.id));
    if (!o.triggered) continue;
    ++by_class[static_cast<int>(o.finding_class)];
    if (std::find(producers.begin(), producers.end(), o.event.node_name) == producers.end())
      producers.push_back(o.event.node_name);
  }
  const size_t hunted = r.outcomes.size() - static_cast<size_t>(skipped);
  std::string out = fmt::format("\n{} of {} hunted hazard{} triggered in {:.2f} s (interval scan {:.3f} s)", triggered,
                                hunted, hunted == 1 ? "" : "s", r.seconds, r.scan_seconds);
  out += skipped ? fmt::format("; {} not hunted\n", skipped) : "\n";
  if (r.interrupted)
    out += fmt::format("interrupted: the search stopped early{}\n",
                       not_hunted.empty() ? "" : fmt::format("; not hunted yet: {}", fmt::join(not_hunted, ", ")));
  if (triggered > 0) {
    std::vector<std::string> parts;
    for (FindingClass k : {FindingClass::InputReached, FindingClass::TrainingReached, FindingClass::WeightsPerturbed})
      if (by_class[static_cast<int>(k)] > 0)
        parts.push_back(fmt::format("{} {}", by_class[static_cast<int>(k)], finding_class_name(k)));
    out += fmt::format("findings: {}; {} distinct producing node{}\n", fmt::join(parts, ", "), producers.size(),
                       producers.size() == 1 ? "" : "s");
  }
  return out;
}

std::string to_text(const Graph& g, const HuntReport& r, const HuntContext& c) {
  std::string out = hazards_text(g, r, c);
  if (r.hazards.empty()) return out;
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    auto w = c.witnesses.find(static_cast<int>(i));
    out += outcome_text(g, r, r.outcomes[i], c, w == c.witnesses.end() ? nullptr : &w->second);
  }
  return out + summary_text(r);
}

nlohmann::json hazards_json(const Graph& g, const HuntReport& r) {
  nlohmann::json hz = nlohmann::json::array();
  for (const auto& s : r.hazards)
    hz.push_back({{"id", s.id},
                  {"node", s.node_name},
                  {"op", s.op_type},
                  {"condition", s.condition},
                  {"failure", std::string(failure_name(s.failure))},
                  {"objective", std::string(objective_name(s.objective))},
                  {"objective_on", g.value(s.objective_value).name},
                  {"pattern", s.pattern},
                  {"fix", s.fix_hint}});
  return hz;
}

nlohmann::json outcome_json(const Graph& g, const HuntReport& r, const HazardOutcome& o, const HuntContext& c,
                            const WitnessFiles* w) {
  nlohmann::json x{{"hazard", o.site.id}, {"triggered", o.triggered}, {"iterations", o.iterations},
                   {"seconds", o.seconds}, {"seconds_since_start", o.seconds_since_start},
                   {"budget_seconds", o.budget_s}, {"objective", o.objective}, {"strategy", o.strategy},
                   {"weights_from_iteration", o.weights_from}, {"training_from_iteration", o.training_from},
                   {"crafting_attempts", o.crafting_attempts}};
  if (!o.skipped.empty()) x["skipped"] = o.skipped;
  if (o.weights_race) x["weights_race"] = {{"course_iterations", o.course_iterations}};
  if (o.training_race) x["training_race"] = {{"course_iterations", o.course_iterations}};
  if (o.race_iterations > 0) x["race_first"] = {{"seconds", o.race_seconds}, {"iterations", o.race_iterations}};
  if (!o.stopped.empty()) x["stopped"] = o.stopped;
  if (o.masked_count > 0)
    x["masked"] = {{"producer", to_json(o.masked)}, {"iteration", o.masked_iteration}, {"passes", o.masked_count}};
  if (o.loss_scale > 0 || o.scale_collapsed)
    x["loss_scaling"] = {{"skipped_steps", o.scaler_skipped_steps}, {"scale", o.loss_scale},
                         {"collapsed", o.scale_collapsed}};
  if (o.triggered) {
    x["pass"] = std::string(pass_name(o.pass));
    x["class"] = std::string(finding_class_name(o.finding_class));
    x["training_steps"] = o.training_steps;
    if (o.finding_class == FindingClass::TrainingReached) x["crafted_training_steps"] = o.witness.training.size();
    if (!o.weight_moves.empty()) {
      x["weight_moves"] = nlohmann::json::array();
      for (const auto& m : o.weight_moves) x["weight_moves"].push_back(to_json(m));
    }
    x["producer"] = to_json(o.event);
    x["fired_hazard"] = o.fired_site;
    x["violated"] = violated_condition(r, o);
    x["chain"] = chain_text(g, o, c);
    if (w) x["witness"] = {{"npz", w->npz}, {"json", w->json}};
  }
  return x;
}

nlohmann::json summary_json(const HuntReport& r) {
  int triggered = 0, by_class[3] = {0, 0, 0};
  std::vector<std::string> producers;
  for (const auto& o : r.outcomes) {
    if (!o.triggered) continue;
    ++triggered;
    ++by_class[static_cast<int>(o.finding_class)];
    if (std::find(producers.begin(), producers.end(), o.event.node_name) == producers.end())
      producers.push_back(o.event.node_name);
  }
  return {{"seconds", r.seconds},
          {"scan_seconds", r.scan_seconds},
          {"outcomes", r.outcomes.size()},
          {"triggered", triggered},
          {"input_reached", by_class[0]},
          {"training_reached", by_class[1]},
          {"weights_perturbed", by_class[2]},
          {"distinct_producers", producers.size()},
          {"interrupted", r.interrupted}};
}

nlohmann::json to_json(const Graph& g, const HuntReport& r, const HuntContext& c) {
  nlohmann::json j;
  j["model"] = c.model;
  j["seconds"] = r.seconds;
  j["scan_seconds"] = r.scan_seconds;
  j["hazards"] = hazards_json(g, r);
  j["outcomes"] = nlohmann::json::array();
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    auto w = c.witnesses.find(static_cast<int>(i));
    j["outcomes"].push_back(outcome_json(g, r, r.outcomes[i], c, w == c.witnesses.end() ? nullptr : &w->second));
  }
  j["summary"] = summary_json(r);
  return j;
}

}  // namespace grist
