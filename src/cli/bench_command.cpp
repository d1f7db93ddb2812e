// `grist bench ZOO_DIR`: every benchmark subject hunted with several seeds, a table as results arrive,
// and CSV/JSON/Markdown files of the whole run.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cli/durations.h"
#include "report/bench_report.h"
#include "report/witness.h"
#include "search/benchmark.h"

namespace grist::cli {

namespace {

namespace fs = std::filesystem;

struct BenchFlags {
  std::string zoo = "zoo";
  int runs = 10;
  std::string variant;
  std::string time_limit = "60";  // a bare number is seconds
  int64_t max_iterations = 0;
  std::string only;
  std::string out = "bench-results";
  int64_t seed = 1;
  std::string reach = "weights";
  bool no_replay = false;
  bool quiet = false;
};

// Each trigger's witness written to a scratch folder and replayed as `grist replay` would, then removed.
Result<bool> replay_in_scratch(const fs::path& scratch, const Manifest& m, const HazardOutcome& out) {
  auto files = write_witness(scratch.string(), m.model, m, out);
  if (!files) return files.error();
  auto replay = replay_witness(files->json);
  std::error_code ec;
  fs::remove(files->json, ec);
  fs::remove(files->npz, ec);
  if (!replay) return replay.error();
  return replay->reproduced;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Writes text to a new file; never replaces one.
Status write_new(const fs::path& p, const std::string& text) {
  GRIST_CHECK(!fs::exists(p), "{}: exists already; not overwriting it", p.string());
  std::ofstream f(p);
  f << text;
  GRIST_CHECK(f.good(), "{}: cannot write", p.string());
  return Status::ok();
}

int bench_main(const BenchFlags& f) {
  BenchOptions o;
  o.zoo_dir = f.zoo;
  o.runs = f.runs;
  o.first_seed = static_cast<uint64_t>(f.seed);
  auto limit = parse_duration(f.time_limit, TimeUnit::Seconds, "--time-limit");
  if (!limit) return fail(limit.message());
  o.time_limit_s = *limit;
  o.max_iterations = f.max_iterations;
  o.only = split_commas(f.only);
  if (o.runs < 1) return fail("--runs must be at least 1");
  if (f.seed < 0) return fail(fmt::format("--seed {}: must not be negative", f.seed));
  if (o.max_iterations < 0) return fail("--max-iterations must not be negative");
  if (!f.variant.empty()) {
    auto v = parse_variant(f.variant);
    if (!v) return fail(v.message());
    o.variant = *v;
  }
  o.no_weights = f.reach != "weights";
  o.no_training = f.reach == "inputs";
  const fs::path scratch = fs::temp_directory_path() / fmt::format("grist-bench-replay-{}", ::getpid());
  if (!f.no_replay) o.replay = [scratch](const Manifest& m, const HazardOutcome& out) {
    return replay_in_scratch(scratch, m, out);
  };
  auto ids = list_subjects(o.zoo_dir, o.only);
  if (!ids) return fail(ids.message());
  const bool tty = !f.quiet && isatty(fileno(stderr));
  o.on_run = [tty](const std::string& subject, int run, int done, int total) {
    if (!tty) return;
    const int width = 30;
    int filled = total > 0 ? done * width / total : width;
    std::fprintf(stderr, "\r\033[K[%s%s] %d/%d runs  bug %s run %d", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total, subject.c_str(), run);
    std::fflush(stderr);
  };

  std::printf("%s", bench_header().c_str());
  std::fflush(stdout);
  std::vector<SubjectResult> rows;
  int done = 0;
  const int total = static_cast<int>(ids->size()) * o.runs;
  for (const auto& id : *ids) {
    rows.push_back(run_subject(id, o, done, total));
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::printf("%s", bench_row(rows.back()).c_str());
    std::fflush(stdout);
  }
  std::printf("\n%s", bench_totals(rows).c_str());
  std::error_code scratch_ec;
  fs::remove_all(scratch, scratch_ec);

  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return fail(fmt::format("{}: cannot create: {}", f.out, ec.message()));
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  // A second run within the same second gets bench-STAMP-2, -3, ...: never an existing file's name.
  fs::path base;
  for (int n = 1;; ++n) {
    base = fs::path(f.out) / fmt::format("bench-{}{}", stamp, n > 1 ? fmt::format("-{}", n) : "");
    const std::string b = base.string();
    if (!fs::exists(b + ".csv") && !fs::exists(b + ".json") && !fs::exists(b + ".md")) break;
  }
  for (auto [ext, text] : {std::pair<const char*, std::string>{".csv", bench_csv(rows)},
                           {".json", bench_json(rows).dump(2) + "\n"},
                           {".md", bench_markdown(rows)}}) {
    if (auto st = write_new(base.string() + ext, text); !st) return fail(st.message());
  }
  std::printf("results: %s.{csv,json,md}\n", base.c_str());
  for (const auto& r : rows) {
    // A witness that does not fail again, or a trigger of a hazard the scan proved safe, is a bug of grist's.
    if (r.reproduced < r.replayed || r.contradicted_proofs > 0) {
      std::fprintf(stderr, "bug %s: %d of %d witnesses failed again on replay, %d triggers contradicted a proof\n",
                   r.id.c_str(), r.reproduced, r.replayed, r.contradicted_proofs);
      return kExitNonFinite;
    }
    // A trigger on another op than the subject's facts name is a wrong answer, not a success.
    if (!r.error.empty() || r.triggered < r.runs || r.expected_op_hits < r.triggered) return kExitNonFinite;
  }
  return kExitClean;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Run the benchmark zoo (the study's bugs rebuilt as ONNX models, zoo/<id>/manifest.toml): hunt each subject "
      "with --runs seeds, print a row per bug as results arrive and write CSV/JSON/Markdown files.\n"
      "Exit 0 every subject triggered in every run on the op its manifest expects, 1 some did not (or fired on "
      "another op), 2 error. Export the models first: "
      "/usr/bin/python3 zoo/zoo_export.py");
  cmd->add_option("zoo", f->zoo, "the zoo folder")->capture_default_str();
  cmd->add_option("--runs", f->runs, "seeds per subject")->capture_default_str();
  cmd->add_option("--variant", f->variant, "override every manifest: grist, grist-ns, original, random")
      ->check(CLI::IsMember({"grist", "grist-ns", "original", "random"}));
  cmd->add_option("--time-limit", f->time_limit, "per run: 90s, 1.5m, 2h, or a bare number of seconds")
      ->capture_default_str();
  cmd->add_option("--max-iterations", f->max_iterations,
                  "iterations per hazard, for every subject (the weights join after a quarter of them instead of "
                  "after a quarter of the time): a run whose outcome does not depend on the machine's speed");
  cmd->add_option("--only", f->only, "comma-separated subject ids, e.g. 2a,14,26");
  cmd->add_option("--seed", f->seed, "seed of the first run (run k uses seed+k)")->capture_default_str();
  cmd->add_option("--out", f->out, "folder for the result files")->capture_default_str();
  cmd->add_option("--reach", f->reach,
                  "how far each hunt goes beyond the inputs: inputs (as GRIST), training (crafted training batches "
                  "too), weights (the weights too, the default)")
      ->check(CLI::IsMember({"inputs", "training", "weights"}))
      ->capture_default_str();
  cmd->add_flag("--no-replay", f->no_replay,
                "do not replay each trigger's witness (by default every witness is written to a scratch folder "
                "and replayed as `grist replay` would, and the table says how many fail again)");
  cmd->add_flag("--quiet,-q", f->quiet, "no progress bar");
  cmd->callback([f, &action] { action = [f] { return bench_main(*f); }; });
}

}  // namespace grist::cli
