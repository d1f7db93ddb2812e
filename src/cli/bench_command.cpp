// `grist bench ZOO_DIR`: every benchmark subject hunted with several seeds, a table as results arrive,
// and CSV/JSON/Markdown files of the whole run.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/commands.h"
#include "cli/durations.h"
#include "report/bench_campaign.h"
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
  bool stall_rule = false;
  bool craft_early = false;
  bool no_race_weights = false;
  bool no_race_training = false;
  std::string precision;  // empty: each manifest's
  bool quiet = false;
  bool fix = false;
  double fix_hunt_seconds = 5;
  std::string shard;  // "i/n": only that slice of the runs, written to a shard file
};

struct MergeFlags {
  std::vector<std::string> shards;
  std::string out = "bench-results";
};

// Each trigger's witness written to a scratch folder and replayed as `grist replay` would, then removed.
// A witness that does not fail again is a bug of grist's: it is kept in `keep`/<subject>-seed<S>/ to be looked at,
// and named on stderr, instead of being removed with the scratch folder.
Result<bool> replay_in_scratch(const fs::path& scratch, const fs::path& keep, const Manifest& m,
                               const HazardOutcome& out) {
  auto files = write_witness(scratch.string(), m.model, m, out);
  if (!files) return files.error();
  auto replay = replay_witness(files->json);
  std::error_code ec;
  fs::remove(files->json, ec);
  fs::remove(files->npz, ec);
  if (!replay) return replay.error();
  if (!replay->reproduced) {
    const std::string subject = fs::path(m.model).parent_path().filename().string();
    const fs::path dir = keep / fmt::format("{}-seed{}", subject, m.search.seed);
    auto kept = write_witness(dir.string(), m.model, m, out);
    std::fprintf(stderr, "\nbench: bug %s seed %llu: the witness did not fail again on replay (%s); %s\n",
                 subject.c_str(), static_cast<unsigned long long>(m.search.seed),
                 replay->event.found ? ("it fired at " + replay->event.node_name + " instead").c_str() : "all finite",
                 kept ? ("kept: " + kept->json).c_str() : ("not kept: " + kept.message()).c_str());
  }
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

// bench's exit status for its rows: 1 when a witness did not fail again, a trigger contradicted a proof, a subject
// did not trigger in every run or fired on another op, or a repair was not verified.
int verdict(const std::vector<SubjectResult>& rows) {
  // A witness that does not fail again, or a trigger of a hazard the scan proved safe, is a bug of grist's: every
  // such subject is named, not only the first row that fails.
  bool bug = false;
  for (const auto& r : rows)
    if (r.reproduced < r.replayed || r.contradicted_proofs > 0) {
      std::fprintf(stderr, "bug %s: %d of %d witnesses failed again on replay, %d triggers contradicted a proof\n",
                   r.id.c_str(), r.reproduced, r.replayed, r.contradicted_proofs);
      bug = true;
    }
  if (bug) return kExitNonFinite;
  // A trigger on another op than the subject's facts name is a wrong answer, not a success.
  for (const auto& r : rows)
    if (!r.error.empty() || r.triggered < r.runs || r.expected_op_hits < r.triggered) return kExitNonFinite;
  for (const auto& r : rows)
    if (r.fix.ran && !r.fix.verified) return kExitNonFinite;  // some subject's bug got no verified repair
  return kExitClean;
}

// The totals under the rows already printed, the CSV/JSON/Markdown files at base.{csv,json,md}, and bench's exit
// status for the rows.
int finish(const std::vector<SubjectResult>& rows, bool fix, const fs::path& base) {
  std::printf("\n%s", bench_totals(rows).c_str());
  if (fix) {
    std::printf("\n%s", bench_fix_header().c_str());
    for (const auto& r : rows) std::printf("%s", bench_fix_row(r).c_str());
    std::printf("\n%s", bench_fix_totals(rows).c_str());
  }
  for (auto [ext, text] : {std::pair<const char*, std::string>{".csv", bench_csv(rows)},
                           {".json", bench_json(rows).dump(2) + "\n"},
                           {".md", bench_markdown(rows) + (fix ? "\n" + bench_fix_markdown(rows) : "")}}) {
    if (auto st = write_new(base.string() + ext, text); !st) return fail(st.message());
  }
  std::printf("results: %s.{csv,json,md}\n", base.c_str());
  return verdict(rows);
}

// A shard's runs of the subjects its slice touches, written to OUT/bench-shard-I-of-N.json. Its exit status says
// only whether that file was written: the campaign's verdict is the merge's.
int shard_main(const BenchFlags& f, const BenchOptions& o, const std::vector<std::string>& ids, const ShardSpec& spec,
               bool tty) {
  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return fail(fmt::format("{}: cannot create: {}", f.out, ec.message()));
  const fs::path file = fs::path(f.out) / shard_file_name(spec);
  if (fs::exists(file)) return fail(fmt::format("{}: exists already; not overwriting it", file.string()));
  const nlohmann::json config = campaign_config(o, ids, f.variant);
  const auto slices = shard_runs(ids.size(), o.runs, spec);
  int total = 0, done = 0;
  for (const auto& runs : slices) total += static_cast<int>(runs.size());
  std::printf("shard %d/%d: %d of the %d runs (%zu subjects x %d seeds)\n", spec.index, spec.count, total,
              static_cast<int>(ids.size()) * o.runs, ids.size(), o.runs);
  std::printf("%s", bench_header().c_str());
  std::fflush(stdout);
  std::vector<SubjectRuns> made;
  std::vector<SubjectResult> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (slices[i].empty()) continue;
    made.push_back(run_subject_runs(ids[i], o, slices[i], /*stop_at_error=*/false, done, total));
    rows.push_back(summarize(made.back()));
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::printf("%s", bench_row(rows.back()).c_str());
    std::fflush(stdout);
  }
  std::printf("\n%s", bench_totals(rows).c_str());
  if (auto st = write_new(file, shard_json(config, spec, made).dump(2) + "\n"); !st) return fail(st.message());
  std::printf("shard: %s (join the shards with grist bench merge)\n", file.c_str());
  return kExitClean;
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
  o.fix = f.fix;
  o.fix_hunt_seconds = f.fix_hunt_seconds;
  if (f.fix) o.fix_out = (fs::path(f.out) / "fixed").string();
  if (o.runs < (f.fix ? 0 : 1)) return fail(f.fix ? "--runs must not be negative" : "--runs must be at least 1");
  if (f.seed < 0) return fail(fmt::format("--seed {}: must not be negative", f.seed));
  if (o.max_iterations < 0) return fail("--max-iterations must not be negative");
  if (!f.variant.empty()) {
    auto v = parse_variant(f.variant);
    if (!v) return fail(v.message());
    o.variant = *v;
  }
  o.no_weights = f.reach != "weights";
  o.no_training = f.reach == "inputs";
  o.stall_rule = f.stall_rule;
  o.craft_early = f.craft_early;
  o.no_race_weights = f.no_race_weights;
  o.no_race_training = f.no_race_training;
  if (o.craft_early && o.stall_rule) return fail("--craft-early and --stall-rule: one rule for when crafted training joins");
  if (!f.precision.empty()) {
    auto p = parse_precision(f.precision);
    if (!p) return fail(fmt::format("--precision: {}", p.message()));
    o.precision = *p;
  }
  std::optional<ShardSpec> shard;
  if (!f.shard.empty()) {
    auto spec = parse_shard(f.shard);
    if (!spec) return fail(spec.message());
    if (f.fix) return fail("--shard does not combine with --fix (grist fix runs once per subject: run it unsharded)");
    shard = *spec;
  }
  const fs::path scratch = fs::temp_directory_path() / fmt::format("grist-bench-replay-{}", ::getpid());
  const fs::path unreproduced = fs::path(f.out) / "unreproduced";
  if (!f.no_replay) o.replay = [scratch, unreproduced](const Manifest& m, const HazardOutcome& out) {
    return replay_in_scratch(scratch, unreproduced, m, out);
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
  if (shard) {
    const int status = shard_main(f, o, *ids, *shard, tty);
    std::error_code scratch_ec;
    fs::remove_all(scratch, scratch_ec);
    return status;
  }

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
  return finish(rows, o.fix, base);
}

int merge_main(const MergeFlags& f) {
  const fs::path base = fs::path(f.out) / "bench-merged";
  for (const char* ext : {".csv", ".json", ".md"})
    if (fs::exists(base.string() + ext))
      return fail(fmt::format("{}{}: exists already; not overwriting it", base.string(), ext));
  auto rows = merge_shards(f.shards);
  if (!rows) return fail(rows.message());
  std::printf("%s", bench_header().c_str());
  for (const auto& r : *rows) std::printf("%s", bench_row(r).c_str());
  std::error_code ec;
  fs::create_directories(f.out, ec);
  if (ec) return fail(fmt::format("{}: cannot create: {}", f.out, ec.message()));
  return finish(*rows, false, base);
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
  cmd->add_flag("--stall-rule", f->stall_rule,
                "every hunt ends each stage when the search stalls instead of on its share of the budget (grist hunt "
                "--stall-rule)");
  cmd->add_flag("--craft-early", f->craft_early,
                "every hunt lets crafted training join when the inputs' objective stalls, the weights keeping their "
                "clock (grist hunt --craft-early)");
  cmd->add_flag("--no-race-weights", f->no_race_weights,
                "no hunt races the weights on a second thread (grist hunt --no-race-weights)");
  cmd->add_flag("--no-race-training", f->no_race_training,
                "no hunt races crafted training on a second thread (grist hunt --no-race-training)");
  cmd->add_option("--precision", f->precision,
                  "override every manifest's [numerics] precision: fp32, fp16, bf16, amp-fp16, amp-bf16");
  cmd->add_flag("--quiet,-q", f->quiet, "no progress bar");
  cmd->add_flag("--fix", f->fix,
                "also run grist fix on every subject: the repair of its bug with checks a-d, and the preconditions "
                "I / W / W+I (with --runs 0, only that); the repaired models go to OUT/fixed/<bug>/");
  cmd->add_option("--fix-hunt-seconds", f->fix_hunt_seconds, "the budget of the fix's hunt check (b)")
      ->capture_default_str();
  cmd->add_option("--shard", f->shard,
                  "I/N: make only shard I of N (counted from 1) of the runs (subject by subject, seed by seed, dealt "
                  "round-robin) and write them to OUT/bench-shard-I-of-N.json for `grist bench merge`; exit 0 once "
                  "written (the merge gives the campaign's verdict)");

  auto m = std::make_shared<MergeFlags>();
  CLI::App* merge = cmd->add_subcommand(
      "merge",
      "Join the shard files of one campaign (`grist bench --shard I/N`, run on any machines) into the table and "
      "files one unsharded run writes: OUT/bench-merged.{csv,json,md}. Exit as grist bench does; 2 when the shards "
      "come from different options, subjects or grist versions, or a run is missing or given twice.");
  merge->add_option("shards", m->shards, "shard files, or folders holding bench-shard-*.json")->required();
  merge->add_option("--out", m->out, "folder for the merged result files")->capture_default_str();
  merge->callback([m, &action] { action = [m] { return merge_main(*m); }; });
  cmd->callback([f, merge, &action] {
    if (!merge->parsed()) action = [f] { return bench_main(*f); };
  });
}

}  // namespace grist::cli
