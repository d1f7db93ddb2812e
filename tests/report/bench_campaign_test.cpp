// A benchmark campaign over several machines (report/bench_campaign.h): the shards' slices cover every run once,
// n shards merged give exactly the table one unsharded run gives (everything but the timings), and shards that do
// not make one campaign are refused with a clear error. The zoo test needs the zoo exported
// (/usr/bin/python3 zoo/zoo_export.py); budgets by iteration count.
#include "report/bench_campaign.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "data/test_files.h"
#include "report/bench_report.h"

namespace grist {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

TEST(BenchShard, ParsesIOfNAndRefusesTheRest) {
  auto s = parse_shard("2/4");
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"0/4", "shards count from 1 to 4"},
           {"5/4", "shards count from 1 to 4"},
           {"1/0", "the number of shards must be at least 1"},
           {"2", "expected I/N"},
           {"a/4", "whole numbers"},
           {"-1/4", "whole numbers"},
           {"1/4x", "whole numbers"},
           {"", "expected I/N"}}) {
    auto bad = parse_shard(text);
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.message().find("--shard " + text + ": "), 0u) << bad.message();
    EXPECT_NE(bad.message().find(why), std::string::npos) << bad.message();
  }
}

TEST(BenchShard, TheSlicesCoverEveryRunExactlyOnce) {
  for (int count : {1, 2, 3, 7, 40}) {
    std::vector<std::vector<int>> hits(5, std::vector<int>(3, 0));
    int largest = 0, smallest = 1 << 30;
    for (int i = 1; i <= count; ++i) {
      const auto slices = shard_runs(5, 3, {i, count});
      ASSERT_EQ(slices.size(), 5u);
      int size = 0;
      for (size_t s = 0; s < 5; ++s)
        for (int run : slices[s]) ++hits[s][static_cast<size_t>(run)], ++size;
      largest = std::max(largest, size);
      smallest = std::min(smallest, size);
      EXPECT_EQ(shard_runs(5, 3, {i, count}), slices) << "deterministic";
    }
    for (const auto& subject : hits)
      for (int h : subject) EXPECT_EQ(h, 1) << count << " shards";
    EXPECT_LE(largest - smallest, 1) << "round-robin: shards differ by one run at most";
  }
}

// One fabricated shard file per slice of a campaign of two subjects × two runs: what the merge reads.
struct Campaign {
  nlohmann::json config;
  std::vector<SubjectRuns> subjects;

  Campaign() {
    config = {{"grist", "test"}, {"runs", 2}, {"subjects", {{{"bug", "a"}}, {{"bug", "b"}}}}};
    for (const char* id : {"a", "b"}) {
      SubjectRuns s;
      s.id = id;
      s.expected_op = "Log";
      for (int run = 0; run < 2; ++run) {
        RunRecord r;
        r.run = run;
        r.triggered = run == 0 || s.id == "a";
        r.seconds = 0.25 + run;
        r.iterations = 10 + run;
        r.study_count = 11 + run;
        r.expected_op = true;
        r.producer = "Log '/Log' (monitored forward)";
        s.runs.push_back(r);
      }
      subjects.push_back(s);
    }
  }

  // The shard's part of the runs, as `bench --shard` writes it.
  std::string write(const std::string& folder, const ShardSpec& spec, const nlohmann::json& cfg) const {
    std::vector<SubjectRuns> made;
    const auto slices = shard_runs(subjects.size(), 2, spec);
    for (size_t i = 0; i < subjects.size(); ++i) {
      if (slices[i].empty()) continue;
      SubjectRuns s = subjects[i];
      s.runs.clear();
      if (s.setup_error.empty())  // a subject that could not be set up has no runs in any shard
        for (int run : slices[i]) s.runs.push_back(subjects[i].runs[static_cast<size_t>(run)]);
      made.push_back(s);
    }
    fs::create_directories(folder);
    const std::string path = (fs::path(folder) / shard_file_name(spec)).string();
    std::ofstream(path) << shard_json(cfg, spec, made).dump(2);
    return path;
  }
  std::string write(const std::string& folder, const ShardSpec& spec) const { return write(folder, spec, config); }
};

TEST(BenchMerge, JoinsFabricatedShardsIntoTheSubjectsRows) {
  ScratchDir dir;
  const Campaign c;
  for (int i = 1; i <= 3; ++i) c.write(dir.path(""), {i, 3});
  auto rows = merge_shards({dir.path("")});
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  std::vector<SubjectResult> unsharded;
  for (const SubjectRuns& s : c.subjects) unsharded.push_back(summarize(s));
  EXPECT_EQ(bench_json(*rows), bench_json(unsharded));  // the seconds too: a shard file keeps them exactly
  EXPECT_EQ(bench_markdown(*rows), bench_markdown(unsharded));
  EXPECT_EQ((*rows)[1].triggered, 1);
  EXPECT_EQ((*rows)[1].runs, 2);
}

