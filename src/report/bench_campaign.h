// A benchmark campaign spread over machines: `grist bench --shard i/n` makes a deterministic slice of the
// (subject × seed) runs and writes them to a shard file; `grist bench merge` checks that the shards belong to one
// campaign and cover its runs exactly once, and joins them into the rows one unsharded run gives.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/benchmark.h"
#include "util/status.h"

namespace grist {

// Shard `index` of `count`, counted from 1 as `--shard 2/4` writes it.
struct ShardSpec {
  int index = 1;
  int count = 1;
};

Result<ShardSpec> parse_shard(const std::string& text);  // "i/n" with 1 <= i <= n

// The runs of each subject (by position in `subjects`, 0-based run indexes) that a shard makes: the campaign's
// runs in table order (subject by subject, seed by seed), dealt round-robin, so every shard gets some of every
// slow subject.
std::vector<std::vector<int>> shard_runs(size_t subjects, int runs, const ShardSpec& shard);

// What must be equal for shards to join: grist's version, the options that change a run's outcome, and the
// subjects with a fingerprint of each one's manifest and model (not the zoo's path, which machines differ in).
// `variant` is the --variant given ("" for the manifests' own).
nlohmann::json campaign_config(const BenchOptions& o, const std::vector<std::string>& subjects,
                               const std::string& variant);

// "bench-shard-2-of-4.json"
std::string shard_file_name(const ShardSpec& shard);

nlohmann::json shard_json(const nlohmann::json& config, const ShardSpec& shard, const std::vector<SubjectRuns>& made);

// The rows of the whole campaign from its shard files (each a path to a shard file, or a folder holding
// bench-shard-*.json): an error when a file is not a shard, when shards come from different campaigns or splits,
// or when a run is missing or given twice.
Result<std::vector<SubjectResult>> merge_shards(const std::vector<std::string>& paths);

}  // namespace grist
