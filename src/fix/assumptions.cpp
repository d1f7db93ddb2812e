#include "fix/assumptions.h"

#include <algorithm>
#include <cmath>

namespace grist {

namespace {

Interval hull_of(const Tensor& t) {
  Interval h{kInf, -kInf};
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    if (std::isnan(v)) continue;
    h = {std::min(h.lo, v), std::max(h.hi, v)};
  }
  return h;
}

}  // namespace

std::vector<std::string> trained_weights(const Graph& g, const Manifest* m) {
  std::vector<std::string> out;
  if (m && !m->train.enabled) return out;
  for (ValueId id : g.initializers) {
    const Value& v = g.value(id);
    if (!v.initial || !is_float(v.initial->dtype()) || v.initial->numel() <= 1) continue;
    const bool listed = !m || m->train.all_params ||
                        std::find(m->train.params.begin(), m->train.params.end(), v.name) != m->train.params.end();
    if (listed) out.push_back(v.name);
  }
  return out;
}

std::map<std::string, StatedRange> trained_weight_ranges(const Graph& g, const Manifest* m) {
  std::map<std::string, StatedRange> out;
  for (const std::string& name : trained_weights(g, m)) {
    const Tensor& init = *g.value(g.find_value(name)).initial;
    if (m && m->scan_trained_weights) {
      out[name] = {{m->scan_trained_weights->first, m->scan_trained_weights->second},
                   "manifest [scan] trained_weights"};
      continue;
    }
    const Interval h = hull_of(init);
    if (h.lo == 0 && h.hi == 0) {
      out[name] = {{-10, 10}, "zero-initialised weight: RANUM's default"};
    } else if (h.lo == h.hi) {
      out[name] = {{h.lo - std::fabs(h.lo), h.hi + std::fabs(h.hi)}, "constant initial value widened by 100 %"};
    } else {
      const double half = (h.hi - h.lo) / 2, mid = h.lo + half;
      out[name] = {{mid - 2 * half, mid + 2 * half}, "span of initial values widened by 100 % (RANUM)"};
    }
  }
  return out;
}

ScanOptions stated_scan_options(const Graph& g, const Manifest* m, int64_t batch,
                                const std::map<std::string, Interval>& extra) {
  ScanOptions o;
  o.manifest = m;
  o.batch = batch;
  for (const auto& [name, r] : trained_weight_ranges(g, m)) o.assumed[name] = r.range;
  for (const auto& [name, r] : extra)
    if (g.find_value(name) != kNoValue) o.assumed[name] = r;
  return o;
}

}  // namespace grist
