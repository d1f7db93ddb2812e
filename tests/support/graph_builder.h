// Builds small graphs by hand for engine tests: inputs, constants, nodes and outputs by name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace grist::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 17) { g_.opsets[""] = opset; }

  // A graph input with a declared dtype and shape (-1 = symbolic "batch").
  GraphBuilder& input(const std::string& name, DType dtype, std::vector<int64_t> dims);
  // An initializer holding `t`.
  GraphBuilder& constant(const std::string& name, Tensor t);
  // A node reading `inputs` ("" = omitted) and writing `outputs`.
  GraphBuilder& node(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                     std::vector<std::pair<std::string, Attribute>> attributes = {});
  GraphBuilder& output(const std::string& name);
  // Sorts and returns the graph (fails the test on a malformed graph).
  Graph build();

 private:
  ValueId ensure(const std::string& name);
  Graph g_;
};

}  // namespace grist::testing
