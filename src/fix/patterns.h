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
};

// The repairs that fit the hazard at `node` (failure `failure` on input `operand`), the most specific (a stable
// form) first and a guard on the op's own operand last; empty for failures no graph repair fixes.
std::vector<RepairMatch> repair_candidates(const Graph& g, int32_t node, Failure failure, int operand);

// The hint of the first candidate, or the catalogue's advice where no graph repair fits.
std::string fix_hint_for(const Graph& g, int32_t node, Failure failure, int operand);

}  // namespace grist
