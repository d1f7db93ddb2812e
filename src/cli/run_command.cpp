// `grist run MODEL.onnx`: evaluate a model once on given or random data, summarise its outputs and name
// the first node that produced a NaN or Inf (forward, and backward when asked), and on request write the
// values it computed to an .npz, for comparing grist with another framework.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "config/manifest.h"
#include "engine/checkpoint.h"
#include "data/file_write.h"
#include "data/load.h"
#include "data/npz.h"
#include "data/random_input.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "report/dot.h"
#include "report/run_report.h"
#include "util/thread_pool.h"

namespace grist::cli {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE or FILE
  std::vector<double> range{0.0, 1.0};
  std::vector<int64_t> int_range{0, 10};
  std::vector<std::string> dims;    // NAME=SIZE
  int64_t batch = 1;
  uint64_t seed = 0;
  bool ftz = false;
  std::string precision;  // empty: the manifest's, else fp32
  std::string backward_from;
  bool json = false;
  std::string dropout = "model";
  std::string dot;
  std::string output;  // .npz of the graph outputs
  bool dump = false;   // ... and of the inputs and every node output
  int threads = 1;     // kernel threads (util/thread_pool.h)
};

// Refuses an --output that could not be written, before the model runs rather than after.
Status check_output_path(const std::string& path) {
  struct stat st;
  GRIST_CHECK(::lstat(path.c_str(), &st) != 0, "--output {}: already exists; refusing to overwrite it", path);
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  GRIST_CHECK(parent.empty() || std::filesystem::is_directory(parent, ec), "--output {}: {} is not a folder", path,
              parent.string());
  return Status::ok();
}

// The arrays --output writes, by escaped value name: the graph outputs, or with --dump the inputs and
// every node output in the order they were computed. Counts in `escaped` the names that had to change.
NamedTensors output_arrays(const Graph& g, const Executor& ex, bool dump, int& escaped) {
  std::vector<ValueId> ids;
  if (dump) {
    ids = g.inputs;
    for (const Node& n : g.nodes)
      for (ValueId id : n.outputs)
        if (id != kNoValue) ids.push_back(id);
  }
  ids.insert(ids.end(), g.outputs.begin(), g.outputs.end());  // an output may be an input or a weight
  NamedTensors arrays;
  std::set<ValueId> seen;
  escaped = 0;
  for (ValueId id : ids) {
    if (!seen.insert(id).second || !ex.value(id).defined()) continue;
    const std::string& name = g.value(id).name;
    std::string key = npz_array_name(name);
    escaped += key != name;
    arrays.emplace_back(std::move(key), ex.value(id));
  }
  return arrays;
}

Status parse_dims(const RunOptions& o, RandomInputSpec& spec) {
  GRIST_CHECK(o.batch >= 1, "--batch {}: must be at least 1", o.batch);
  spec.default_dim = o.batch;
  for (const auto& d : o.dims) {
    auto eq = d.find('=');
    GRIST_CHECK(eq != std::string::npos && eq > 0, "--dim expects NAME=SIZE, got '{}'", d);
    try {
      size_t used = 0;
      long long v = std::stoll(d.substr(eq + 1), &used);
      GRIST_CHECK(used == d.size() - eq - 1 && v >= 0, "--dim {}: the size must be a non-negative integer", d);
      spec.dims[d.substr(0, eq)] = v;
    } catch (const std::exception&) {
      return make_error("--dim {}: the size must be a non-negative integer", d);
    }
  }
  return Status::ok();
}

// Loads every --input into a name -> tensor map.
Result<std::map<std::string, Tensor>> load_inputs(const RunOptions& o, const Graph& g) {
  std::map<std::string, Tensor> given;
  for (const auto& arg : o.inputs) {
    auto eq = arg.find('=');
    std::string name = eq == std::string::npos ? "" : arg.substr(0, eq);
    std::string path = eq == std::string::npos ? arg : arg.substr(eq + 1);
    auto loaded = load_tensors(path);
    if (!loaded) return loaded.error();
    if (name.empty()) {
      // A file of named tensors (.npz, .pb): each goes to the input of its name.
      for (auto& [n, t] : *loaded) {
        GRIST_CHECK(g.find_value(n) != kNoValue, "{}: holds '{}', but the model has no input of that name", path, n);
        given[n] = std::move(t);
      }
      continue;
    }
    GRIST_CHECK(g.find_value(name) != kNoValue, "--input {}: the model has no input named '{}'", arg, name);
    if (loaded->size() == 1) {
      given[name] = std::move(loaded->front().second);
      continue;
    }
    bool found = false;
    for (auto& [n, t] : *loaded)
      if (n == name) {
        given[name] = std::move(t);
        found = true;
      }
    GRIST_CHECK(found, "{}: holds {} tensors and none is named '{}'", path, loaded->size(), name);
  }
  return given;
}

