// The report of `grist scan`: verdicts and assumed ranges as text for people, JSON for machines, and
// SARIF 2.1.0 for code-scanning CI (one result per may-fail hazard).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/scan.h"

namespace grist {

std::string to_text(const ScanReport& r, const std::string& model);
nlohmann::json to_json(const ScanReport& r, const std::string& model);
nlohmann::json to_sarif(const ScanReport& r, const std::string& model);

}  // namespace grist
