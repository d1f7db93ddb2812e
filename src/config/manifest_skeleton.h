// `grist init`: a commented manifest skeleton for a model, from its inputs, outputs and initializers, with
// every role, source and loss it guessed said so in a comment, so that a user starts from a manifest that runs.
#pragma once

#include <string>

#include "graph/graph.h"

namespace grist {

struct SkeletonOptions {
  std::string model_path;  // as the manifest names it (relative to the manifest's folder, or absolute)
  std::string model_label; // how the header comment names the model
  // Where Fashion-MNIST is looked for; a data input of 784 values a row takes it when its files are there.
  std::string fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";
};

// The manifest text (TOML, docs/MANIFEST.md) for `g`.
std::string manifest_skeleton(const Graph& g, const SkeletonOptions& options);

}  // namespace grist
