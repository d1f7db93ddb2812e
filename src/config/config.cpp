#include "config/config.h"

#include <algorithm>
#include <cmath>

namespace grist {

double SearchConfig::epsilon_at(int64_t iteration) const {
  if (!decay || decay_steps <= 0) return change;
  double e = change * std::pow(decay_rate, static_cast<double>(iteration / decay_steps));
  return std::max(e, change * 1e-4);
}

Result<bool> parse_bool(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  return make_error("'{}' is not a boolean (True or False)", s);
}

Result<Variant> parse_variant(const std::string& s) {
  if (s == "grist") return Variant::Grist;
  if (s == "grist-ns" || s == "grist_ns") return Variant::GristNs;
  if (s == "original") return Variant::Original;
  if (s == "random") return Variant::Random;
  return make_error("unknown variant '{}' (expected grist, grist-ns, original or random)", s);
}

Result<SwitchScore> parse_switch_score(const std::string& s) {
  if (s == "score") return SwitchScore::Score;
  if (s == "fifo") return SwitchScore::Fifo;
  return make_error("unknown switch score '{}' (expected score or fifo)", s);
}

Result<StepRule> parse_step_rule(const std::string& s) {
  if (s == "sign") return StepRule::Sign;
  if (s == "adam") return StepRule::Adam;
  if (s == "line") return StepRule::Line;
  return make_error("unknown step '{}' (expected sign, adam or line)", s);
}

const char* step_rule_name(StepRule s) {
  switch (s) {
    case StepRule::Sign: return "sign";
    case StepRule::Adam: return "adam";
    case StepRule::Line: return "line";
  }
  return "?";
}

namespace {
Result<double> parse_number(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return make_error("'{}' is not a number", s);
}
}  // namespace

Status apply_experiments_conf(const IniFile& ini, const std::string& source, SearchConfig& c) {
  for (const auto& [section, keys] : ini) {
    GRIST_CHECK(section == "parameter", "{}: unknown section [{}] (experiments.conf has only [parameter])", source,
                section);
    for (const auto& item : keys) {
      // Named references, not structured bindings: clang 14 cannot capture those in a lambda.
      const std::string& key = item.first;
      const IniEntry& entry = item.second;
      auto where = [&](const std::string& why) {
        return make_error("{}:{}: key '{}': {}", source, entry.line, key, why);
      };
      auto number = [&](double lo, double hi) -> Result<double> {
        auto v = parse_number(entry.value);
        if (!v) return where(v.message());
        if (*v < lo || *v > hi) return where(fmt::format("{} is outside [{}, {}]", *v, lo, hi));
        return v;
      };
      if (key == "time_limit") {
        auto v = number(0, 1e9);
        if (!v) return v.error();
        GRIST_CHECK(*v > 0, "{}:{}: key 'time_limit': must be positive (minutes)", source, entry.line);
        c.time_limit = *v;
      } else if (key == "change") {
        auto v = number(0, 1e30);
        if (!v) return v.error();
        GRIST_CHECK(*v > 0, "{}:{}: key 'change': must be positive", source, entry.line);
        c.change = *v;
      } else if (key == "decay" || key == "switch_data") {
        auto v = parse_bool(entry.value);
        if (!v) return where(v.message());
        (key == "decay" ? c.decay : c.switch_data) = *v;
      } else if (key == "decay_steps") {
        auto v = number(1, 1e15);
        if (!v) return v.error();
        c.decay_steps = static_cast<int64_t>(*v);
      } else if (key == "decay_rate") {
        auto v = number(0, 1);
        if (!v) return v.error();
        c.decay_rate = *v;
      } else if (key == "drop_rate") {
        auto v = number(0, 1);
        if (!v) return v.error();
        c.drop_rate = *v;
      } else if (key == "delta_type") {
        GRIST_CHECK(entry.value == "grist", "{}:{}: key 'delta_type': only 'grist' (sign × change) exists, got '{}'",
                    source, entry.line, entry.value);
        c.delta_type = entry.value;
      } else {
        return where("unknown key (expected time_limit, change, decay, decay_steps, decay_rate, delta_type, "
                     "switch_data or drop_rate)");
      }
    }
  }
  return Status::ok();
}

}  // namespace grist
