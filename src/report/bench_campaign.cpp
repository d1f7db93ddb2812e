#include "report/bench_campaign.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/manifest.h"
#include "util/sha256.h"
#include "util/version.h"

namespace grist {

namespace {

namespace fs = std::filesystem;

constexpr int kShardFormat = 1;

// A file's SHA-256, "missing" when it cannot be read.
std::string fingerprint(const fs::path& p) {
  auto h = sha256_file(p.string());
  return h ? *h : "missing";
}

std::string reach_of(const BenchOptions& o) { return o.no_training ? "inputs" : o.no_weights ? "training" : "weights"; }

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json j{{"run", r.run}, {"triggered", r.triggered}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.loss_scaling) j["scaler_skipped_steps"] = r.scaler_skipped_steps;
  if (r.triggered) {
    j.update({{"seconds", r.seconds}, {"iterations", r.iterations}, {"study_count", r.study_count},
              {"class", std::string(finding_class_name(r.finding_class))}, {"expected_op", r.expected_op},
              {"weight_search", r.weight_search}, {"contradicted_proof", r.contradicted_proof},
              {"replayed", r.replayed}, {"reproduced", r.reproduced}, {"producer", r.producer}});
    if (!r.replay_error.empty()) j["replay_error"] = r.replay_error;
    if (r.weights_race) j["weights_race"] = true;
    if (r.training_race) j["training_race"] = true;
  }
  return j;
}

Result<RunRecord> run_from_json(const nlohmann::json& j) {
  RunRecord r;
  r.run = j.at("run").get<int>();
  r.triggered = j.at("triggered").get<bool>();
  r.error = j.value("error", "");
  r.loss_scaling = j.contains("scaler_skipped_steps");
  r.scaler_skipped_steps = j.value("scaler_skipped_steps", int64_t{0});
  if (r.triggered) {
    r.seconds = j.at("seconds").get<double>();
    r.iterations = j.at("iterations").get<int64_t>();
    r.study_count = j.at("study_count").get<int64_t>();
    auto finding_class = parse_finding_class(j.at("class").get<std::string>());
    if (!finding_class) return finding_class.error();
    r.finding_class = *finding_class;
    r.expected_op = j.at("expected_op").get<bool>();
    r.weight_search = j.at("weight_search").get<bool>();
    r.contradicted_proof = j.at("contradicted_proof").get<bool>();
    r.replayed = j.at("replayed").get<bool>();
    r.reproduced = j.at("reproduced").get<bool>();
    r.producer = j.at("producer").get<std::string>();
    r.replay_error = j.value("replay_error", "");
    r.weights_race = j.value("weights_race", false);
    r.training_race = j.value("training_race", false);
  }
  return r;
}

struct ShardFile {
  std::string path;
  nlohmann::json config;
  ShardSpec shard;
  std::vector<SubjectRuns> subjects;
};

Result<ShardFile> read_shard(const std::string& path) {
  std::ifstream f(path);
  GRIST_CHECK(f.good(), "{}: cannot read", path);
  ShardFile s;
  s.path = path;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    GRIST_CHECK(j.is_object() && j.contains("grist_bench_shard"),
                "{}: not a shard file of `grist bench --shard` (a bench-shard-I-of-N.json)", path);
    GRIST_CHECK(j.at("grist_bench_shard").get<int>() == kShardFormat, "{}: a shard file of another format ({})", path,
                j.at("grist_bench_shard").dump());
    s.config = j.at("config");
    GRIST_CHECK(s.config.is_object() && s.config.contains("runs") && s.config.contains("subjects") &&
                    s.config.at("subjects").is_array(),
                "{}: not a shard file of `grist bench --shard`: its config has no runs or subjects", path);
    for (const auto& x : s.config.at("subjects"))
      GRIST_CHECK(x.is_object() && x.contains("bug"), "{}: a subject of its config has no id", path);
    (void)s.config.at("runs").get<int>();  // a number, or the parse error below
    s.shard.index = j.at("shard").at("index").get<int>();
    s.shard.count = j.at("shard").at("count").get<int>();
    for (const auto& x : j.at("subjects")) {
      SubjectRuns r;
      r.id = x.at("bug").get<std::string>();
      r.expected_op = x.value("expected_op", "");
      if (x.contains("study_seconds")) r.study_seconds = x["study_seconds"].get<double>();
      if (x.contains("study_iterations")) r.study_iterations = x["study_iterations"].get<int64_t>();
      r.note = x.value("note", "");
      r.setup_error = x.value("setup_error", "");
      for (const auto& run : x.at("runs")) {
        auto rec = run_from_json(run);
        if (!rec) return make_error("{}: {}", path, rec.message());
        r.runs.push_back(*rec);
      }
      s.subjects.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error("{}: not a readable shard file: {}", path, e.what());
  }
  return s;
}

// The first setting in which two campaigns' configurations differ, in words.
std::string difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key)) return fmt::format("{} only in one", key);
    if (b[key] == value) continue;
    if (key == "subjects" && value.is_array() && b[key].is_array()) {
      std::vector<std::string> ia, ib;
      for (const auto& s : value) ia.push_back(s.value("bug", ""));
      for (const auto& s : b[key]) ib.push_back(s.value("bug", ""));
      if (ia != ib) return fmt::format("subjects {} against {}", fmt::join(ia, ","), fmt::join(ib, ","));
      for (size_t i = 0; i < value.size(); ++i)
        if (value[i] != b[key][i]) return fmt::format("subject {}'s manifest or model differ", ia[i]);
    }
    return fmt::format("{} {} against {}", key, value.dump(), b[key].dump());
  }
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return fmt::format("{} only in one", key);
  return "";
}

