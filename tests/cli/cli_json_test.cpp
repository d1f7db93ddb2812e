// The machine-readable outputs of the grist command, parsed and checked field by field: run --json, hunt
// --json with the witness it writes (its sidecar and arrays), replay --json, scan --json and SARIF 2.1.0,
// and the benchmark's JSON and CSV files. The values are the known answers of the committed models.
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/npy.h"
#include "data/npz.h"
#include "data/test_files.h"
#include "util/sha256.h"

namespace grist {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

const std::string kSource = GRIST_SOURCE_DIR;
const std::string kModels = kSource + "/tests/models/";

struct Outcome {
  int status = -1;
  std::string out, err;
};

// Runs `grist ARGS` with stdout and stderr captured.
Outcome grist(const ScratchDir& dir, const std::string& args) {
  const std::string out = dir.path("stdout"), err = dir.path("stderr");
  const int raw = std::system((std::string(GRIST_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
  Outcome r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = testing::read_file_bytes(out);
  r.err = testing::read_file_bytes(err);
  return r;
}

std::vector<std::string> names_of(const NamedTensors& arrays) {
  std::vector<std::string> v;
  for (const auto& [name, t] : arrays) v.push_back(name);
  return v;
}

json parse(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << text;
  return j;
}

TEST(CliJson, RunReportsEveryInputAndOutputAndNoProducerWhenFinite) {
  ScratchDir dir;
  const Outcome r = grist(dir, "run " + kModels + "mlp.onnx --batch 3 --backward y --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = parse(r.out);
  EXPECT_EQ(j.at("model"), kModels + "mlp.onnx");
  ASSERT_EQ(j.at("inputs").size(), 1u);
  EXPECT_EQ(j["inputs"][0].at("name"), "x");
  EXPECT_EQ(j["inputs"][0].at("dtype"), "float32");
  EXPECT_EQ(j["inputs"][0].at("shape"), json::array({3, 20}));
  EXPECT_GE(j["inputs"][0].at("min").get<double>(), 0.0);  // --range defaults to [0, 1)
  EXPECT_LT(j["inputs"][0].at("max").get<double>(), 1.0);
  ASSERT_EQ(j.at("outputs").size(), 1u);
  const json& y = j["outputs"][0];
  EXPECT_EQ(y.at("name"), "y");
  EXPECT_EQ(y.at("shape"), json::array({3, 5}));
  for (const char* k : {"nan", "pos_inf", "neg_inf"}) EXPECT_EQ(y.at(k), 0) << k;
  EXPECT_LE(y.at("min").get<double>(), y.at("mean").get<double>());
  EXPECT_LE(y.at("mean").get<double>(), y.at("max").get<double>());
  EXPECT_EQ(j.at("forward"), json({{"found", false}}));
  EXPECT_EQ(j.at("backward_from"), "y");
  EXPECT_EQ(j.at("backward"), json({{"found", false}}));
  EXPECT_TRUE(j.at("forward_ms").is_number());
  EXPECT_TRUE(j.at("backward_ms").is_number());
}

const Tensor* find_array(const NamedTensors& arrays, const std::string& name) {
  for (const auto& [n, t] : arrays)
    if (n == name) return &t;
  return nullptr;
}

// run --output writes what grist computed under the ONNX names, so it can be set beside another framework's
// values: here PyTorch's, recorded when the model was exported, on the same input.
TEST(CliJson, RunOutputHoldsTheOutputsPyTorchComputedAndDumpEveryValue) {
  ScratchDir dir;
  auto expected = read_npz(kModels + "mlp.expected.npz");
  ASSERT_TRUE(expected) << expected.message();
  const Tensor* x = find_array(*expected, "input:x");
  const Tensor* y = find_array(*expected, "output:y");
  ASSERT_TRUE(x && y);
  ASSERT_TRUE(write_npy(dir.path("x.npy"), *x));
  const std::string run = "run " + kModels + "mlp.onnx --input x=" + dir.path("x.npy");

  Outcome r = grist(dir, run + " --output " + dir.path("out.npz") + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parse(r.out).at("output_file"),
            json({{"path", dir.path("out.npz")}, {"arrays", 1}, {"dump", false}, {"escaped_names", 0}}));
  auto out = read_npz(dir.path("out.npz"));
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(names_of(*out), (std::vector<std::string>{"y"}));
  const Tensor& got = out->front().second;
  ASSERT_EQ(got.dtype(), DType::Float32);
  ASSERT_EQ(got.shape(), y->shape());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get_as_double(i), y->get_as_double(i), 1e-5) << i;

  r = grist(dir, run + " --dump --output " + dir.path("dump.npz"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dump.npz: 4 arrays (inputs, every node output), 2 names with %XX escapes"), std::string::npos)
      << r.out;
  auto dump = read_npz(dir.path("dump.npz"));
  ASSERT_TRUE(dump) << dump.message();
  EXPECT_EQ(names_of(*dump), (std::vector<std::string>{"x", "%2Ffc1%2FGemm_output_0", "%2FRelu_output_0", "y"}));
  const Tensor* relu = find_array(*dump, "%2FRelu_output_0");
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->shape(), (Shape{3, 16}));
  for (int64_t i = 0; i < relu->numel(); ++i) EXPECT_GE(relu->get_as_double(i), 0.0);
  const Tensor* dumped_x = find_array(*dump, "x");
  ASSERT_TRUE(dumped_x);
  ASSERT_EQ(dumped_x->nbytes(), x->nbytes());
  EXPECT_EQ(std::memcmp(dumped_x->raw(), x->raw(), x->nbytes()), 0);

  // An existing file is left as it was, and the run is refused before it starts.
  const std::string before = testing::read_file_bytes(dir.path("out.npz"));
  r = grist(dir, run + " --dump --output " + dir.path("out.npz"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "grist: error: --output " + dir.path("out.npz") + ": already exists; refusing to overwrite it\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::read_file_bytes(dir.path("out.npz")), before);
}

TEST(CliJson, RunNamesTheFirstProducerWithItsCountsIndexAndInputs) {
  ScratchDir dir;
  const Outcome r =
      grist(dir, "run " + kSource + "/examples/log_softmax.onnx --range=-300,300 --batch 8 --seed 3 --json");
  ASSERT_EQ(r.status, 1) << r.err;
  const json j = parse(r.out);
  const json& f = j.at("forward");
  EXPECT_EQ(f.at("found"), true);
  EXPECT_EQ(f.at("node"), "/Log");
  EXPECT_EQ(f.at("op_type"), "Log");
  EXPECT_EQ(f.at("pass"), "forward");
  EXPECT_EQ(f.at("value"), "log_probs");
  EXPECT_EQ(f.at("shape"), json::array({8, 5}));
  EXPECT_EQ(f.at("nan"), 0);
  EXPECT_EQ(f.at("pos_inf"), 0);
  EXPECT_EQ(f.at("neg_inf"), 15);
  EXPECT_EQ(f.at("first_index"), json::array({0, 0}));
  EXPECT_EQ(f.at("first_value"), "-inf");  // JSON has no infinities: a string
  ASSERT_EQ(f.at("inputs").size(), 1u);
  EXPECT_EQ(f["inputs"][0].at("name"), "/Softmax_output_0");
  EXPECT_EQ(f["inputs"][0].at("value_at_index"), "0");
  EXPECT_EQ(f["inputs"][0].at("min"), 0.0);  // the softmax underflowed
  // The output summary counts the same infinities.
  EXPECT_EQ(j.at("outputs")[0].at("neg_inf"), 15);
}

// The bug-26 toy: the report, the witness files it names, and their replay agree with each other and with
// the known answer (iteration 235, log(sigmoid) at '/Log').
TEST(CliJson, HuntReportWitnessAndReplayAgree) {
  ScratchDir dir;
  const std::string out = dir.path("w");
  const Outcome r = grist(dir, "hunt " + kModels + "logreg_toy.toml --json -q --out " + out);
  ASSERT_EQ(r.status, 1) << r.err;
  // JSON Lines, each written the moment it is final: the hazards, one line per outcome, the summary.
  std::vector<json> lines;
  std::istringstream stream(r.out);
  for (std::string line; std::getline(stream, line);) lines.push_back(parse(line));
  ASSERT_EQ(lines.size(), 3u) << r.out;  // it stops at the first trigger
  EXPECT_EQ(lines[0].at("event"), "hazards");
  EXPECT_EQ(lines[1].at("event"), "outcome");
  EXPECT_EQ(lines[2].at("event"), "summary");
  EXPECT_EQ(lines[2].at("triggered"), 1);
  EXPECT_EQ(lines[2].at("input_reached"), 1);
  EXPECT_EQ(lines[2].at("distinct_producers"), 1);
  EXPECT_EQ(lines[2].at("interrupted"), false);
  const json& j = lines[0];
  EXPECT_EQ(j.at("model"), kModels + "logreg_toy.onnx");
  ASSERT_EQ(j.at("hazards").size(), 2u);
  const json& h = j["hazards"][0];
  EXPECT_EQ(h.at("id"), 1);
  EXPECT_EQ(h.at("node"), "/Log");
  EXPECT_EQ(h.at("op"), "Log");
  EXPECT_EQ(h.at("condition"), "Log input <= 0");
  EXPECT_EQ(h.at("pattern"), "log(sigmoid)");
  EXPECT_EQ(h.at("objective_on"), "/Sigmoid_output_0");
  EXPECT_FALSE(h.at("fix").get<std::string>().empty());
  EXPECT_EQ(j["hazards"][1].at("pattern"), "log(1 - v)");
  const json& o = lines[1];
  EXPECT_EQ(o.at("hazard"), 1);
  EXPECT_EQ(o.at("triggered"), true);
  EXPECT_EQ(o.at("iterations"), 235);
  // The study's count (its program counted one ahead: [expect] counter_offset = 1) is its published 236.
  EXPECT_EQ(j.at("counting"), (json{{"counter_offset", 1}, {"counter_step", 1}}));
  EXPECT_EQ(o.at("study_count"), 236);
  EXPECT_EQ(o.at("pass"), "monitored forward");
  EXPECT_EQ(o.at("strategy"), "grist");
  EXPECT_EQ(o.at("class"), "input-reached");
  EXPECT_EQ(o.at("weights_from_iteration"), 0);
  EXPECT_EQ(o.at("fired_hazard"), 1);
  EXPECT_EQ(o.at("producer").at("node"), "/Log");
  EXPECT_EQ(o.at("producer").at("neg_inf"), 1);
  EXPECT_EQ(o.at("violated"), "Log input <= 0 at [0, 0] = 0");
  EXPECT_EQ(o.at("chain"),
            "Log '/Log' -> Mul '/Mul' -> Add '/Add_1' -> ReduceMean '/ReduceMean' -> Neg '/Neg' -> 'cost'");

  // The witness sidecar.
  const std::string sidecar = o.at("witness").at("json"), arrays = o.at("witness").at("npz");
  EXPECT_EQ(sidecar, out + "/witness-logreg_toy-h1.json");
  EXPECT_EQ(arrays, out + "/witness-logreg_toy-h1.npz");
  const json w = parse(testing::read_file_bytes(sidecar));
  EXPECT_EQ(w.at("grist_witness"), 1);
  EXPECT_EQ(w.at("model"), kModels + "logreg_toy.onnx");
  auto hash = sha256_file(kModels + "logreg_toy.onnx");
  ASSERT_TRUE(hash.is_ok());
  EXPECT_EQ(w.at("model_sha256"), *hash);
  EXPECT_EQ(w.at("npz"), "witness-logreg_toy-h1.npz");
  EXPECT_EQ(w.at("hazard").at("node"), "/Log");
  EXPECT_EQ(w.at("producer").at("node"), "/Log");
  EXPECT_EQ(w.at("pass"), "monitored forward");
  EXPECT_EQ(w.at("iteration"), 235);
  EXPECT_EQ(w.at("loss"), "cost");
  EXPECT_EQ(w.at("ftz"), false);
  EXPECT_EQ(w.at("config").at("change"), 0.15);
  EXPECT_EQ(w.at("config").at("switch_data"), false);
  EXPECT_EQ(w.at("replay"), "grist replay " + sidecar);
  // Its arrays: the inputs fed to the pass, and the weights training moved.
  auto npz = read_npz(arrays);
  ASSERT_TRUE(npz.is_ok()) << npz.message();
  std::set<std::string> keys;
  for (const auto& [k, t] : *npz) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"input:x", "input:y", "weight:W", "weight:b"}));
  for (const auto& [k, t] : *npz) {
    if (k == "input:x") {
      EXPECT_EQ(t.shape(), (Shape{6, 2}));
    }
  }

  const Outcome replay = grist(dir, "replay " + sidecar + " --json");
  ASSERT_EQ(replay.status, 1) << replay.err;  // 1: reproduced
  const json rj = parse(replay.out);
  EXPECT_EQ(rj.at("reproduced"), true);
  EXPECT_EQ(rj.at("expected_node"), "/Log");
  EXPECT_EQ(rj.at("message").get<std::string>().rfind("reproduced: Log", 0), 0u) << rj.at("message");

  // The same witness with the trained weights put back to zero: sigmoid(0) = 0.5, every value finite, so
  // the replay says so and exits 0.
  NamedTensors untrained;
  for (const auto& [k, t] : *npz) {
    Tensor copy = t;
    if (k.rfind("weight:", 0) == 0)
      for (int64_t i = 0; i < copy.numel(); ++i) copy.data<float>()[i] = 0;
    untrained.emplace_back(k, copy);
  }
  ASSERT_TRUE(write_npz(out + "/untrained.npz", untrained));
  json altered = w;
  altered["npz"] = "untrained.npz";
  std::ofstream(out + "/untrained.json") << altered.dump(2);
  const Outcome finite = grist(dir, "replay " + out + "/untrained.json --json");
  ASSERT_EQ(finite.status, 0) << finite.err;  // 0: not reproduced
  const json fj = parse(finite.out);
  EXPECT_EQ(fj.at("reproduced"), false);
  EXPECT_EQ(fj.at("message"), "not reproduced: every value is finite now; the witness recorded '/Log'");
}

// The scan's JSON and its SARIF agree: one SARIF result per may-fail hazard, each pointing at its rule
// and its node.
TEST(CliJson, ScanJsonAndSarifDescribeTheSameHazards) {
  ScratchDir dir;
  const std::string sarif_path = dir.path("scan.sarif");
  const Outcome r = grist(dir, "scan " + kModels + "vae_head.onnx --json --sarif " + sarif_path);
  ASSERT_EQ(r.status, 1) << r.err;  // exp(logvar / 2) may overflow under the default ranges
  const json j = parse(r.out);
  EXPECT_EQ(j.at("model"), kModels + "vae_head.onnx");
  const json& hazards = j.at("hazards");
  const json& summary = j.at("summary");
  EXPECT_EQ(summary.at("hazards"), hazards.size());
  std::map<std::string, int> verdicts;
  std::vector<const json*> may_fail;
  for (const json& h : hazards) {
    ++verdicts[h.at("verdict").get<std::string>()];
    if (h.at("verdict") == "may fail") may_fail.push_back(&h);
    EXPECT_EQ(h.at("operand").size(), 2u);
    for (const char* k : {"id", "node", "op_type", "failure", "condition", "danger", "fix_hint"})
      EXPECT_TRUE(h.contains(k)) << k;
  }
  EXPECT_EQ(summary.at("may_fail"), verdicts["may fail"]);
  EXPECT_EQ(summary.at("proved_safe"), verdicts["proved safe"]);
  EXPECT_EQ(summary.at("propagated_only"), verdicts["propagated only"]);
  EXPECT_EQ(verdicts.size(), 2u + (verdicts.count("propagated only") ? 1u : 0u)) << "unknown verdict names";
  ASSERT_FALSE(may_fail.empty());
  bool exp_flagged = false;
  for (const json* h : may_fail) exp_flagged |= h->at("op_type") == "Exp";
  EXPECT_TRUE(exp_flagged);
  bool input_range = false;  // the input's range, as RANUM assumes it
  for (const json& a : j.at("assumed_ranges"))
    input_range |= a.at("name") == "x" && a.at("kind") == "input" && a.at("range") == json::array({-50.0, 50.0});
  EXPECT_TRUE(input_range);
  EXPECT_TRUE(j.at("unbounded_nodes").empty());

  const json s = parse(testing::read_file_bytes(sarif_path));
  EXPECT_EQ(s.at("version"), "2.1.0");
  EXPECT_EQ(s.at("$schema"), "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(s.at("runs").size(), 1u);
  const json& run = s["runs"][0];
  EXPECT_EQ(run.at("tool").at("driver").at("name"), "grist");
  const json& rules = run.at("tool").at("driver").at("rules");
  const json& results = run.at("results");
  ASSERT_EQ(results.size(), may_fail.size());
  std::set<std::string> rule_ids;
  for (const json& rule : rules) {
    EXPECT_TRUE(rule_ids.insert(rule.at("id").get<std::string>()).second) << "rule listed twice: " << rule.at("id");
    EXPECT_FALSE(rule.at("shortDescription").at("text").get<std::string>().empty());
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const json& res = results[i];
    const json& h = *may_fail[i];
    EXPECT_EQ(res.at("ruleId"), "grist/" + h.at("failure_id").get<std::string>());
    const size_t index = res.at("ruleIndex");
    ASSERT_LT(index, rules.size());
    EXPECT_EQ(rules[index].at("id"), res.at("ruleId"));
    EXPECT_EQ(res.at("level"), "warning");
    const json& loc = res.at("locations").at(0);
    EXPECT_EQ(loc.at("physicalLocation").at("artifactLocation").at("uri"), kModels + "vae_head.onnx");
    EXPECT_EQ(loc.at("logicalLocations").at(0).at("name"), h.at("node"));
    const std::string text = res.at("message").at("text");
    EXPECT_NE(text.find(h.at("node").get<std::string>()), std::string::npos) << text;
    EXPECT_NE(text.find("Fix: "), std::string::npos) << text;
  }
}

// Proved safe everywhere: an empty SARIF run (a CI gate that passes), and exit 0.
TEST(CliJson, ScanOfASafeModelHasNoSarifResults) {
  ScratchDir dir;
  const std::string sarif_path = dir.path("safe.sarif");
  const std::string assume = " --assume x=0,1 --assume fc.weight=-0.01,0.01 --ranum-weights";
  const Outcome r = grist(dir, "scan " + kModels + "vae_head.onnx" + assume + " --sarif " + sarif_path);
  ASSERT_EQ(r.status, 0) << r.err;
  const json s = parse(testing::read_file_bytes(sarif_path));
  EXPECT_TRUE(s.at("runs")[0].at("results").empty());
  EXPECT_TRUE(s.at("runs")[0].at("tool").at("driver").at("rules").empty());
}

// The benchmark's files hold one row per subject with what the table printed.
TEST(CliJson, BenchWritesJsonAndCsvRowsPerSubject) {
  ScratchDir dir;
  fs::create_directories(dir.path("zoo/toy"));
  std::string manifest = testing::read_file_bytes(kModels + "logreg_toy.toml");
  manifest = std::regex_replace(manifest, std::regex("model = \"logreg_toy.onnx\""),
                                "model = \"" + kModels + "logreg_toy.onnx\"");
  std::ofstream(dir.path("zoo/toy/manifest.toml")) << manifest << "op = \"Log\"\n";
  const Outcome r =
      grist(dir, "bench " + dir.path("zoo") + " --runs 2 --max-iterations 1000 -q --out " + dir.path("out"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::string json_file, csv_file;
  for (const auto& e : fs::directory_iterator(dir.path("out"))) {
    if (e.path().extension() == ".json") json_file = e.path().string();
    if (e.path().extension() == ".csv") csv_file = e.path().string();
  }
  ASSERT_FALSE(json_file.empty());
  const json rows = parse(testing::read_file_bytes(json_file));
  ASSERT_EQ(rows.size(), 1u);
  const json& row = rows[0];
  EXPECT_EQ(row.at("bug"), "toy");
  EXPECT_EQ(row.at("expected_op"), "Log");
  EXPECT_EQ(row.at("runs"), 2);
  EXPECT_EQ(row.at("triggered"), 2);
  EXPECT_EQ(row.at("expected_op_hits"), 2);
  EXPECT_EQ(row.at("iterations"), json::array({235, 235}));
  EXPECT_EQ(row.at("study_counts"), json::array({236, 236}));
  EXPECT_EQ(row.at("study_iterations"), 236);
  EXPECT_EQ(row.at("first_producer"), "Log '/Log' (monitored forward)");
  // The CSV: a header and one row, with as many fields, the producer among them.
  std::istringstream csv(testing::read_file_bytes(csv_file));
  std::string header, line, extra;
  ASSERT_TRUE(std::getline(csv, header));
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_FALSE(std::getline(csv, extra) && !extra.empty());
  EXPECT_EQ(header.rfind("bug,", 0), 0u) << header;
  EXPECT_EQ(line.rfind("toy,Log,2,2,", 0), 0u) << line;
  EXPECT_NE(line.find("\"Log '/Log' (monitored forward)\""), std::string::npos) << line;
  auto fields = [](const std::string& s) {  // commas outside quotes, plus one
    int n = 1;
    bool quoted = false;
    for (char c : s) quoted ^= c == '"', n += !quoted && c == ',';
    return n;
  };
  EXPECT_EQ(fields(line), fields(header));
}

}  // namespace
}  // namespace grist
