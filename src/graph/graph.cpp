#include "graph/graph.h"

#include <queue>
#include <utility>

#include "util/status.h"

namespace grist {

const Attribute* Node::attr(std::string_view key) const {
  for (const auto& [k, a] : attributes)
    if (k == key) return &a;
  return nullptr;
}

int64_t Node::attr_int(std::string_view key, int64_t fallback) const {
  const Attribute* a = attr(key);
  return a ? a->i : fallback;
}

double Node::attr_float(std::string_view key, double fallback) const {
  const Attribute* a = attr(key);
  return a ? a->f : fallback;
}

std::string Node::attr_string(std::string_view key, std::string fallback) const {
  const Attribute* a = attr(key);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view key, std::vector<int64_t> fallback) const {
  const Attribute* a = attr(key);
  return a ? a->ints : fallback;
}

std::vector<double> Node::attr_floats(std::string_view key, std::vector<double> fallback) const {
  const Attribute* a = attr(key);
  return a ? a->floats : fallback;
}

Tensor Graph::take_initial(ValueId id) {
  std::shared_ptr<const Tensor> t = std::exchange(value(id).initial, nullptr);
  if (!t) return Tensor();
  if (t.use_count() > 1) return *t;
  return std::move(*std::const_pointer_cast<Tensor>(t));
}

ValueId Graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoValue : it->second;
}

ValueId Graph::add_value(Value v) {
  ValueId id = static_cast<ValueId>(values.size());
  by_name_[v.name] = id;
  values.push_back(std::move(v));
  return id;
}

std::optional<int64_t> Graph::fixed_batch_size() const {
  std::optional<int64_t> batch;
  for (ValueId id : inputs) {
    const Value& v = value(id);
    if (!v.shape) return std::nullopt;
    if (v.shape->empty()) continue;
    const Dim& d = v.shape->front();
    if (!d.known() || (batch && *batch != d.size)) return std::nullopt;
    batch = d.size;
  }
  return batch;
}

void Graph::link() {
  for (auto& v : values) {
    v.consumers.clear();
    if (v.kind == ValueKind::Intermediate) v.producer = -1;
  }
  for (int32_t n = 0; n < static_cast<int32_t>(nodes.size()); ++n) {
    for (ValueId in : nodes[n].inputs)
      if (in != kNoValue) value(in).consumers.push_back(n);
    for (ValueId out : nodes[n].outputs)
      if (out != kNoValue) value(out).producer = n;
  }
}

std::vector<int32_t> Graph::path_to(int32_t from, ValueId to) const {
  if (from < 0 || to == kNoValue) return {};
  // Breadth-first over consumers, remembering how each node was reached.
  std::vector<int32_t> parent(nodes.size(), -2);
  std::queue<int32_t> todo;
  parent[static_cast<size_t>(from)] = -1;
  todo.push(from);
  while (!todo.empty()) {
    int32_t n = todo.front();
    todo.pop();
    for (ValueId out : nodes[static_cast<size_t>(n)].outputs) {
      if (out == kNoValue) continue;
      if (out == to) {
        std::vector<int32_t> path;
        for (int32_t at = n; at >= 0; at = parent[static_cast<size_t>(at)]) path.push_back(at);
        return {path.rbegin(), path.rend()};
      }
      for (int32_t c : value(out).consumers)
        if (parent[static_cast<size_t>(c)] == -2) {
          parent[static_cast<size_t>(c)] = n;
          todo.push(c);
        }
    }
  }
  return {};
}

Status Graph::sort_topologically() {
  link();
  const size_t n = nodes.size();
  std::vector<int> missing(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (ValueId in : nodes[i].inputs) {
      if (in == kNoValue) continue;
      const Value& v = value(in);
      if (v.kind == ValueKind::Intermediate && v.producer < 0)
        return make_error("node '{}' ({}) reads '{}', which no node, input or initializer provides",
                          nodes[i].name, nodes[i].op_type, v.name);
      if (v.kind == ValueKind::Intermediate) ++missing[i];
    }
  // Kahn's algorithm, taking ready nodes in their original order so the result is stable.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (missing[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (ValueId out : nodes[i].outputs) {
      if (out == kNoValue) continue;
      for (int32_t c : value(out).consumers)
        if (--missing[static_cast<size_t>(c)] == 0) ready.push(static_cast<size_t>(c));
    }
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (missing[i] > 0) return make_error("node '{}' ({}) is on a cycle", nodes[i].name, nodes[i].op_type);
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
  link();
  return Status::ok();
}

}  // namespace grist
