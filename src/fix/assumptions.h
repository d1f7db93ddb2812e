// The ranges every proof of `grist fix` is made under, stated rather than left to the scan's defaults: the
// manifest's input ranges as the scan reads them, and for each weight the model trains an explicit range
// (the manifest's [scan] trained_weights, else RANUM's: its initial span widened by 100 %, [−10, 10] when
// zero-initialised), passed to the scan as `assumed` so the proof says what it relies on.
#pragma once

#include <map>
#include <string>

#include "analysis/scan.h"
#include "config/manifest.h"
#include "graph/graph.h"

namespace grist {

struct StatedRange {
  Interval range;
  std::string why;
};

// The trained weights' ranges (which weights train: analysis/trained_weights.h, the scan's rule).
std::map<std::string, StatedRange> trained_weight_ranges(const Graph& g, const Manifest* manifest);

// Scan options with the manifest, the batch and the trained weights' ranges stated; `extra` overrides them
// (a precondition's box, the user's --assume). `precision`: the numerics the scan rounds to (grist fix --precision).
ScanOptions stated_scan_options(const Graph& g, const Manifest* manifest, int64_t batch,
                                const std::map<std::string, Interval>& extra = {},
                                Precision precision = Precision::Fp32);

}  // namespace grist
