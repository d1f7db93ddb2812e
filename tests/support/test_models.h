// The manifests and models of tests/models, loaded as the tests use them.
#pragma once

#include <string>

#include "config/manifest.h"
#include "graph/graph.h"

namespace grist::testing {

struct LoadedModel {
  Graph graph;
  Manifest manifest;
};

// tests/models/NAME.toml and the model it names (a failure to read either fails the calling test).
LoadedModel load_test_model(const std::string& name);

}  // namespace grist::testing