int run(const RunOptions& flags) {
  RunOptions o = flags;
  // A manifest in the model's place, as hunt and scan take it: its model, its flush-to-zero setting and the
  // weights of the checkpoint it resumes from.
  std::string checkpoint;
  if (o.model.size() > 5 && o.model.compare(o.model.size() - 5, 5, ".toml") == 0) {
    auto m = read_manifest(o.model);
    if (!m) return fail(m.message());
    o.model = m->model;
    o.ftz = o.ftz || m->ftz;
    checkpoint = m->train.checkpoint;
    if (o.precision.empty()) o.precision = std::string(precision_name(m->precision));
  }
  auto precision = parse_precision(o.precision.empty() ? "fp32" : o.precision);
  if (!precision) return fail(fmt::format("--precision: {}", precision.message()));
  if (o.dump && o.output.empty()) return fail("--dump needs --output FILE.npz to write the values to");
  if (!o.output.empty())
    if (auto st = check_output_path(o.output); !st) return fail(st.message());
  auto graph = import_onnx_file(o.model);
  if (!graph) return fail(graph.message());
  if (auto st = use_checkpoint_weights(checkpoint, *graph); !st) return fail(st.message());
  const Graph& g = *graph;

  set_kernel_threads(o.threads);
  ExecutorOptions eo;
  eo.flush_denormals = o.ftz;
  eo.precision = *precision;
  eo.seed = o.seed;
  if (o.dropout == "off") eo.dropout_training = false;
  if (o.dropout == "on") eo.dropout_training = true;
  // One forward, and only the graph outputs read after it: each activation is freed after its last use.
  eo.release_dead_values = !o.dump && o.backward_from.empty();
  // The executor keeps its own copy of every weight: each is moved there from the graph (nothing in a run reads
  // the graph's copies again), so a large model's weights are held once, never twice.
  std::vector<std::pair<ValueId, Tensor>> weights;
  for (ValueId id : graph->initializers)
    if (graph->value(id).initial) weights.emplace_back(id, graph->take_initial(id));
  auto ex = Executor::create(g, eo);
  if (!ex) return fail(fmt::format("{}: {}", o.model, ex.message()));
  for (auto& [id, w] : weights)
    if (auto st = ex->set_input(id, std::move(w)); !st) return fail(st.message());
  weights.clear();

  RandomInputSpec spec;
  if (o.range.size() != 2 || !(o.range[0] < o.range[1])) return fail("--range expects LO,HI with LO < HI");
  if (o.int_range.size() != 2 || !(o.int_range[0] < o.int_range[1]))
    return fail("--int-range expects LO,HI with LO < HI");
  spec.lo = o.range[0];
  spec.hi = o.range[1];
  spec.int_lo = o.int_range[0];
  spec.int_hi = o.int_range[1];
  if (auto st = parse_dims(o, spec); !st) return fail(st.message());
  auto given = load_inputs(o, g);
  if (!given) return fail(given.message());

  RunReport report;
  report.model = o.model;
  Rng data_rng(o.seed);
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = given->find(v.name);
    Tensor t;
    if (it != given->end()) {
      t = std::move(it->second);
      given->erase(it);
    } else {
      auto r = random_input(v, spec, data_rng);
      if (!r) return fail(r.message());
      t = std::move(r).value();
    }
    report.inputs.push_back(summarize(v.name, t));
    if (auto st = ex->set_input(id, std::move(t)); !st) return fail(st.message());
  }
  for (const auto& [name, t] : *given) {  // initializers overridden by data files
    if (auto st = ex->set_input(name, t); !st) return fail(st.message());
  }

  auto t0 = std::chrono::steady_clock::now();
  if (auto st = ex->forward(); !st) return fail(st.message());
  auto t1 = std::chrono::steady_clock::now();
  report.forward_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  for (ValueId id : g.outputs) report.outputs.push_back(summarize(g.value(id).name, ex->value(id)));
  report.forward = ex->forward_event();

  if (!o.backward_from.empty()) {
    ValueId loss = g.find_value(o.backward_from);
    if (loss == kNoValue) return fail(fmt::format("--backward: the model has no value named '{}'", o.backward_from));
    if (auto st = ex->backward(loss); !st) return fail(st.message());
    report.ran_backward = true;
    report.backward_from = o.backward_from;
    report.backward = ex->backward_event();
    report.masked_backward = ex->masked_backward_event();
    report.backward_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  }

  if (!o.dot.empty()) {
    std::vector<DotMark> marks;
    for (const NonFiniteEvent* e : {&report.forward, &report.backward})
      if (e->found) marks.push_back({e->node, e->describe()});
    const ValueId loss = o.backward_from.empty() ? kNoValue : g.find_value(o.backward_from);
    if (auto st = write_new_file(o.dot, to_dot(g, marks, loss)); !st) return fail(st.message());
  }
  std::string wrote;
  nlohmann::json wrote_json;
  if (!o.output.empty()) {
    int escaped = 0;
    const NamedTensors arrays = output_arrays(g, *ex, o.dump, escaped);
    {
      SignalsDeferred whole;  // a Ctrl-C now waits for the file to be published or removed
      if (auto st = write_npz(o.output, arrays); !st) return fail(st.message());
    }
    wrote = fmt::format("wrote {}: {} arrays ({}){}\n", o.output, arrays.size(),
                        o.dump ? "inputs, every node output" : "outputs",
                        escaped ? fmt::format(", {} names with %XX escapes", escaped) : "");
    wrote_json = {{"path", o.output}, {"arrays", arrays.size()}, {"dump", o.dump}, {"escaped_names", escaped}};
  }
  if (o.json) {
    nlohmann::json j = to_json(report);
    if (!o.output.empty()) j["output_file"] = wrote_json;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s%s", to_text(report).c_str(), wrote.c_str());
  }
  bool bad = report.forward.found || report.backward.found;
  for (const auto& s : report.outputs) bad |= !s.counts.all_finite();
  return bad ? kExitNonFinite : kExitClean;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Evaluate a model once on given data (or random data in a range), print a summary of its outputs and\n"
      "name the first node that produced a NaN or Inf. Exit 1 when a non-finite value appears.");
  cmd->add_option("model", o->model, "the ONNX model file, or a manifest (.toml) naming it")->required();
  cmd->add_option("--input,-i", o->inputs,
                  "data for an input: NAME=FILE, or FILE alone for a file of named tensors (.npy, .npz, .pb, IDX)");
  cmd->add_option("--range", o->range, "range of random float inputs, LO,HI")->delimiter(',')->capture_default_str();
  cmd->add_option("--int-range", o->int_range, "range of random integer inputs, LO,HI (HI excluded)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--dim", o->dims, "size of a symbolic dimension, NAME=SIZE (e.g. batch=64)");
  cmd->add_option("--batch", o->batch, "size of every symbolic dimension not given with --dim")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed for random data and random ops")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads the convolutions split their work over")
      ->check(CLI::Range(1, kMaxKernelThreads))
      ->capture_default_str();
  cmd->add_flag("--ftz", o->ftz, "flush denormals to zero, as TensorFlow's CPU kernels do");
  cmd->add_option("--precision", o->precision,
                  "simulate 16-bit numerics in a float32 model: fp16/bf16 round every float tensor to that format\n"
                  "after every op; amp-fp16/amp-bf16 round only what PyTorch autocast computes in it (default:\n"
                  "a manifest's [numerics] precision, else fp32)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "amp-fp16", "amp-bf16"}));
  cmd->add_option("--backward", o->backward_from,
                  "also back-propagate from this output (the gradient of its sum) and scan the gradients");
  cmd->add_option("--dropout", o->dropout, "dropout: as the model says (model), off, or on (seeded mask)")
      ->check(CLI::IsMember({"model", "off", "on"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the report as JSON");
  cmd->add_option("--dot", o->dot,
                  "write the subgraph from the inputs to the first producer of a NaN/Inf as Graphviz (a new file)");
  cmd->add_option("--output,-o", o->output,
                  "write every graph output to this .npz (a new file; numpy.load reads it), named as in the\n"
                  "model, except that '%', '/', '\\', control characters and bytes that are not UTF-8 are\n"
                  "written %XX (/fc/Gemm_output_0 -> %2Ffc%2FGemm_output_0; urllib.parse.unquote undoes it)");
  cmd->add_flag("--dump", o->dump,
                "with --output: also write the inputs (given or random) and every node output, by value name");
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace grist::cli
