#include "fix/assumptions.h"

#include "analysis/trained_weights.h"

namespace grist {

std::map<std::string, StatedRange> trained_weight_ranges(const Graph& g, const Manifest* m) {
  std::map<std::string, StatedRange> out;
  for (const std::string& name : trained_weight_names(g, m)) {
    const Tensor& init = *g.value(g.find_value(name)).initial;
    if (m && m->scan_trained_weights) {
      out[name] = {{m->scan_trained_weights->first, m->scan_trained_weights->second},
                   "manifest [scan] trained_weights"};
      continue;
    }
    const RanumRange r = ranum_default_range(init);
    out[name] = {r.range, r.why};
  }
  return out;
}

ScanOptions stated_scan_options(const Graph& g, const Manifest* m, int64_t batch,
                                const std::map<std::string, Interval>& extra, Precision precision) {
  ScanOptions o;
  o.precision = precision;
  o.manifest = m;
  o.batch = batch;
  for (const auto& [name, r] : trained_weight_ranges(g, m)) o.assumed[name] = r.range;
  for (const auto& [name, r] : extra)
    if (g.find_value(name) != kNoValue) o.assumed[name] = r;
  return o;
}

}  // namespace grist