Result<std::vector<std::string>> shard_paths(const std::vector<std::string>& given) {
  std::vector<std::string> paths;
  for (const auto& p : given) {
    if (!fs::is_directory(p)) {
      GRIST_CHECK(fs::exists(p), "{}: no such file or folder", p);
      paths.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(p)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name.rfind("bench-shard-", 0) == 0 && e.path().extension() == ".json")
        found.push_back(e.path().string());
    }
    GRIST_CHECK(!found.empty(), "{}: holds no shard file (bench-shard-I-of-N.json, written by `grist bench --shard`)",
                p);
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  GRIST_CHECK(!paths.empty(), "no shard files given");
  return paths;
}

}  // namespace

Result<ShardSpec> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto bad = [&](const std::string& why) -> Result<ShardSpec> { return make_error("--shard {}: {}", text, why); };
  if (slash == std::string::npos) return bad("expected I/N, e.g. 2/4 (shard 2 of 4)");
  auto number = [](const std::string& s, int& out) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    out = std::stoi(s);
    return true;
  };
  ShardSpec s;
  if (!number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count))
    return bad("expected I/N with whole numbers, e.g. 2/4 (shard 2 of 4)");
  if (s.count < 1) return bad("the number of shards must be at least 1");
  if (s.index < 1 || s.index > s.count) return bad(fmt::format("shards count from 1 to {}", s.count));
  return s;
}

std::vector<std::vector<int>> shard_runs(size_t subjects, int runs, const ShardSpec& shard) {
  std::vector<std::vector<int>> out(subjects);
  for (size_t s = 0; s < subjects; ++s)
    for (int run = 0; run < runs; ++run)
      if ((s * static_cast<size_t>(runs) + static_cast<size_t>(run)) % static_cast<size_t>(shard.count) ==
          static_cast<size_t>(shard.index - 1))
        out[s].push_back(run);
  return out;
}

nlohmann::json campaign_config(const BenchOptions& o, const std::vector<std::string>& subjects,
                               const std::string& variant) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& id : subjects) {
    const fs::path manifest_path = fs::path(o.zoo_dir) / id / "manifest.toml";
    auto manifest = read_manifest(manifest_path.string());
    list.push_back({{"bug", id},
                    {"manifest", fingerprint(manifest_path)},
                    {"model", manifest ? fingerprint(manifest->model) : "unreadable"}});
  }
  return {{"grist", std::string(kGristVersion)},
          {"runs", o.runs},
          {"first_seed", o.first_seed},
          {"time_limit_s", o.time_limit_s},
          {"max_iterations", o.max_iterations},
          {"variant", variant},
          {"reach", reach_of(o)},
          {"replay", static_cast<bool>(o.replay)},
          {"stall_rule", o.stall_rule},
          {"craft_early", o.craft_early},
          {"race_weights", !o.no_race_weights},
          {"race_training", !o.no_race_training},
          {"precision", o.precision ? std::string(precision_name(*o.precision)) : std::string()},
          {"subjects", list}};
}

std::string shard_file_name(const ShardSpec& shard) {
  return fmt::format("bench-shard-{}-of-{}.json", shard.index, shard.count);
}

nlohmann::json shard_json(const nlohmann::json& config, const ShardSpec& shard, const std::vector<SubjectRuns>& made) {
  nlohmann::json subjects = nlohmann::json::array();
  for (const SubjectRuns& s : made) {
    nlohmann::json x{{"bug", s.id}, {"expected_op", s.expected_op}, {"note", s.note}};
    if (s.study_seconds) x["study_seconds"] = *s.study_seconds;
    if (s.study_iterations) x["study_iterations"] = *s.study_iterations;
    if (!s.setup_error.empty()) x["setup_error"] = s.setup_error;
    nlohmann::json runs = nlohmann::json::array();
    for (const RunRecord& r : s.runs) runs.push_back(run_json(r));
    x["runs"] = runs;
    subjects.push_back(x);
  }
  return {{"grist_bench_shard", kShardFormat},
          {"config", config},
          {"shard", {{"index", shard.index}, {"count", shard.count}}},
          {"subjects", subjects}};
}

