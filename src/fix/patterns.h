// Recognising which repairs of the catalogue fit a hazard: from the hazardous node's operand up through the ops
// PyTorch's exporter puts between the ops of one expression (Cast, Unsqueeze, Reshape, Expand, Tile, Identity,
// selections), to the op whose stable form the catalogue knows (Softmax, Sigmoid, Exp, a sum of exps, a norm).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fix/catalogue.h"
#include "graph/graph.h"
#include "ops/hazard.h"

namespace grist {

struct RepairMatch {
  RepairKind kind = RepairKind::LogClamp;
  std::string pattern;          // what was recognised, for people: "log(softmax)", "exp(x)/Σexp(x)", "log(x)"
  int32_t hazard_node = -1;     // the node the hazard is at
  ValueId source = kNoValue;    // x of the stable form (the softmax's input, the guarded operand, ...)
  ValueId replaced = kNoValue;  // the value the repaired form computes; its consumers and name are kept
  // Ops between the stable form and `replaced` to apply again after it (selections and casts commute with the
  // element-wise op they sat under), source side first. Identities on non-negative values (Abs, Relu above a
  // softmax) are not listed: the stable form already is the value they passed on.
  std::vector<int32_t> chain;
  // Ops between `source` and the function the stable form replaces (log(1 − unsqueeze(sigmoid(x)))): applied
  // to `source` first, source side first.
  std::vector<int32_t> pre_chain;
  std::vector<int32_t> matched;    // every node of the recognised expression (reports, tests)
  int64_t axis = -1;               // Softmax / LogSoftmax axis
  std::vector<int64_t> axes;       // reduced axes of a sum or norm (empty: all)
  bool keepdims = true;            // the reduction's, for forms that replace it
  ValueId numerator = kNoValue;    // Div: the numerator (kNoValue for Reciprocal)
  std::optional<double> exponent;  // Pow: a constant exponent
  // Set by the caller from the scan: the guarded operand is never negative, so a one-sided guard suffices
  // (a / max(d, ε) rather than the sign-preserving form).
  bool operand_nonnegative = false;
  // KeepFloat32: the region grows from the hazard node upstream along its operand (an operand the format flushes:
  // its producers must compute in float32) or downstream (a result past the format's max: until it is back).
  bool keep_upstream = false;
};

// KeepFloat32: the nodes of the region of at most `size` nodes (in execution order): the hazard node and the chain
// of single-consumer ops before it (upstream) or after it (downstream). Shorter where the chain ends.
std::vector<int32_t> keep_float32_region(const Graph& g, const RepairMatch& m, int size);

// The repairs that fit the hazard at `node` (failure `failure` on input `operand`), the most specific (a stable
// form) first and a guard on the op's own operand last; empty for failures no graph repair fixes.
// `format`: the 16-bit format the run simulates (Undefined: float32), which adds the half-precision repairs.
std::vector<RepairMatch> repair_candidates(const Graph& g, int32_t node, Failure failure, int operand,
                                           DType format = DType::Undefined);

// The hint of the first candidate, or the catalogue's advice where no graph repair fits.
std::string fix_hint_for(const Graph& g, int32_t node, Failure failure, int operand);

}  // namespace grist
