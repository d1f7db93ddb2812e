// The Graphviz picture of a finding, parsed back: every edge joins declared nodes, the producer is marked with
// its condition, and only the part of the model that leads to it and on to the loss is drawn.
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "report/dot.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::GraphBuilder;

namespace {

struct Parsed {
  std::map<std::string, std::string> nodes;  // id -> its attribute list
  std::vector<std::pair<std::string, std::string>> edges;
  bool closed = false;
};

Parsed parse(const std::string& dot) {
  Parsed p;
  std::istringstream in(dot);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "digraph grist {");
  const std::regex node(R"(^  (\w+) \[(label=".*)\];$)"), edge(R"(^  (\w+) -> (\w+)( \[label=".*"\])?;$)");
  for (std::smatch m; std::getline(in, line);) {
    if (line == "}") {
      p.closed = true;
      continue;
    }
    if (std::regex_match(line, m, edge)) {
      p.edges.emplace_back(m[1], m[2]);
    } else if (std::regex_match(line, m, node)) {
      p.nodes[m[1]] = m[2];
    } else if (line.rfind("  rankdir", 0) != 0 && line.rfind("  node [", 0) != 0) {
      ADD_FAILURE() << "unparsed line: " << line;
    }
  }
  return p;
}

}  // namespace

TEST(Dot, DrawsThePathFromTheInputsThroughTheProducerToTheLossAndNothingElse) {
  // loss = Σ log(x·w); a side branch exp(x) feeds another output, not the loss nor the producer.
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .constant("w", Tensor::from<float>({2}, {1.0f, -1.0f}))
                .node("Mul", {"x", "w"}, {"p"})
                .node("Log", {"p"}, {"l"})
                .node("ReduceSum", {"l"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
                .node("Exp", {"x"}, {"side"})
                .output("loss")
                .output("side")
                .build();
  int32_t log = -1;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op_type == "Log") log = static_cast<int32_t>(n);
  const Parsed p = parse(to_dot(g, {{log, "Log input <= 0 at [1] = -0.5"}}, g.find_value("loss")));
  EXPECT_TRUE(p.closed);
  for (const auto& [from, to] : p.edges) {
    EXPECT_TRUE(p.nodes.count(from)) << "edge from undeclared " << from;
    EXPECT_TRUE(p.nodes.count(to)) << "edge to undeclared " << to;
  }
  const std::string producer = "n" + std::to_string(log);
  ASSERT_TRUE(p.nodes.count(producer));
  EXPECT_NE(p.nodes.at(producer).find("color=red"), std::string::npos);
  EXPECT_NE(p.nodes.at(producer).find("Log input <= 0 at [1] = -0.5"), std::string::npos);
  int ops = 0;
  for (const auto& [id, attrs] : p.nodes) {
    if (id[0] != 'n') continue;
    ++ops;
    EXPECT_EQ(attrs.find("Exp"), std::string::npos) << "the side branch is drawn: " << attrs;
  }
  EXPECT_EQ(ops, 3);  // Mul, Log, ReduceSum
  EXPECT_TRUE(p.nodes.count("loss"));
  EXPECT_EQ(p.edges.size(), 5u);  // x, w -> Mul -> Log -> ReduceSum -> loss
}

TEST(Dot, QuotesAndNewlinesInNamesStayInsideTheirLabel) {
  Graph g = GraphBuilder()
                .input("x\"y", DType::Float32, {1})
                .node("Log", {"x\"y"}, {"out"})
                .output("out")
                .build();
  const Parsed p = parse(to_dot(g, {{0, "line one\nline \"two\""}}, kNoValue));
  EXPECT_TRUE(p.closed);
  ASSERT_TRUE(p.nodes.count("n0"));
  EXPECT_NE(p.nodes.at("n0").find(R"(line one\nline \"two\")"), std::string::npos) << p.nodes.at("n0");
}
