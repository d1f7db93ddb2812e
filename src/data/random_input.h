// Random data for a model input whose data the user did not give: concrete shape from the declared one
// (symbolic dimensions bound by name, unknown ones defaulting to 1) and values uniform in a range.
#pragma once

#include <map>
#include <string>

#include "graph/graph.h"
#include "tensor/tensor.h"
#include "util/rng.h"
#include "util/status.h"

namespace grist {

struct RandomInputSpec {
  double lo = 0.0, hi = 1.0;                 // floats: uniform in [lo, hi)
  int64_t int_lo = 0, int_hi = 10;           // integers: uniform in [int_lo, int_hi)
  std::map<std::string, int64_t> dims;       // symbolic dimension name -> size (e.g. "batch" -> 64)
  int64_t default_dim = 1;                   // for symbolic dimensions not named in `dims`
};

// The concrete shape of `v` under `spec`; fails when the rank is unknown.
Result<Shape> concrete_shape(const Value& v, const RandomInputSpec& spec);
Result<Tensor> random_input(const Value& v, const RandomInputSpec& spec, Rng& rng);

}  // namespace grist
