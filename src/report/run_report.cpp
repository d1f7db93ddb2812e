#include "report/run_report.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace grist {

TensorSummary summarize(const std::string& name, const Tensor& t) {
  TensorSummary s;
  s.name = name;
  s.dtype = t.dtype();
  s.shape = t.shape();
  s.counts = count_nonfinite(t);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_as_double(i);
    if (i < 6) s.head.push_back(v);
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    ++s.finite;
  }
  if (s.finite > 0) {
    s.min = lo;
    s.max = hi;
    s.mean = sum / static_cast<double>(s.finite);
  }
  return s;
}

namespace {

std::string line_for(const TensorSummary& s) {
  std::string out = fmt::format("  {:<24} {:<8} {:<16}", s.name, dtype_name(s.dtype), s.shape.str());
  if (s.finite > 0) out += fmt::format(" min {:.6g}  max {:.6g}  mean {:.6g}", s.min, s.max, s.mean);
  if (!s.counts.all_finite())
    out += fmt::format("  NON-FINITE: {} NaN, {} +Inf, {} -Inf", s.counts.nan, s.counts.pos_inf, s.counts.neg_inf);
  return out;
}

std::string event_text(const NonFiniteEvent& e, const char* pass) {
  if (!e.found) return fmt::format("{}: every value finite\n", pass);
  std::string out = fmt::format("{}: first non-finite value produced by node '{}' ({}{})\n", pass, e.node_name,
                                e.op_type, e.in_backward ? " gradient" : "");
  out += fmt::format("  {} '{}' {} has {} NaN, {} +Inf, {} -Inf; first at [{}] = {}\n",
                     e.in_backward ? "gradient of input" : "output", e.value_name, e.shape.str(), e.counts.nan,
                     e.counts.pos_inf, e.counts.neg_inf, fmt::join(e.first_index, ", "), e.first_value);
  for (const auto& in : e.inputs) {
    if (in.has_value) {
      out += fmt::format("  input '{}' {} there: {}\n", in.name, in.shape.str(), in.value);
    } else {
      out += fmt::format("  input '{}' {} spans [{}, {}]\n", in.name, in.shape.str(), in.min, in.max);
    }
  }
  if (const std::string note = e.rounding_note(); !note.empty())
    out += fmt::format("  rounding: {}\n", note.substr(2));
  return out;
}

}  // namespace

std::string to_text(const RunReport& r) {
  std::string out = fmt::format("model {}\n", r.model);
  out += "inputs:\n";
  for (const auto& s : r.inputs) out += line_for(s) + "\n";
  out += "outputs:\n";
  for (const auto& s : r.outputs) out += line_for(s) + "\n";
  out += event_text(r.forward, "forward");
  if (r.ran_backward) out += event_text(r.backward, fmt::format("backward from '{}'", r.backward_from).c_str());
  if (r.ran_backward && r.masked_backward.found)
    out += fmt::format("  masked, did not propagate: {}\n", r.masked_backward.describe());
  out += fmt::format("time: forward {:.3f} ms", r.forward_ms);
  if (r.ran_backward) out += fmt::format(", backward {:.3f} ms", r.backward_ms);
  out += "\n";
  return out;
}

nlohmann::json to_json(const TensorSummary& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["dtype"] = std::string(dtype_name(s.dtype));
  j["shape"] = s.shape.to_vector();
  j["nan"] = s.counts.nan;
  j["pos_inf"] = s.counts.pos_inf;
  j["neg_inf"] = s.counts.neg_inf;
  if (s.finite > 0) {
    j["min"] = s.min;
    j["max"] = s.max;
    j["mean"] = s.mean;
  }
  return j;
}

nlohmann::json to_json(const NonFiniteEvent& e) {
  nlohmann::json j;
  j["found"] = e.found;
  if (!e.found) return j;
  j["pass"] = e.in_backward ? "backward" : "forward";
  if (e.masked) j["masked"] = true;
  j["node"] = e.node_name;
  j["op_type"] = e.op_type;
  j["value"] = e.value_name;
  j["shape"] = e.shape.to_vector();
  j["nan"] = e.counts.nan;
  j["pos_inf"] = e.counts.pos_inf;
  j["neg_inf"] = e.counts.neg_inf;
  j["first_index"] = e.first_index;
  // JSON has no NaN/Inf literals: write the offending value as a string.
  j["first_value"] = fmt::format("{}", e.first_value);
  nlohmann::json ins = nlohmann::json::array();
  for (const auto& in : e.inputs) {
    nlohmann::json x{{"name", in.name}, {"shape", in.shape.to_vector()}};
    if (in.has_value) x["value_at_index"] = fmt::format("{}", in.value);
    x["min"] = in.min;
    x["max"] = in.max;
    ins.push_back(x);
  }
  j["inputs"] = ins;
  if (e.format != DType::Undefined) {
    j["format"] = e.format == DType::Float16 ? "float16" : "bfloat16";
    j["finite_in_float32"] = e.finite_in_float32;
    if (!e.zero_input.empty())
      j["zero_from_rounding"] = {{"input", e.zero_input}, {"flushed_value", e.zero_by_value},
                                 {"node", e.zero_by_node}, {"op_type", e.zero_by_op}};
  }
  return j;
}

nlohmann::json to_json(const RunReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  for (const auto& s : r.inputs) j["inputs"].push_back(to_json(s));
  for (const auto& s : r.outputs) j["outputs"].push_back(to_json(s));
  j["forward"] = to_json(r.forward);
  if (r.ran_backward) {
    j["backward_from"] = r.backward_from;
    j["backward"] = to_json(r.backward);
    if (r.masked_backward.found) j["masked_backward"] = to_json(r.masked_backward);
  }
  j["forward_ms"] = r.forward_ms;
  if (r.ran_backward) j["backward_ms"] = r.backward_ms;
  return j;
}

}  // namespace grist
