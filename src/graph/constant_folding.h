// Constant folding of shape arithmetic: which nodes compute the same values in every pass once the shapes of the
// graph's inputs are bound. Exporters write a model's reshapes as Shape → Gather → Unsqueeze → Concat → Reshape
// chains (ShuffleNet's channel shuffle, a Transformer's head split, an LSTM's initial state); ONNX Runtime folds
// them when it loads a model, and a hunt would otherwise re-run them every iteration.
//
// The graph is never rewritten: `grist fix` writes the user's own structure back, and every node keeps its name
// for the reports. The executor runs a candidate once, keeps its outputs, and skips it in later passes while its
// inputs are those it ran on (the same shape for a shape-only input, the same version of the value otherwise);
// the kernel is the op's own, so a folded value is the value the node would compute.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "graph/graph.h"

namespace grist {

// Largest result of a folded node other than Constant, in elements: shape vectors, axes and indices, never an
// activation.
inline constexpr int64_t kMaxFoldedElements = 4096;

// Whether input i of the node is read only for its shape (Shape's and Size's data): a trained weight or a
// symbolic-batch activation there leaves the node foldable while the shape stays.
bool reads_only_shape(const Node& node, size_t input);

// Per node, 1 where it may be folded: deterministic (`deterministic` says so for its op; subgraph ops never are),
// and every input it reads the values of is a non-float initializer or a candidate's output, and it has no float
// output unless it is a Constant. Float data never feeds a folded node's values, so no float computation the scan
// must watch (Div, Log, Sqrt on activations or weights) is ever folded, and neither is anything a trained weight's
// values reach. Declared dtypes decide here; the executor checks the tensors themselves when it folds.
std::vector<uint8_t> fold_candidates(const Graph& g, const std::function<bool(const Node&)>& deterministic);

}  // namespace grist
