// grist scan --sarif as GitHub code scanning takes it: the SARIF 2.1.0 schema's required structure (written
// out here, as no copy of the schema is installed on the build machine), and GitHub's own expectations — rule
// ids without spaces, a region with a start line on every location, results that point at their rule.
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/scan.h"
#include "onnx/import.h"
#include "report/scan_report.h"

using namespace grist;
using nlohmann::json;

namespace {

// The parts of the SARIF 2.1.0 schema (sarif-schema-2.1.0.json) a grist log uses, each "required" list and
// type checked: sarifLog {version, runs}, run {tool}, tool {driver}, toolComponent {name},
// reportingDescriptor {id}, result {message}, message {text}, location, physicalLocation {artifactLocation},
// region {startLine ≥ 1}, logicalLocation.
std::vector<std::string> schema_errors(const json& log) {
  std::vector<std::string> errors;
  auto need = [&](const json& j, const char* key, json::value_t type, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) {
      errors.push_back(where + ": missing required '" + key + "'");
      return false;
    }
    const json& v = j.at(key);
    const bool ok = type == json::value_t::number_integer ? v.is_number_integer() : v.type() == type;
    if (!ok) errors.push_back(where + "." + key + ": wrong type");
    return ok;
  };
  if (need(log, "version", json::value_t::string, "sarifLog") && log["version"] != "2.1.0")
    errors.push_back("sarifLog.version is not 2.1.0");
  if (!need(log, "runs", json::value_t::array, "sarifLog")) return errors;
  for (const json& run : log["runs"]) {
    if (!need(run, "tool", json::value_t::object, "run") ||
        !need(run["tool"], "driver", json::value_t::object, "run.tool"))
      continue;
    const json& driver = run["tool"]["driver"];
    need(driver, "name", json::value_t::string, "toolComponent");
    if (driver.contains("informationUri") &&
        !std::regex_match(driver["informationUri"].get<std::string>(), std::regex("https?://.+")))
      errors.push_back("toolComponent.informationUri is not a URI");
    std::vector<std::string> ids;
    if (driver.contains("rules"))
      for (const json& rule : driver["rules"]) {
        if (!need(rule, "id", json::value_t::string, "reportingDescriptor")) continue;
        ids.push_back(rule["id"]);
        if (rule.contains("shortDescription")) need(rule["shortDescription"], "text", json::value_t::string, "rule.shortDescription");
        if (rule.contains("help")) need(rule["help"], "text", json::value_t::string, "rule.help");
      }
    if (!run.contains("results")) continue;
    for (const json& result : run["results"]) {
      if (need(result, "message", json::value_t::object, "result")) need(result["message"], "text", json::value_t::string, "message");
      if (result.contains("level")) {
        const std::set<std::string> levels{"none", "note", "warning", "error"};
        if (!levels.count(result["level"].get<std::string>())) errors.push_back("result.level not in the enum");
      }
      if (result.contains("ruleIndex")) {
        const auto k = result["ruleIndex"].get<size_t>();
        if (k >= ids.size() || ids[k] != result.value("ruleId", "")) errors.push_back("result.ruleIndex does not point at its ruleId");
      }
      if (!result.contains("locations")) continue;
      for (const json& loc : result["locations"]) {
        if (!loc.contains("physicalLocation")) continue;
        const json& pl = loc["physicalLocation"];
        need(pl, "artifactLocation", json::value_t::object, "physicalLocation");
        if (need(pl, "region", json::value_t::object, "physicalLocation") &&
            need(pl["region"], "startLine", json::value_t::number_integer, "region") && pl["region"]["startLine"] < 1)
          errors.push_back("region.startLine < 1");
      }
    }
  }
  return errors;
}

}  // namespace

TEST(Sarif, AScanOfAModelWithMayFailHazardsIsValidSarifThatGitHubTakes) {
  const std::string model = (std::filesystem::path(GRIST_SOURCE_DIR) / "tests/models/vae_head.onnx").string();
  auto g = import_onnx_file(model);
  ASSERT_TRUE(g.is_ok()) << g.message();
  auto r = scan(*g);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_GT(r->count(Verdict::MayFail), 0);
  const json log = to_sarif(*r, "tests/models/vae_head.onnx");
  for (const std::string& e : schema_errors(log)) ADD_FAILURE() << e;
  const json& run = log["runs"][0];
  ASSERT_EQ(run["results"].size(), static_cast<size_t>(r->count(Verdict::MayFail)));
  for (const json& rule : run["tool"]["driver"]["rules"]) {
    const std::string id = rule["id"];
    EXPECT_TRUE(std::regex_match(id, std::regex("grist/[a-z0-9-]+"))) << id;  // stable, no spaces
    EXPECT_NE(rule["help"]["text"].get<std::string>().find("1-based position"), std::string::npos);
  }
  EXPECT_FALSE(run["tool"]["driver"].contains("informationUri"));  // no invented address
  for (const json& result : run["results"]) {
    const json& loc = result["locations"][0];
    EXPECT_EQ(loc["physicalLocation"]["artifactLocation"]["uri"], "tests/models/vae_head.onnx");
    EXPECT_GE(loc["physicalLocation"]["region"]["startLine"].get<int>(), 1);
    EXPECT_FALSE(loc["logicalLocations"][0]["name"].get<std::string>().empty());
  }
}

TEST(Sarif, TheValidatorRejectsWhatTheSchemaRequires) {
  // The checks can fail: a log missing its runs, a rule id, a region's start line, each is reported.
  EXPECT_FALSE(schema_errors(json{{"version", "2.1.0"}}).empty());
  json log = {{"version", "2.1.0"},
              {"runs", json::array({{{"tool", {{"driver", {{"name", "grist"}, {"rules", json::array({json::object()})}}}}},
                                     {"results", json::array({{{"message", {{"text", "x"}}},
                                                               {"locations", json::array({{{"physicalLocation",
                                                                                            {{"artifactLocation", json::object()},
                                                                                             {"region", {{"startLine", 0}}}}}}})}}})}}})}};
  const auto errors = schema_errors(log);
  EXPECT_EQ(errors.size(), 2u);  // the rule without an id, the start line 0
}
