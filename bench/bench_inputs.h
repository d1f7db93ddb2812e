// The benchmarks' inputs: the given .npy for the model's first float input, seeded random values for the rest.
#pragma once

#include <string>

#include "data/npy.h"
#include "data/random_input.h"
#include "engine/executor.h"
#include "util/rng.h"

namespace grist::bench {

inline Status feed_inputs(const Graph& g, Executor& ex, const std::string& model_path, const std::string& npy) {
  Rng data_rng(0);
  bool given_used = npy.empty();
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    const bool from_file = !given_used && is_float(v.dtype);
    auto t = from_file ? read_npy(npy) : random_input(v, RandomInputSpec{}, data_rng);
    if (!t) return t.error();
    given_used = given_used || from_file;
    GRIST_TRY(ex.set_input(id, *t));
  }
  GRIST_CHECK(given_used, "{}: has no float input for {}", model_path, npy);
  return Status::ok();
}

}  // namespace grist::bench
