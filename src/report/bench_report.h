// The benchmark's results table: a row per subject as results arrive, totals with the speed-up over the
// study's published times, and the same as CSV and JSON files.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/benchmark.h"

namespace grist {

std::string bench_header();
std::string bench_row(const SubjectResult& r);
std::string bench_totals(const std::vector<SubjectResult>& rows);
std::string bench_csv(const std::vector<SubjectResult>& rows);
nlohmann::json bench_json(const std::vector<SubjectResult>& rows);
std::string bench_markdown(const std::vector<SubjectResult>& rows);

// The --fix columns: per subject the repair of its expected hazard, checks a/b/c/d, preconditions I / W / W+I
// with their widths; and the totals beside RANUM's (79/79 with inputs and weights, 72/79 weights, 37/79 inputs).
std::string bench_fix_header();
std::string bench_fix_row(const SubjectResult& r);
std::string bench_fix_totals(const std::vector<SubjectResult>& rows);
std::string bench_fix_markdown(const std::vector<SubjectResult>& rows);

}  // namespace grist
