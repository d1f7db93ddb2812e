#include "search/interleave.h"

#include <algorithm>

namespace grist {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Status hunt_interleaved(const std::vector<PlannedHazard>& plan, const HuntOptions& o,
                        std::chrono::steady_clock::time_point start, const RunTurn& run_turn, HuntReport& report) {
  // Two rounds: the first lets every hazard's search run from the state the others' left (the program's own
  // training carried on), the second gives the hazards still standing longer turns to go beyond the inputs.
  constexpr int kRounds = 2;
  const double total_s = o.manifest.search.time_limit * 60.0;
  const int64_t max_iterations = o.manifest.search.max_iterations;
  const size_t n = plan.size();
  std::vector<bool> final(n, false);
  std::vector<std::optional<HazardOutcome>> standing(n);  // the last untriggered turn, with every turn's totals
  std::vector<int64_t> iterations_used(n, 0);
  std::vector<double> seconds_used(n, 0), budget_used(n, 0);
  auto plan_index = [&](int site_id) -> std::optional<size_t> {
    for (size_t j = 0; j < n; ++j)
      if (plan[j].site->id == site_id) return j;
    return std::nullopt;
  };
  auto settle = [&](size_t j, HazardOutcome out) {
    final[j] = true;
    report.outcomes.push_back(std::move(out));
    if (o.on_outcome) o.on_outcome(report, report.outcomes.back());
  };
  CarriedState carried;
  for (int round = 1; round <= kRounds && !report.interrupted; ++round) {
    std::vector<size_t> turns;
    for (size_t i = 0; i < n; ++i)
      if (!final[i]) turns.push_back(i);
    if (turns.empty()) break;
    const bool last_round = round == kRounds || turns.size() == 1;
    const double pot = std::max(0.0, total_s - seconds_since(start)) * (last_round ? 1.0 : 0.5);
    const auto round_start = std::chrono::steady_clock::now();
    for (size_t k = 0; k < turns.size() && !report.interrupted; ++k) {
      const size_t i = turns[k];
      if (final[i]) continue;  // a turn before it in this round triggered it
      double shares_left = 0;
      for (size_t m = k; m < turns.size(); ++m)
        if (!final[turns[m]]) shares_left += plan[turns[m]].share;
      Turn turn;
      turn.hazard = i;
      turn.beyond_inputs = round > 1;
      turn.budget_s = std::max(0.0, (pot - seconds_since(round_start)) * plan[i].share / shares_left);
      if (max_iterations > 0) {
        const int64_t left = max_iterations - iterations_used[i];
        turn.max_iterations = last_round ? left : std::min(left, (max_iterations + 1) / 2);
        if (turn.max_iterations <= 0) continue;
      }
      auto outcome = run_turn(turn, carried);
      if (!outcome) return outcome.error();
      HazardOutcome out = std::move(outcome).value();
      report.interrupted = out.stopped == "interrupted";
      iterations_used[i] += out.iterations;
      seconds_used[i] += out.seconds;
      budget_used[i] += turn.budget_s;
      if (out.triggered) {
        const size_t j = plan_index(out.fired_site).value_or(i);
        if (final[j]) {
          // The failure of a hazard already found, again: no finding, and the weights that reach it so readily
          // would keep this hazard's search from its own turn.
          carried = CarriedState{};
          standing[i] = std::move(out);
          standing[i]->triggered = false;
          continue;
        }
        if (j != i) out.site = *plan[j].site;  // found while following another hazard's objective
        if (j == i) {
          out.iterations = iterations_used[i];
          out.seconds = seconds_used[i];
          out.budget_s = budget_used[i];
        }
        settle(j, std::move(out));
        continue;
      }
      if (!out.skipped.empty() || !out.stopped.empty()) {  // its search decided there is nothing more to do
        out.iterations = iterations_used[i];
        out.seconds = seconds_used[i];
        out.budget_s = budget_used[i];
        settle(i, std::move(out));
        continue;
      }
      standing[i] = std::move(out);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (final[i]) continue;
    HazardOutcome out;
    if (standing[i]) out = std::move(*standing[i]);
    out.site = *plan[i].site;
    out.triggered = false;
    out.event = NonFiniteEvent{};  // a repeat of another hazard's failure is kept by that hazard only
    out.witness = Witness{};
    out.fired_site = 0;
    out.iterations = iterations_used[i];
    out.seconds = seconds_used[i];
    out.budget_s = budget_used[i];
    if (!standing[i] && report.interrupted) out.skipped = "not hunted: the hunt was interrupted";
    settle(i, std::move(out));
  }
  return Status::ok();
}

}  // namespace grist
