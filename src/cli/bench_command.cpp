// `grist bench ZOO_DIR`: every benchmark subject hunted with several seeds, a table as results arrive,
// and CSV/JSON/Markdown files of the whole run.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "report/bench_report.h"
#include "search/benchmark.h"

namespace grist::cli {

namespace {

namespace fs = std::filesystem;

struct BenchFlags {
  std::string zoo = "zoo";
  int runs = 10;
  std::string variant;
  double time_limit = 60;
  std::string only;
  std::string out = "bench-results";
  int64_t seed = 1;
  bool quiet = false;
  bool fix = false;
  double fix_hunt_seconds = 5;
};

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
  o.time_limit_s = f.time_limit;
  o.only = split_commas(f.only);
  o.fix = f.fix;
  o.fix_hunt_seconds = f.fix_hunt_seconds;
  if (f.fix) o.fix_out = (fs::path(f.out) / "fixed").string();
  if (o.runs < (f.fix ? 0 : 1)) return fail(f.fix ? "--runs must not be negative" : "--runs must be at least 1");
  if (!(o.time_limit_s > 0)) return fail("--time-limit must be positive (seconds per run)");
  if (!f.variant.empty()) {
    auto v = parse_variant(f.variant);
    if (!v) return fail(v.message());
    o.variant = *v;
  }
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
  if (o.fix) {
    std::printf("\n%s", bench_fix_header().c_str());
    for (const auto& r : rows) std::printf("%s", bench_fix_row(r).c_str());
    std::printf("\n%s", bench_fix_totals(rows).c_str());
  }

  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return fail(fmt::format("{}: cannot create: {}", f.out, ec.message()));
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  const fs::path base = fs::path(f.out) / fmt::format("bench-{}", stamp);
  for (auto [ext, text] : {std::pair<const char*, std::string>{".csv", bench_csv(rows)},
                           {".json", bench_json(rows).dump(2) + "\n"},
                           {".md", bench_markdown(rows) + (o.fix ? "\n" + bench_fix_markdown(rows) : "")}}) {
    if (auto st = write_new(base.string() + ext, text); !st) return fail(st.message());
  }
  std::printf("results: %s.{csv,json,md}\n", base.c_str());
  for (const auto& r : rows)
    if (!r.error.empty() || r.triggered < r.runs) return kExitNonFinite;  // some subject did not always trigger
  for (const auto& r : rows)
    if (r.fix.ran && !r.fix.verified) return kExitNonFinite;  // some subject's bug got no verified repair
  return kExitClean;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Run the benchmark zoo (the study's bugs rebuilt as ONNX models, zoo/<id>/manifest.toml): hunt each subject "
      "with --runs seeds, print a row per bug as results arrive and write CSV/JSON/Markdown files.\n"
      "Exit 0 every subject triggered in every run, 1 some did not, 2 error. Export the models first: "
      "/usr/bin/python3 zoo/zoo_export.py");
  cmd->add_option("zoo", f->zoo, "the zoo folder")->capture_default_str();
  cmd->add_option("--runs", f->runs, "seeds per subject")->capture_default_str();
  cmd->add_option("--variant", f->variant, "override every manifest: grist, grist-ns, original, random")
      ->check(CLI::IsMember({"grist", "grist-ns", "original", "random"}));
  cmd->add_option("--time-limit", f->time_limit, "seconds per run")->capture_default_str();
  cmd->add_option("--only", f->only, "comma-separated subject ids, e.g. 2a,14,26");
  cmd->add_option("--seed", f->seed, "seed of the first run (run k uses seed+k)")->capture_default_str();
  cmd->add_option("--out", f->out, "folder for the result files")->capture_default_str();
  cmd->add_flag("--quiet,-q", f->quiet, "no progress bar");
  cmd->add_flag("--fix", f->fix,
                "also run grist fix on every subject: the repair of its bug with checks a-d, and the preconditions "
                "I / W / W+I (with --runs 0, only that); the repaired models go to OUT/fixed/<bug>/");
  cmd->add_option("--fix-hunt-seconds", f->fix_hunt_seconds, "the budget of the fix's hunt check (b)")
      ->capture_default_str();
  cmd->callback([f, &action] { action = [f] { return bench_main(*f); }; });
}

}  // namespace grist::cli