// A subject that no shard could set up (its model missing, say) has no runs: the merge counts its runs as made by
// the shards it fell to and reports the error in its row. (The sanitizer build saw this path read a temporary's
// element after its end.)
TEST(BenchMerge, ASubjectNoShardCouldSetUpKeepsItsErrorAndNoRuns) {
  ScratchDir dir;
  Campaign c;
  c.subjects[1].setup_error = "zoo/b/model.onnx: no such file";
  for (int i = 1; i <= 2; ++i) c.write(dir.path(""), {i, 2});
  auto rows = merge_shards({dir.path("")});
  ASSERT_TRUE(rows) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].runs, 2);
  EXPECT_EQ((*rows)[1].runs, 0);
  EXPECT_EQ((*rows)[1].error, "zoo/b/model.onnx: no such file");
}

// amp-* runs carry the loss scaler's skipped steps: summarized per subject (run by run), kept through a shard
// file, and in the JSON, the CSV and the Markdown table; fp32 runs add nothing.
TEST(BenchMerge, TheScalersSkippedStepsReachTheSubjectsRowAndSurviveAShard) {
  ScratchDir dir;
  Campaign c;
  for (SubjectRuns& s : c.subjects)
    for (RunRecord& r : s.runs) {
      r.loss_scaling = true;
      r.scaler_skipped_steps = s.id == "a" ? 10 + r.run : 0;
    }
  for (int i = 1; i <= 2; ++i) c.write(dir.path(""), {i, 2});
  auto rows = merge_shards({dir.path("")});
  ASSERT_TRUE(rows) << rows.message();
  const SubjectResult a = summarize(c.subjects[0]);
  EXPECT_TRUE(a.loss_scaling);
  EXPECT_EQ(a.scaler_skipped_steps, (std::vector<int64_t>{10, 11}));
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].scaler_skipped_steps, a.scaler_skipped_steps);
  const nlohmann::json j = bench_json(*rows);
  EXPECT_EQ(j[0].at("scaler_skipped_steps").get<int64_t>(), 21);
  EXPECT_EQ(j[0].at("scaler_skipped_steps_per_run"), nlohmann::json::array({10, 11}));
  EXPECT_EQ(j[1].at("scaler_skipped_steps").get<int64_t>(), 0);
  const std::string md = bench_markdown(*rows);
  EXPECT_NE(md.find("| skipped steps |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 21 |"), std::string::npos) << md;
  EXPECT_NE(md.find("the scaler skipped 21 steps on an inf/NaN gradient over 4 runs"), std::string::npos) << md;
  const std::string csv = bench_csv(*rows);
  EXPECT_NE(csv.find(",scaler_skipped_steps"), std::string::npos) << csv;
  // Without a scaler (fp32) neither the column nor the field.
  const Campaign plain;
  std::vector<SubjectResult> fp32;
  for (const SubjectRuns& s : plain.subjects) fp32.push_back(summarize(s));
  EXPECT_FALSE(bench_json(fp32)[0].contains("scaler_skipped_steps"));
  EXPECT_EQ(bench_markdown(fp32).find("skipped steps"), std::string::npos);
  EXPECT_EQ(bench_csv(fp32).find("scaler_skipped_steps"), std::string::npos);
}

