// The report of `grist run`: a summary of every output and the first non-finite producer, as text for
// people and JSON for machines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/nonfinite.h"
#include "tensor/tensor.h"

namespace grist {

struct TensorSummary {
  std::string name;
  DType dtype = DType::Undefined;
  Shape shape;
  NonFiniteCounts counts;
  double min = 0, max = 0, mean = 0;  // over finite elements
  int64_t finite = 0;
  std::vector<double> head;           // the first few elements
};

TensorSummary summarize(const std::string& name, const Tensor& t);

struct RunReport {
  std::string model;
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  NonFiniteEvent forward;
  bool ran_backward = false;
  std::string backward_from;
  NonFiniteEvent backward;
  NonFiniteEvent masked_backward;  // a non-finite gradient that no wanted gradient inherited
  double forward_ms = 0, backward_ms = 0;
};

std::string to_text(const RunReport& r);
nlohmann::json to_json(const RunReport& r);
nlohmann::json to_json(const NonFiniteEvent& e);
nlohmann::json to_json(const TensorSummary& s);

}  // namespace grist
