// The model as grist sees it: values (tensors flowing between nodes) and nodes (op applications),
// independent of ONNX's protobuf classes and of any engine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;  // an omitted optional input or output

// One dimension of a declared shape: a fixed size, or a symbolic one ("batch") or unknown (-1, empty symbol).
struct Dim {
  int64_t size = -1;
  std::string symbol;
  bool known() const { return size >= 0; }
};

enum class ValueKind { Input, Initializer, Intermediate };

struct Value {
  std::string name;
  DType dtype = DType::Undefined;      // Undefined where the model does not say
  std::optional<std::vector<Dim>> shape;  // declared or inferred; nullopt = unknown rank
  ValueKind kind = ValueKind::Intermediate;
  int32_t producer = -1;               // node index, -1 for inputs and initializers
  std::vector<int32_t> consumers;      // node indices, one entry per use
  // Initializers: the stored tensor, shared by copies of the graph. Made as a non-const Tensor
  // (std::make_shared<Tensor>) wherever a graph is loaded, so that Graph::take_initial may move it out.
  std::shared_ptr<const Tensor> initial;
};

struct Attribute {
  enum class Type { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, Other };
  Type type = Type::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<const Tensor> t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;     // never empty: the importer names anonymous nodes "<OpType>_<index>"
  std::string op_type;
  std::string domain;   // "" for the default ONNX domain
  int opset = 0;        // the model's opset for this node's domain
  std::vector<ValueId> inputs;   // kNoValue for omitted optionals
  std::vector<ValueId> outputs;  // kNoValue for omitted optionals
  std::vector<std::pair<std::string, Attribute>> attributes;
  // Computes in float32 whatever 16-bit precision the run simulates (`.float()`, autocast's custom_fwd): the
  // model's metadata_props key kKeepFloat32Key lists these nodes (grist fix's keep-in-float32 repair).
  bool keep_float32 = false;

  const Attribute* attr(std::string_view key) const;
  bool has_attr(std::string_view key) const { return attr(key) != nullptr; }
  int64_t attr_int(std::string_view key, int64_t fallback) const;
  double attr_float(std::string_view key, double fallback) const;
  std::string attr_string(std::string_view key, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view key, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(std::string_view key, std::vector<double> fallback = {}) const;

  // Input i is present (not omitted and not past the end).
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != kNoValue; }
};

// metadata_props key naming, one per line, the nodes a half-precision run keeps in float32 (Node::keep_float32);
// the list onnxconverter-common's convert_float_to_float16 takes as node_block_list.
inline constexpr std::string_view kKeepFloat32Key = "grist.keep_float32";

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;          // kept in topological order by the importer
  std::vector<ValueId> inputs;      // graph inputs that are not initializers
  std::vector<ValueId> outputs;
  std::vector<ValueId> initializers;
  std::unordered_map<std::string, int64_t> opsets;  // domain -> version

  ValueId find_value(std::string_view name) const;
  ValueId add_value(Value v);  // also indexes the name
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  // Takes value `id`'s stored tensor out of the graph, leaving it none: its buffer when this graph holds the only
  // reference (a command handing its weights to an executor then holds each once), else a copy. The tensor must
  // have been made non-const (Value::initial); an undefined tensor when there is none.
  Tensor take_initial(ValueId id);

  // The nodes (in order) on a shortest data path from node `from`'s outputs to value `to`, `from` first;
  // empty when `to` does not depend on it.
  std::vector<int32_t> path_to(int32_t from, ValueId to) const;

  // The batch size the model fixes: dimension 0 of every graph input of rank ≥ 1 when all of them declare the
  // same known size there; nullopt when one is symbolic or they differ.
  std::optional<int64_t> fixed_batch_size() const;

  // Recomputes producer/consumer links from the nodes.
  void link();
  // Reorders nodes topologically (stable); fails naming a node on a cycle or an input nobody produces.
  Status sort_topologically();

 private:
  std::unordered_map<std::string, ValueId> by_name_;
};

// An initializer only nodes kept in float32 read (their ε): float32 in a half-precision run, as the Python scalar of
// `(v.float() + 1e-8).sqrt()` is.
inline bool read_only_in_float32(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.kind != ValueKind::Initializer || val.consumers.empty()) return false;
  for (int32_t c : val.consumers)
    if (!g.nodes[static_cast<size_t>(c)].keep_float32) return false;
  return true;
}

}  // namespace grist
