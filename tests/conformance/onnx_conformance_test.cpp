// Runs the ONNX project's own per-operator conformance tests (Debian's libonnx-testdata) in grist, with the
// tolerances of ONNX's backend test runner (rtol 1e-3, atol 1e-7), and counts what it did: every case is
// run, refused by the importer, or uses an op grist lacks, and at least kMinRun cases must run and kMinPass
// pass, so an importer or registry regression that drops cases turns this red instead of reading "0 fail".
// Cases listed in expected_failures_*.txt must be seen, run and fail with the message fragment their entry
// quotes (an error for the stated reason, not any failure); one that passes, is not seen, or fails for
// another reason fails the run, so the lists stay true.
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/onnx_reference.h"

namespace fs = std::filesystem;
using grist::testing::ReferenceCase;

namespace {

// The counts of this suite on Debian 12's libonnx-testdata (932 node tests), measured; raise them when ops
// are added. A full build only: GRIST_ONLY_FAMILIES builds leave families out.
constexpr int kMinRun = 749;
constexpr int kMinPass = 732;

struct ExpectedFailure {
  std::string fragment;  // a part of the failure message that names the reason
  std::string reason;    // for people
  std::string file;
  int line = 0;
  bool seen = false;
};

// One list per op family: tests/conformance/expected_failures_<family>.txt, lines of
//   test_name  "fragment of the failure message"  reason
std::map<std::string, ExpectedFailure> load_expected_failures() {
  std::map<std::string, ExpectedFailure> r;
  for (const auto& e : fs::directory_iterator(fs::path(GRIST_SOURCE_DIR) / "tests/conformance")) {
    const std::string fname = e.path().filename().string();
    if (fname.rfind("expected_failures", 0) != 0 || e.path().extension() != ".txt") continue;
    std::ifstream f(e.path());
    std::string line;
    int number = 0;
    while (std::getline(f, line)) {
      ++number;
      if (line.empty() || line[0] == '#') continue;
      const auto where = fmt::format("{}:{}", fname, number);
      const size_t open = line.find('"');
      const size_t close = open == std::string::npos ? open : line.find('"', open + 1);
      if (close == std::string::npos || close == open + 1) {
        ADD_FAILURE() << where << ": expected test_name  \"fragment of the failure message\"  reason";
        continue;
      }
      ExpectedFailure ef;
      ef.fragment = line.substr(open + 1, close - open - 1);
      const size_t reason = line.find_first_not_of(" \t", close + 1);
      ef.reason = reason == std::string::npos ? "" : line.substr(reason);
      ef.file = fname;
      ef.line = number;
      const std::string name = line.substr(0, line.find_first_of(" \t"));
      EXPECT_FALSE(ef.reason.empty()) << where << ": " << name << " states no reason";
      EXPECT_TRUE(r.emplace(name, ef).second) << where << ": " << name << " is listed twice";
    }
  }
  return r;
}

}  // namespace

TEST(OnnxConformance, SupportedOpsMatchReferenceOutputs) {
  const fs::path node_dir = grist::testing::onnx_node_test_dir();
  ASSERT_TRUE(fs::is_directory(node_dir)) << node_dir << " missing: install libonnx-testdata";
  auto expected_failures = load_expected_failures();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(node_dir))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  int refused = 0, unsupported = 0, run = 0, passed = 0, expected_failed = 0, outputs = 0;
  std::map<std::string, int> missing_ops;  // op type -> cases that need it
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    const ReferenceCase c = grist::testing::run_reference_case(dir);
    auto ef = expected_failures.find(name);
    if (ef != expected_failures.end()) ef->second.seen = true;
    switch (c.outcome) {
      case ReferenceCase::Outcome::Refused:
        ++refused;
        if (ef != expected_failures.end())
          ADD_FAILURE() << name << " is refused by the importer (" << c.message << "), not run: its entry in "
                        << ef->second.file << " is stale";
        continue;
      case ReferenceCase::Outcome::Unsupported:
        ++unsupported;
        ++missing_ops[c.message];
        if (ef != expected_failures.end())
          ADD_FAILURE() << name << " needs ops grist lacks (" << c.message << "), so it is not run: its entry in "
                        << ef->second.file << " is stale";
        continue;
      case ReferenceCase::Outcome::Failed:
      case ReferenceCase::Outcome::Passed:
        break;
    }
    ++run;
    outputs += c.outputs;
    const bool ok = c.outcome == ReferenceCase::Outcome::Passed;
    if (ef != expected_failures.end()) {
      const ExpectedFailure& x = ef->second;
      if (ok) {
        ADD_FAILURE() << name << " passes now: remove it from " << x.file << ":" << x.line;
      } else if (c.message.find(x.fragment) == std::string::npos) {
        ADD_FAILURE() << name << " fails, but not for the reason " << x.file << ":" << x.line << " states (\""
                      << x.fragment << "\"): " << c.message;
      } else {
        ++expected_failed;
      }
      continue;
    }
    if (ok) {
      ++passed;
    } else {
      ADD_FAILURE() << name << ": " << c.message;
    }
  }
  for (const auto& [name, x] : expected_failures)
    if (!x.seen) ADD_FAILURE() << x.file << ":" << x.line << ": no conformance test named " << name;

  std::printf("ONNX conformance: %zu cases: %d run (%d outputs compared), %d pass, %d are expected failures, %d fail; "
              "%d refused by the importer, %d use ops grist lacks\n",
              dirs.size(), run, outputs, passed, expected_failed, run - passed - expected_failed, refused, unsupported);
  std::string lacking;
  for (const auto& [ops, n] : missing_ops) lacking += fmt::format("{}{} ({})", lacking.empty() ? "" : ", ", ops, n);
  std::printf("ops lacking: %s\n", lacking.c_str());
#ifndef GRIST_PARTIAL_OPS
  EXPECT_GE(run, kMinRun) << "fewer conformance cases run than before: an importer or registry regression?";
  EXPECT_GE(passed, kMinPass) << "fewer conformance cases pass than before";
#endif
}
