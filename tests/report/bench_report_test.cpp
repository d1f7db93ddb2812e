// The benchmark's arithmetic and tables (search/benchmark.h, report/bench_report.h): medians and means of
// the triggered runs, subjects in natural order, errors kept per subject, the totals and speed-up over the
// study's times, and CSV and Markdown rows that keep their columns whatever the producer's text.
#include "report/bench_report.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "data/test_files.h"
#include "search/benchmark.h"

namespace grist {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

SubjectResult triggered(const std::string& id, std::vector<double> seconds, std::vector<int64_t> iterations) {
  SubjectResult r;
  r.id = id;
  r.expected_op = "Log";
  r.runs = static_cast<int>(seconds.size());
  r.triggered = r.runs;
  r.expected_op_hits = r.runs;
  r.seconds = std::move(seconds);
  r.iterations = iterations;
  r.study_counts = iterations;
  r.producer = "Log '/Log' (monitored forward)";
  return r;
}

TEST(BenchResult, MediansAndMeansOfTheTriggeredRuns) {
  SubjectResult odd = triggered("1", {3, 1, 2}, {30, 10, 20});
  EXPECT_EQ(odd.mean_seconds(), 2.0);
  EXPECT_EQ(odd.median_seconds(), 2.0);
  EXPECT_EQ(odd.median_iterations(), 20);
  SubjectResult even = triggered("2", {4, 1, 2, 3}, {40, 10, 25, 30});
  EXPECT_EQ(even.mean_seconds(), 2.5);
  EXPECT_EQ(even.median_seconds(), 2.5);
  EXPECT_EQ(even.median_iterations(), 27);  // (25 + 30) / 2 in integers
  even.study_counts = {41, 11, 26, 31};
  EXPECT_EQ(even.median_study_count(), 28);
  const SubjectResult none;
  EXPECT_EQ(none.mean_seconds(), 0.0);
  EXPECT_EQ(none.median_seconds(), 0.0);
  EXPECT_EQ(none.median_iterations(), 0);
}

TEST(BenchSubjects, NaturalOrderAndUnknownIds) {
  ScratchDir dir;
  for (const char* id : {"10", "2b", "2a", "3", "empty"}) fs::create_directories(dir.path(id));
  for (const char* id : {"10", "2b", "2a", "3"}) std::ofstream(dir.path(std::string(id) + "/manifest.toml")) << "";
  auto all = list_subjects(dir.path(""), {});
  ASSERT_TRUE(all) << all.message();
  EXPECT_EQ(*all, (std::vector<std::string>{"2a", "2b", "3", "10"}));  // "empty" has no manifest
  auto some = list_subjects(dir.path(""), {"10", "2a"});
  ASSERT_TRUE(some) << some.message();
  EXPECT_EQ(*some, (std::vector<std::string>{"10", "2a"}));  // in the order asked
  auto unknown = list_subjects(dir.path(""), {"2a", "empty"});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.message().find("--only empty: no subject 'empty'"), std::string::npos) << unknown.message();
  auto missing = list_subjects("/nonexistent/zoo", {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(), "/nonexistent/zoo: not a folder (expected the zoo, with one folder per subject)");
}

// A subject that cannot run keeps its error in its row, and its runs still count towards the progress.
TEST(BenchSubjects, ASubjectThatCannotRunKeepsItsError) {
  ScratchDir dir;
  fs::create_directories(dir.path("bad"));
  fs::create_directories(dir.path("gone"));
  std::ofstream(dir.path("bad/manifest.toml")) << "model = 3\n";
  std::ofstream(dir.path("gone/manifest.toml"))
      << "model = \"model.onnx\"\n[expect]\nop = \"Div\"\nstudy_seconds = 2.0\n";
  BenchOptions o;
  o.zoo_dir = dir.path("");
  o.runs = 3;
  int progress_calls = 0;
  o.on_run = [&](const std::string&, int, int, int) { ++progress_calls; };
  int done = 0;
  const SubjectResult bad = run_subject("bad", o, done, 6);
  EXPECT_NE(bad.error.find("key 'model': must be a string"), std::string::npos) << bad.error;
  EXPECT_EQ(done, 3);
  const SubjectResult gone = run_subject("gone", o, done, 6);
  EXPECT_EQ(gone.error, dir.path("gone/model.onnx") +
                            " is missing: export the zoo first (/usr/bin/python3 zoo/zoo_export.py --only gone)");
  EXPECT_EQ(gone.expected_op, "Div");
  EXPECT_EQ(gone.study_seconds, 2.0);
  EXPECT_EQ(gone.runs, 0);
  EXPECT_EQ(done, 6);
  EXPECT_EQ(progress_calls, 2);
  EXPECT_EQ(bench_row(gone).find("gone  Div      ERROR  "), 0u) << bench_row(gone);
}

TEST(BenchTables, TotalsCountSubjectsAndTheSpeedUpOverTheStudysTimes) {
  SubjectResult fast = triggered("a", {0.5, 1.5}, {10, 12});
  fast.study_seconds = 10.0;
  SubjectResult flaky = triggered("b", {2}, {5});
  flaky.runs = 2;  // one of two runs triggered: not in the speed-up
  flaky.study_seconds = 100.0;
  SubjectResult never;
  never.id = "c";
  never.runs = 2;
  SubjectResult no_study = triggered("d", {3, 3}, {1, 1});
  const std::string totals = bench_totals({fast, flaky, never, no_study});
  EXPECT_NE(totals.find("4 subjects: 2 triggered in every run, 3 in at least one run."), std::string::npos) << totals;
  // Only the subjects triggered in every run that have a study time: 1.0 s (a's mean) against 10 s.
  EXPECT_NE(totals.find("grist 1.000 s in total (mean per subject), GRIST 10.00 s: 10x faster."), std::string::npos)
      << totals;
  EXPECT_EQ(bench_totals({never}).find("faster"), std::string::npos);
  const std::string row = bench_row(fast);
  EXPECT_NE(row.find("2/2"), std::string::npos) << row;
  EXPECT_NE(row.find("10.00 s"), std::string::npos) << row;
  EXPECT_NE(row.find("10x"), std::string::npos) << row;
  EXPECT_NE(row.find(fast.producer), std::string::npos) << row;
  const std::string untriggered = bench_row(never);
  EXPECT_NE(untriggered.find("0/2"), std::string::npos) << untriggered;
  EXPECT_EQ(untriggered.find("x "), std::string::npos) << "no speed-up without a trigger: " << untriggered;
}

// Fields split at commas outside quotes; quotes inside a field are doubled.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

TEST(BenchTables, CsvAndMarkdownRowsKeepTheirColumns) {
  SubjectResult odd = triggered("x", {1}, {7});
  odd.producer = "Div 'a,\"b\"' (training forward)";  // a comma and quotes in a node name
  SubjectResult broken;
  broken.id = "y";
  broken.error = "model.onnx: cannot open, really";
  SubjectResult never;
  never.id = "z";
  never.runs = 1;
  const std::vector<SubjectResult> rows{odd, broken, never};

  std::istringstream csv(bench_csv(rows));
  std::string header, line;
  ASSERT_TRUE(std::getline(csv, header));
  const std::vector<std::string> columns = csv_fields(header);
  std::vector<std::vector<std::string>> parsed;
  while (std::getline(csv, line)) parsed.push_back(csv_fields(line));
  ASSERT_EQ(parsed.size(), 3u);
  for (const auto& fields : parsed) EXPECT_EQ(fields.size(), columns.size()) << fields[0];
  auto column = [&](const std::string& name) {
    auto it = std::find(columns.begin(), columns.end(), name);
    EXPECT_NE(it, columns.end()) << name;
    return static_cast<size_t>(it - columns.begin());
  };
  EXPECT_EQ(parsed[0][column("first_producer")], odd.producer);
  EXPECT_EQ(parsed[0][column("median_iterations")], "7");
  EXPECT_EQ(parsed[1][column("error")], broken.error);
  EXPECT_EQ(parsed[2][column("triggered")], "0");
  EXPECT_EQ(parsed[2][column("mean_s")], "");  // no trigger, no time

  std::istringstream md(bench_markdown(rows));
  std::getline(md, header);
  const auto cells = [](const std::string& s) { return std::count(s.begin(), s.end(), '|'); };
  const auto want = cells(header);
  std::getline(md, line);
  EXPECT_EQ(cells(line), want) << line;  // the |---| rule
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(std::getline(md, line));
    EXPECT_EQ(cells(line), want) << line;
  }
}

}  // namespace
}  // namespace grist
