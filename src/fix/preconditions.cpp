#include "fix/preconditions.h"

namespace grist {

std::string_view box_scope_name(BoxScope s) {
  switch (s) {
    case BoxScope::Inputs:
      return "I";
    case BoxScope::Weights:
      return "W";
    case BoxScope::Both:
      return "W+I";
  }
  return "?";
}

Result<PreconditionSet> find_preconditions(const Graph&, const std::string&, Failure, const PreconditionOptions&) {
  PreconditionSet s;
  s.inputs.scope = BoxScope::Inputs;
  s.weights.scope = BoxScope::Weights;
  s.both.scope = BoxScope::Both;
  return s;
}

}  // namespace grist