TEST(BenchMerge, RefusesShardsThatDoNotMakeOneCampaign) {
  ScratchDir scratch;  // one per test (its name is the test's): a folder per case inside it
  const Campaign c;
  auto refused = [&](const std::vector<std::string>& paths) {
    auto rows = merge_shards(paths);
    EXPECT_FALSE(rows);
    return rows ? std::string("merged") : rows.message();
  };
  {
    const std::string dir = scratch.path("options");
    c.write(dir, {1, 2});
    nlohmann::json other = c.config;
    other["runs"] = 3;
    const std::string second = c.write(dir, {2, 2}, other);
    const std::string why = refused({dir});
    EXPECT_NE(why.find("are not shards of one campaign: runs 2 against 3"), std::string::npos) << why;
    other = c.config;
    other["grist"] = "0.2.0";
    c.write(dir, {2, 2}, other);
    EXPECT_NE(refused({dir}).find("grist \"test\" against \"0.2.0\""), std::string::npos) << refused({dir});
    other = c.config;
    other["subjects"] = {{{"bug", "a"}}, {{"bug", "c"}}};
    c.write(dir, {2, 2}, other);
    EXPECT_NE(refused({dir}).find("subjects a,b against a,c"), std::string::npos) << refused({dir});
  }
  {
    const std::string one = c.write(scratch.path("missing"), {1, 2});
    const std::string why = refused({one});
    EXPECT_NE(why.find("missing runs (2): a run 2, b run 2 (of shard 2/2: not given, or it did not finish)"),
              std::string::npos)
        << why;
    EXPECT_NE(refused({one, one}).find("shard 1/2 given twice"), std::string::npos);
    const std::string third = c.write(scratch.path("split"), {1, 3});
    EXPECT_NE(refused({one, third}).find("splits of different sizes"), std::string::npos);
  }
  {
    // The same runs under two shards' names: runs given twice.
    const std::string whole = c.write(scratch.path("whole"), {1, 1});
    nlohmann::json j = nlohmann::json::parse(std::ifstream(whole));
    fs::create_directories(scratch.path("twice"));
    j["shard"] = {{"index", 1}, {"count", 2}};
    std::ofstream(scratch.path("twice/bench-shard-1-of-2.json")) << j.dump();
    j["shard"] = {{"index", 2}, {"count", 2}};
    std::ofstream(scratch.path("twice/bench-shard-2-of-2.json")) << j.dump();
    const std::string why = refused({scratch.path("twice")});
    EXPECT_NE(why.find("subject a seed 1 (run 1) is in "), std::string::npos) << why;
    EXPECT_NE(why.find("a run given twice"), std::string::npos) << why;
  }
  {
    const std::string bad = scratch.path("bench-shard-1-of-1.json");
    std::ofstream(bad) << "{\"rows\": []}";
    EXPECT_NE(refused({bad}).find("not a shard file"), std::string::npos) << refused({bad});
    std::ofstream(bad) << "{";
    EXPECT_NE(refused({bad}).find("not a readable shard file"), std::string::npos) << refused({bad});
    fs::create_directories(scratch.path("empty"));
    EXPECT_NE(refused({scratch.path("empty")}).find("holds no shard file"), std::string::npos);
    EXPECT_NE(refused({scratch.path("nope.json")}).find("no such file or folder"), std::string::npos);
  }
}

// Every field of the rows but the timings, through the files the benchmark writes.
std::vector<SubjectResult> without_timings(std::vector<SubjectResult> rows) {
  for (auto& r : rows)
    for (double& s : r.seconds) s = 1;
  return rows;
}

// The property the campaign rests on: on a few fast zoo subjects (28b's weight-only divisor among them, 37 with a
// budget below the study's 897 iterations), 2 and 3 shards merged give the table, JSON and CSV of one unsharded run.
TEST(BenchMerge, NShardsMergedGiveTheTableOfOneUnshardedRun) {
  const fs::path zoo = fs::path(GRIST_SOURCE_DIR) / "zoo";
  const std::vector<std::string> ids = {"2a", "28b", "32", "37"};
  for (const auto& id : ids)
    ASSERT_TRUE(fs::exists(zoo / id / "model.onnx")) << id << ": run /usr/bin/python3 zoo/zoo_export.py";
  BenchOptions o;
  o.zoo_dir = zoo.string();
  o.runs = 2;
  o.time_limit_s = 600;    // a backstop only
  o.max_iterations = 400;
  std::vector<SubjectResult> unsharded;
  int done = 0;
  for (const auto& id : ids) unsharded.push_back(run_subject(id, o, done, 8));
  ASSERT_EQ(unsharded[0].triggered, 2) << unsharded[0].error;
  const nlohmann::json config = campaign_config(o, ids, "");
  for (int count : {2, 3}) {
    SCOPED_TRACE(std::to_string(count) + " shards");
    ScratchDir dir;
    for (int i = 1; i <= count; ++i) {
      const ShardSpec spec{i, count};
      const auto slices = shard_runs(ids.size(), o.runs, spec);
      std::vector<SubjectRuns> made;
      for (size_t s = 0; s < ids.size(); ++s)
        if (!slices[s].empty()) made.push_back(run_subject_runs(ids[s], o, slices[s], false, done, 8));
      std::ofstream(dir.path(shard_file_name(spec))) << shard_json(config, spec, made).dump(2);
    }
    auto merged = merge_shards({dir.path("")});
    ASSERT_TRUE(merged) << merged.message();
    const auto a = without_timings(unsharded), b = without_timings(*merged);
    EXPECT_EQ(bench_json(b).dump(2), bench_json(a).dump(2));
    EXPECT_EQ(bench_markdown(b), bench_markdown(a));
    EXPECT_EQ(bench_csv(b), bench_csv(a));
  }
}

}  // namespace
}  // namespace grist
