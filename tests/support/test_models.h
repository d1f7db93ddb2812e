// The manifests and models of tests/models, loaded as the tests use them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/manifest.h"
#include "graph/graph.h"

namespace grist::testing {

struct LoadedModel {
  Graph graph;
  Manifest manifest;
};

// tests/models/NAME.toml and the model it names (a failure to read either fails the calling test).
LoadedModel load_test_model(const std::string& name);

// loss = Σ sqrt(exp(clip(x, −100, 87))) over x of `dims`: under flush-to-zero exp(−100) is 0, sqrt′(0) = ∞, and
// Clip's backward masks the NaN that follows outside its range (the masked-gradient case).
Graph clip_exp_sqrt_graph(std::vector<int64_t> dims);

}  // namespace grist::testing
