// `grist bench --fix` adds its columns and its summary beside RANUM's only when the fix ran, so the benchmark's
// files stay as they were without it.
#include <gtest/gtest.h>

#include "report/bench_report.h"

using namespace grist;

namespace {

SubjectResult subject(const std::string& id, bool fix, bool verified, bool pre_i, bool pre_w) {
  SubjectResult r;
  r.id = id;
  r.expected_op = "Log";
  r.runs = 1;
  r.triggered = 1;
  r.seconds = {0.1};
  if (!fix) return r;
  r.fix.ran = true;
  r.fix.hazard = "#1 Log '/Log' (Log input <= 0)";
  r.fix.repair = verified ? "log-softmax" : "";
  r.fix.a = r.fix.b = r.fix.c = r.fix.d = verified ? "passed" : "FAILED";
  r.fix.verified = verified;
  r.fix.pre_i = pre_i;
  r.fix.pre_w = pre_w;
  r.fix.pre_wi = true;
  r.fix.width_i = 0.01;
  r.fix.size_wi = 0.5;
  r.fix.hazards = 1;
  r.fix.fixed = verified;
  return r;
}

}  // namespace

TEST(BenchFixReport, ColumnsAppearOnlyWhenTheFixRan) {
  const std::vector<SubjectResult> plain{subject("2a", false, false, false, false)};
  EXPECT_EQ(bench_csv(plain).find("fix_repair"), std::string::npos);
  EXPECT_FALSE(bench_json(plain)[0].contains("fix"));
  EXPECT_EQ(bench_fix_totals(plain), "");
  const std::vector<SubjectResult> fixed{subject("2a", true, true, true, true), subject("3", true, false, false, true)};
  EXPECT_NE(bench_csv(fixed).find("fix_repair,fix_a"), std::string::npos);
  EXPECT_EQ(bench_json(fixed)[0]["fix"]["repair"], "log-softmax");
  EXPECT_NE(bench_fix_row(fixed[1]).find("NONE"), std::string::npos);
}

TEST(BenchFixReport, TotalsCountVerifiedRepairsAndPreconditionsBesideRanum) {
  const std::vector<SubjectResult> rows{subject("2a", true, true, true, true), subject("3", true, false, false, true),
                                        subject("4", true, true, false, false)};
  const std::string t = bench_fix_totals(rows);
  EXPECT_NE(t.find("for 2/3"), std::string::npos) << t;
  EXPECT_NE(t.find("W+I 3/3 (100 %; 0 hold the manifest's data), W 2/3 (67 %), I 1/3 (33 %"), std::string::npos) << t;
  EXPECT_NE(t.find("79/79"), std::string::npos) << t;
  EXPECT_NE(t.find("72/79"), std::string::npos) << t;
  EXPECT_NE(t.find("37/79"), std::string::npos) << t;
}
