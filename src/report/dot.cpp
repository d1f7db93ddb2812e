#include "report/dot.h"

#include <fmt/format.h>

namespace grist {

namespace {

// Graphviz's quoted strings: backslashes and quotes escaped, newlines as \n.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

}  // namespace

std::string to_dot(const Graph& g, const std::vector<DotMark>& marks, ValueId loss) {
  if (loss == kNoValue && !g.outputs.empty()) loss = g.outputs.front();
  std::vector<bool> keep(g.nodes.size(), false), marked(g.nodes.size(), false);
  // Upstream of every mark: the nodes its inputs come from, back to the graph's inputs.
  for (const DotMark& m : marks) {
    if (m.node < 0 || static_cast<size_t>(m.node) >= g.nodes.size()) continue;
    marked[static_cast<size_t>(m.node)] = true;
    std::vector<int32_t> todo{m.node};
    while (!todo.empty()) {
      const int32_t n = todo.back();
      todo.pop_back();
      if (keep[static_cast<size_t>(n)]) continue;
      keep[static_cast<size_t>(n)] = true;
      for (ValueId in : g.nodes[static_cast<size_t>(n)].inputs)
        if (in != kNoValue && g.value(in).producer >= 0) todo.push_back(g.value(in).producer);
    }
    for (int32_t n : g.path_to(m.node, loss)) keep[static_cast<size_t>(n)] = true;
  }
  std::string out = "digraph grist {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  std::vector<bool> value_shown(g.values.size(), false);
  auto show_value = [&](ValueId id) {
    if (value_shown[static_cast<size_t>(id)]) return;
    value_shown[static_cast<size_t>(id)] = true;
    const Value& v = g.value(id);
    const bool source = v.kind != ValueKind::Intermediate;
    if (source)
      out += fmt::format("  v{} [label={}, shape={}];\n", id, quoted(v.name),
                         v.kind == ValueKind::Input ? "ellipse" : "note");
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!keep[n]) continue;
    const Node& node = g.nodes[n];
    std::string label = fmt::format("{}\n{}", node.op_type, node.name);
    std::string style;
    for (const DotMark& m : marks)
      if (m.node == static_cast<int32_t>(n)) label += "\n" + m.note;
    if (marked[n]) style = ", color=red, fontcolor=red, penwidth=2";
    out += fmt::format("  n{} [label={}{}];\n", n, quoted(label), style);
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!keep[n]) continue;
    for (ValueId in : g.nodes[n].inputs) {
      if (in == kNoValue) continue;
      const Value& v = g.value(in);
      if (v.producer >= 0) {
        if (keep[static_cast<size_t>(v.producer)])
          out += fmt::format("  n{} -> n{} [label={}];\n", v.producer, n, quoted(v.name));
        continue;
      }
      show_value(in);
      out += fmt::format("  v{} -> n{};\n", in, n);
    }
  }
  if (loss != kNoValue && g.value(loss).producer >= 0 && keep[static_cast<size_t>(g.value(loss).producer)]) {
    out += fmt::format("  loss [label={}, shape=ellipse];\n", quoted(g.value(loss).name));
    out += fmt::format("  n{} -> loss;\n", g.value(loss).producer);
  }
  return out + "}\n";
}

}  // namespace grist