Result<std::vector<SubjectResult>> merge_shards(const std::vector<std::string>& given) {
  auto paths = shard_paths(given);
  if (!paths) return paths.error();
  std::vector<ShardFile> shards;
  for (const auto& p : *paths) {
    auto s = read_shard(p);
    if (!s) return s.error();
    shards.push_back(std::move(*s));
  }
  const ShardFile& first = shards.front();
  std::map<int, std::string> seen_shards;
  for (const ShardFile& s : shards) {
    if (s.config != first.config)
      return make_error("{} and {} are not shards of one campaign: {}", first.path, s.path,
                        difference(first.config, s.config));
    GRIST_CHECK(s.shard.count == first.shard.count, "{} is shard {}/{}, {} shard {}/{}: splits of different sizes",
                s.path, s.shard.index, s.shard.count, first.path, first.shard.index, first.shard.count);
    auto [at, fresh] = seen_shards.emplace(s.shard.index, s.path);
    GRIST_CHECK(fresh, "shard {}/{} given twice: {} and {}", s.shard.index, s.shard.count, at->second, s.path);
  }
  std::vector<std::string> ids;
  for (const auto& x : first.config.at("subjects")) ids.push_back(x.at("bug").get<std::string>());
  const int runs = first.config.at("runs").get<int>();
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < ids.size(); ++i) position[ids[i]] = i;

  std::vector<SubjectRuns> joined(ids.size());
  std::vector<std::vector<std::string>> made_by(ids.size(), std::vector<std::string>(static_cast<size_t>(runs)));
  for (const ShardFile& s : shards) {
    for (const SubjectRuns& sub : s.subjects) {
      auto at = position.find(sub.id);
      GRIST_CHECK(at != position.end(), "{}: subject {} is not in its campaign's list", s.path, sub.id);
      SubjectRuns& into = joined[at->second];
      if (into.id.empty()) {
        into = sub;
        into.runs.clear();
      } else if (into.setup_error.empty()) {
        into.setup_error = sub.setup_error;  // any shard's failure to set the subject up is the subject's
      }
      if (!sub.setup_error.empty()) {
        // Held in a variable: a range-for over an element of the temporary would read it after its end.
        const std::vector<std::vector<int>> planned = shard_runs(ids.size(), runs, s.shard);
        for (int run : planned[at->second])
          made_by[at->second][static_cast<size_t>(run)] = s.path;  // a subject that cannot run has no runs
        continue;
      }
      for (const RunRecord& r : sub.runs) {
        GRIST_CHECK(r.run >= 0 && r.run < runs, "{}: subject {} has run {}, outside the campaign's {} runs", s.path,
                    sub.id, r.run + 1, runs);
        std::string& by = made_by[at->second][static_cast<size_t>(r.run)];
        GRIST_CHECK(by.empty(), "subject {} seed {} (run {}) is in {} and {}: a run given twice", sub.id,
                    first.config.value("first_seed", uint64_t{1}) + static_cast<uint64_t>(r.run), r.run + 1, by,
                    s.path);
        by = s.path;
        into.runs.push_back(r);
      }
    }
  }
  std::vector<std::string> missing;
  size_t missing_count = 0;
  std::set<int> missing_shards;
  for (size_t i = 0; i < ids.size(); ++i)
    for (int run = 0; run < runs; ++run)
      if (made_by[i][static_cast<size_t>(run)].empty()) {
        ++missing_count;
        if (missing.size() < 5) missing.push_back(fmt::format("{} run {}", ids[i], run + 1));
        const size_t k = i * static_cast<size_t>(runs) + static_cast<size_t>(run);
        missing_shards.insert(static_cast<int>(k % static_cast<size_t>(first.shard.count)) + 1);
      }
  if (!missing.empty()) {
    std::vector<std::string> names;
    for (int k : missing_shards) names.push_back(fmt::format("{}/{}", k, first.shard.count));
    return make_error("missing runs ({}): {}{} (of shard {}: not given, or it did not finish)", missing_count,
                      fmt::join(missing, ", "), missing_count > missing.size() ? ", ..." : "", fmt::join(names, ", "));
  }
  std::vector<SubjectResult> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (joined[i].id.empty()) joined[i].id = ids[i];
    rows.push_back(summarize(joined[i]));
  }
  return rows;
}

}  // namespace grist
