#include "config/manifest.h"

#include <filesystem>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "util/input_file.h"

namespace grist {


namespace fs = std::filesystem;

namespace {

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reading context: the file and the dotted key path, so every error says where.
struct Reader {
  std::string source;
  fs::path dir;

  Error error(const std::string& key, const std::string& what) const {
    return make_error("{}: key '{}': {}", source, key, what);
  }

  Status only_keys(const toml::table& t, const std::string& prefix, const std::set<std::string>& allowed) const {
    for (auto&& [k, v] : t) {
      (void)v;
      std::string key(k.str());
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return error(prefix.empty() ? key : prefix + "." + key, fmt::format("unknown key (expected one of: {})", list));
      }
    }
    return Status::ok();
  }

  Result<std::string> string(const toml::table& t, const std::string& prefix, const std::string& key,
                             const std::string& fallback) const {
    const toml::node* n = t.get(key);
    if (!n) return fallback;
    auto v = n->value<std::string>();
    if (!v) return error(prefix + key, "must be a string");
    return *v;
  }

  Result<double> number(const toml::table& t, const std::string& prefix, const std::string& key,
                        double fallback) const {
    const toml::node* n = t.get(key);
    if (!n) return fallback;
    auto v = n->value<double>();
    if (!v) return error(prefix + key, "must be a number");
    return *v;
  }

  Result<bool> boolean(const toml::table& t, const std::string& prefix, const std::string& key, bool fallback) const {
    const toml::node* n = t.get(key);
    if (!n) return fallback;
    // A TOML boolean only: value<bool>() would also take an integer (1 for true).
    if (!n->is_boolean()) return error(prefix + key, "must be true or false");
    return n->as_boolean()->get();
  }

  Result<std::pair<double, double>> pair(const toml::table& t, const std::string& prefix, const std::string& key) const {
    const toml::array* a = t.get_as<toml::array>(key);
    if (!a || a->size() != 2) return error(prefix + key, "must be a pair [LO, HI]");
    auto lo = (*a)[0].value<double>(), hi = (*a)[1].value<double>();
    if (!lo || !hi) return error(prefix + key, "must hold two numbers");
    return std::pair{*lo, *hi};
  }

  // A number or a non-empty list of numbers (per channel).
  Result<std::vector<double>> numbers(const toml::table& t, const std::string& prefix, const std::string& key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::vector<double>{};
    if (auto v = n->value<double>()) return std::vector<double>{*v};
    const toml::array* a = n->as_array();
    if (!a || a->empty()) return error(prefix + key, "must be a number or a non-empty list of numbers (one a channel)");
    std::vector<double> out;
    for (const auto& el : *a) {
      auto v = el.value<double>();
      if (!v) return error(prefix + key, "must be a number or a non-empty list of numbers (one a channel)");
      out.push_back(*v);
    }
    return out;
  }

  std::string resolve(const std::string& p) const { return fs::path(p).is_absolute() ? p : (dir / p).string(); }
};

// Messages quote what the file holds (the parser's "saw 'fals\n'", a key or string with a newline in it):
// control characters escaped, so an error stays one line.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

// A nested array of numbers → a float64 tensor (rows are samples).
Result<Tensor> tensor_of_array(const toml::array& a, const Reader& r, const std::string& key) {
  std::vector<int64_t> dims;
  const toml::array* level = &a;
  while (true) {
    dims.push_back(static_cast<int64_t>(level->size()));
    if (level->empty() || !(*level)[0].is_array()) break;
    level = (*level)[0].as_array();
  }
  std::vector<double> flat;
  // Walk recursively, checking every sub-array has the shape of the first.
  std::function<Status(const toml::array&, size_t)> walk = [&](const toml::array& arr, size_t depth) -> Status {
    if (static_cast<int64_t>(arr.size()) != dims[depth]) return r.error(key, "rows of different lengths");
    for (const auto& el : arr) {
      if (depth + 1 < dims.size()) {
        if (!el.is_array()) return r.error(key, "rows of different depths");
        GRIST_TRY(walk(*el.as_array(), depth + 1));
      } else {
        auto v = el.value<double>();
        if (!v) return r.error(key, "holds something that is not a number");
        flat.push_back(*v);
      }
    }
    return Status::ok();
  };
  GRIST_TRY(walk(a, 0));
  Tensor t(DType::Float64, Shape(dims));
  std::copy(flat.begin(), flat.end(), t.data<double>());
  return t;
}

Result<DType> parse_dtype(const std::string& s) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool})
    if (dtype_name(d) == s) return d;
  return make_error("unknown dtype '{}' (float32, float64, int64, int32, uint8, bool)", s);
}

// rows, scale, offset, mean, std and channel_axis (docs/MANIFEST.md, "Preprocessing"); the source is known.
Status read_preprocessing(const toml::table& t, const std::string& p, const Reader& r, InputSpec& in) {
  if (t.get("rows")) {
    if (in.sampled()) return r.error(p + "rows", "needs rows to choose from (a values, file or data set source)");
    const toml::array* a = t.get_as<toml::array>("rows");
    std::optional<int64_t> begin, end;
    if (a && a->size() == 2) begin = (*a)[0].value<int64_t>(), end = (*a)[1].value<int64_t>();
    if (!begin || !end || !(*a)[0].is_integer() || !(*a)[1].is_integer())
      return r.error(p + "rows", "must be a pair of row numbers [BEGIN, END] (END not included)");
    if (!(*begin >= 0 && *begin < *end)) return r.error(p + "rows", "needs 0 <= BEGIN < END");
    in.row_begin = *begin;
    in.row_end = *end;
  }
  auto scale = r.number(t, p, "scale", 1.0);
  if (!scale) return scale.error();
  if (!std::isfinite(*scale)) return r.error(p + "scale", "must be finite");
  in.scale = *scale;
  auto offset = r.number(t, p, "offset", 0.0);
  if (!offset) return offset.error();
  if (!std::isfinite(*offset)) return r.error(p + "offset", "must be finite");
  in.offset = *offset;
  auto mean = r.numbers(t, p, "mean");
  if (!mean) return mean.error();
  for (double v : *mean)
    if (!std::isfinite(v)) return r.error(p + "mean", "must be finite");
  in.mean = *mean;
  auto sd = r.numbers(t, p, "std");
  if (!sd) return sd.error();
  for (double v : *sd)
    if (!(v > 0 && std::isfinite(v))) return r.error(p + "std", fmt::format("{} is not a positive, finite std", v));
  in.std = *sd;
  if (in.mean.size() > 1 && in.std.size() > 1 && in.mean.size() != in.std.size())
    return r.error(p + "std", fmt::format("has {} channels but mean has {}", in.std.size(), in.mean.size()));
  if (t.get("channel_axis")) {
    const toml::node* n = t.get("channel_axis");
    if (!n->is_integer()) return r.error(p + "channel_axis", "must be an integer (an axis of the model input)");
    if (!in.per_channel()) return r.error(p + "channel_axis", "needs a per-channel mean or std (a list)");
    in.channel_axis = n->as_integer()->get();
  }
  return Status::ok();
}

Status read_input(const toml::table& t, const std::string& name, const Reader& r, InputSpec& in) {
  const std::string p = "inputs." + name + ".";
  GRIST_TRY(r.only_keys(t, "inputs." + name,
                        {"role", "source", "values", "uniform", "normal", "rows", "scale", "offset", "mean", "std",
                         "channel_axis", "one_hot", "dtype", "range", "redraw"}));
  in.name = name;
  auto role = r.string(t, p, "role", "fixed");
  if (!role) return role.error();
  if (*role == "data") in.role = InputRole::Data;
  else if (*role == "label") in.role = InputRole::Label;
  else if (*role == "fixed") in.role = InputRole::Fixed;
  else return r.error(p + "role", fmt::format("'{}' is not data, label or fixed", *role));

  auto source = r.string(t, p, "source", t.get("values") ? "values" : "uniform");
  if (!source) return source.error();
  const std::string& s = *source;
  if (s == "values") {
    const toml::array* a = t.get_as<toml::array>("values");
    if (!a || a->empty()) return r.error(p + "values", "source = \"values\" needs a non-empty array of rows");
    auto v = tensor_of_array(*a, r, p + "values");
    if (!v) return v.error();
    in.values = std::move(v).value();
    in.source = InputSource::Values;
  } else if (s.rfind("fashion-mnist:", 0) == 0) {
    static const std::set<std::string> parts{"train-images", "train-labels", "test-images", "test-labels"};
    std::string part = s.substr(14);
    if (!parts.count(part)) return r.error(p + "source", fmt::format("unknown part '{}' of fashion-mnist", part));
    std::string kind = part.substr(part.find('-') + 1);
    in.file = fmt::format("{}/{}-{}-ubyte.gz", kFashionMnistDir, part.substr(0, part.find('-')),
                          kind == "images" ? "images-idx3" : "labels-idx1");
    in.source = InputSource::FashionMnist;
  } else if (s.rfind("npz:", 0) == 0) {
    auto colon = s.find(':', 4);
    if (colon == std::string::npos) return r.error(p + "source", "expected npz:FILE:KEY");
    in.file = r.resolve(s.substr(4, colon - 4));
    in.key = s.substr(colon + 1);
    in.source = InputSource::Npz;
  } else if (s.rfind("npy:", 0) == 0) {
    in.file = r.resolve(s.substr(4));
    in.source = InputSource::Npy;
  } else if (s == "uniform" || s == "normal") {
    in.source = s == "uniform" ? InputSource::Uniform : InputSource::Normal;
    if (t.get(s)) {
      auto pr = r.pair(t, p, s);
      if (!pr) return pr.error();
      (s == "uniform" ? in.uniform_lo : in.normal_mean) = pr->first;
      (s == "uniform" ? in.uniform_hi : in.normal_std) = pr->second;
    }
    if (s == "uniform" && !(in.uniform_lo < in.uniform_hi)) return r.error(p + "uniform", "needs LO < HI");
    if (s == "normal" && !(in.normal_std > 0)) return r.error(p + "normal", "needs STD > 0");
  } else {
    return r.error(p + "source", fmt::format("unknown source '{}' (values, fashion-mnist:PART, npz:FILE:KEY, "
                                             "npy:FILE, uniform, normal)", s));
  }

  GRIST_TRY(read_preprocessing(t, p, r, in));
  auto one_hot = r.number(t, p, "one_hot", 0);
  if (!one_hot) return one_hot.error();
  if (*one_hot < 0 || *one_hot != std::floor(*one_hot)) return r.error(p + "one_hot", "must be a positive integer");
  in.one_hot = static_cast<int64_t>(*one_hot);
  auto dtype = r.string(t, p, "dtype", "");
  if (!dtype) return dtype.error();
  if (!dtype->empty()) {
    auto d = parse_dtype(*dtype);
    if (!d) return r.error(p + "dtype", d.message());
    in.dtype = *d;
  }
  auto redraw = r.boolean(t, p, "redraw", false);
  if (!redraw) return redraw.error();
  in.redraw = *redraw;

  if (const toml::node* range = t.get("range")) {
    if (auto str = range->value<std::string>()) {
      if (*str == "none") in.range = ClipRange::None;
      else if (*str == "first-batch") in.range = ClipRange::FirstBatch;
      else return r.error(p + "range", fmt::format("'{}' is not [LO, HI], \"first-batch\" or \"none\"", *str));
    } else {
      auto pr = r.pair(t, p, "range");
      if (!pr) return pr.error();
      if (!(pr->first <= pr->second)) return r.error(p + "range", "needs LO <= HI");
      in.range = ClipRange::Explicit;
      in.lo = pr->first;
      in.hi = pr->second;
    }
    if (in.role != InputRole::Data) return r.error(p + "range", "only a data input is clipped");
  }
  // Keys that would be accepted and then ignored: refused, so a manifest does what it says.
  for (auto [k, src] : {std::pair{"values", InputSource::Values}, std::pair{"uniform", InputSource::Uniform},
                        std::pair{"normal", InputSource::Normal}})
    if (t.get(k) && in.source != src)
      return r.error(p + k, fmt::format("is only read with source = \"{}\" (this input's source is '{}')", k, s));
  if (in.one_hot > 0 && in.sampled())
    return r.error(p + "one_hot",
                   "needs integer labels from a source (values, a file or a data set), not random draws");
  if (in.redraw && in.role == InputRole::Data)
    return r.error(p + "redraw", "a data input is the searched tensor: a fresh draw every iteration would undo each "
                                 "step (role = \"fixed\" or \"label\" for an input the program redraws)");
  return Status::ok();
}

// An optimizer and its hyperparameters (optimizer, lr, momentum, ...) from `t` (the [train] table or one of its
// phases); `enabled` false for optimizer = "none".
Status read_optimizer(const toml::table& t, const std::string& p, const Reader& r, Framework flavor, bool& enabled,
                      OptimizerConfig& c) {
  auto opt = r.string(t, p, "optimizer", "none");
  if (!opt) return opt.error();
  enabled = *opt != "none";
  if (enabled) {
    auto kind = parse_optimizer_kind(*opt);
    if (!kind) return r.error(p + "optimizer", kind.message());
    c = OptimizerConfig::defaults(*kind, flavor);
  }
  if (enabled) {
    // The hyperparameters each update rule reads (engine/optimizers.cpp); another would be ignored.
    static const std::map<OptimizerKind, std::set<std::string>> used{
        {OptimizerKind::SGD, {"momentum", "nesterov"}},
        {OptimizerKind::Adam, {"beta1", "beta2", "epsilon"}},
        {OptimizerKind::Adagrad, {"epsilon", "initial_accumulator"}},
        {OptimizerKind::RMSProp, {"momentum", "epsilon", "decay", "centered", "initial_accumulator"}}};
    for (const char* k :
         {"momentum", "nesterov", "beta1", "beta2", "epsilon", "decay", "centered", "initial_accumulator"})
      if (t.get(k) && !used.at(c.kind).count(k))
        return r.error(p + k, fmt::format("{} has no {} (it reads: {})", optimizer_kind_name(c.kind), k, [&] {
                         std::string list = "lr, weight_decay";
                         for (const auto& u : used.at(c.kind)) list += ", " + u;
                         return list;
                       }()));
  }
  for (auto [key, field] : std::initializer_list<std::pair<const char*, double*>>{
           {"lr", &c.lr}, {"momentum", &c.momentum}, {"beta1", &c.beta1}, {"beta2", &c.beta2}, {"epsilon", &c.epsilon},
           {"decay", &c.decay}, {"initial_accumulator", &c.initial_accumulator}, {"weight_decay", &c.weight_decay}}) {
    auto v = r.number(t, p, key, *field);
    if (!v) return v.error();
    if (*v < 0) return r.error(p + key, "must not be negative");
    *field = *v;
  }
  for (auto [key, field] : std::initializer_list<std::pair<const char*, bool*>>{{"nesterov", &c.nesterov},
                                                                                {"centered", &c.centered}}) {
    auto v = r.boolean(t, p, key, *field);
    if (!v) return v.error();
    *field = *v;
  }
  if (c.nesterov && c.momentum == 0.0)
    return r.error(p + "nesterov", "needs a momentum (Nesterov's step is a momentum step)");
  return Status::ok();
}

constexpr std::initializer_list<const char*> kOptimizerKeys = {
    "optimizer", "lr", "momentum", "nesterov", "beta1", "beta2", "epsilon", "decay", "centered", "initial_accumulator",
    "weight_decay"};

// [[train.phases]]: several losses, each with its own optimizer and weights, trained in turn (a GAN's D, then G).
Status read_phases(const toml::table& t, const Reader& r, Framework flavor, TrainSpec& train) {
  const toml::array* a = t.get_as<toml::array>("phases");
  if (!a || a->empty() || !a->is_array_of_tables())
    return r.error("train.phases", "must be an array of tables ([[train.phases]], one a loss)");
  for (const char* k : kOptimizerKeys)
    if (t.get(k)) return r.error(std::string("train.") + k, "with train.phases each phase names its own optimizer");
  for (const char* k : {"params", "checkpoint", "pretrain_steps"})
    if (t.get(k))
      return r.error(std::string("train.") + k,
                     std::string("is not read with train.phases (") +
                         (std::string(k) == "params" ? "each phase names its own weights)" : "not supported yet)"));
  std::set<std::string> trained;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table& pt = *(*a)[i].as_table();
    const std::string p = fmt::format("train.phases[{}].", i);
    std::set<std::string> keys{"loss", "params", "steps"};
    keys.insert(kOptimizerKeys.begin(), kOptimizerKeys.end());
    GRIST_TRY(r.only_keys(pt, p.substr(0, p.size() - 1), keys));
    TrainPhase phase;
    auto loss = r.string(pt, p, "loss", "");
    if (!loss) return loss.error();
    if (loss->empty()) return r.error(p + "loss", "is required (the output this phase minimises)");
    phase.loss = *loss;
    bool enabled = false;
    GRIST_TRY(read_optimizer(pt, p, r, flavor, enabled, phase.optimizer));
    if (!enabled) return r.error(p + "optimizer", "is required (sgd, adam, adagrad or rmsprop)");
    const toml::array* params = pt.get_as<toml::array>("params");
    if (!params || params->empty())
      return r.error(p + "params", "must be a non-empty list of the initializers this phase trains");
    for (const auto& el : *params) {
      auto name = el.value<std::string>();
      if (!name) return r.error(p + "params", "must be a non-empty list of the initializers this phase trains");
      if (!trained.insert(*name).second)
        return r.error(p + "params", fmt::format("'{}' is trained by an earlier phase too", *name));
      phase.params.push_back(*name);
      train.params.push_back(*name);
    }
    if (const toml::node* n = pt.get("steps")) {
      if (!n->is_integer() || n->as_integer()->get() < 1)
        return r.error(p + "steps", "must be a positive integer (this phase's steps each iteration)");
      phase.steps = n->as_integer()->get();
    }
    train.phases.push_back(std::move(phase));
  }
  train.enabled = true;
  train.all_params = false;
  train.optimizer = train.phases.front().optimizer;
  return Status::ok();
}

Status read_train(const toml::table& t, const Reader& r, TrainSpec& train) {
  const std::string p = "train.";
  GRIST_TRY(r.only_keys(t, "train",
                        {"optimizer", "framework", "lr", "momentum", "nesterov", "beta1", "beta2", "epsilon", "decay",
                         "centered", "initial_accumulator", "weight_decay", "params", "batch", "dropout",
                         "checkpoint", "masks", "pretrain_steps", "phases"}));
  auto fw = r.string(t, p, "framework", "pytorch");
  if (!fw) return fw.error();
  if (*fw != "pytorch" && *fw != "tensorflow") return r.error(p + "framework", "must be pytorch or tensorflow");
  Framework flavor = *fw == "tensorflow" ? Framework::TensorFlow : Framework::PyTorch;
  if (t.get("phases")) {
    GRIST_TRY(read_phases(t, r, flavor, train));
  } else {
    GRIST_TRY(read_optimizer(t, p, r, flavor, train.enabled, train.optimizer));
  }
  if (const toml::node* params = t.get("params"); params && train.phases.empty()) {
    if (auto s = params->value<std::string>(); s && *s == "all") {
      train.all_params = true;
    } else if (const toml::array* a = params->as_array()) {
      train.all_params = false;
      for (const auto& el : *a) {
        auto name = el.value<std::string>();
        if (!name) return r.error(p + "params", "must be \"all\" or a list of initializer names");
        train.params.push_back(*name);
      }
    } else {
      return r.error(p + "params", "must be \"all\" or a list of initializer names");
    }
  }
  auto batch = r.string(t, p, "batch", "updated");
  if (!batch) return batch.error();
  if (*batch != "updated" && *batch != "monitored" && *batch != "fresh")
    return r.error(p + "batch", "must be updated, monitored or fresh");
  train.on_updated_batch = *batch == "updated";
  train.on_fresh_batch = *batch == "fresh";
  auto dropout = r.boolean(t, p, "dropout", true);
  if (!dropout) return dropout.error();
  train.dropout = *dropout;
  auto masks = r.string(t, p, "masks", "fresh");
  if (!masks) return masks.error();
  if (*masks != "fresh" && *masks != "reuse") return r.error(p + "masks", "must be fresh or reuse");
  train.fresh_masks = *masks == "fresh";
  if (t.get("masks") && *batch != "monitored")
    return r.error(p + "masks", "only a training step on the monitored batch could reuse its masks (train.batch = "
                                "\"monitored\")");
  if (t.get("masks") && !train.dropout)
    return r.error(p + "masks", "the training step runs without dropout (train.dropout = false): there are no masks");
  if (const toml::node* n = t.get("pretrain_steps")) {
    if (!n->is_integer() || n->as_integer()->get() < 0)
      return r.error(p + "pretrain_steps", "must be a non-negative integer (training steps before the search)");
    train.pretrain_steps = n->as_integer()->get();
  }
  auto checkpoint = r.string(t, p, "checkpoint", "");
  if (!checkpoint) return checkpoint.error();
  if (!checkpoint->empty()) train.checkpoint = r.resolve(*checkpoint);
  if (!train.enabled)
    for (auto&& [k, v] : t)
      if (k.str() != "optimizer" && k.str() != "framework")  // the program's framework may be said regardless
        return r.error(p + std::string(k.str()), "nothing trains (no optimizer): set train.optimizer or drop the key");
  return Status::ok();
}

Status read_search(const toml::table& t, const Reader& r, Manifest& m) {
  // experiments.conf keys take the same path as the INI file, so their checks are shared.
  IniFile ini;
  for (auto&& [k, v] : t) {
    std::string key(k.str());
    if (key == "variant" || key == "switch_score" || key == "switch_every" || key == "max_iterations" ||
        key == "seed" || key == "target" || key == "weight_change" || key == "weights_after" ||
        key == "weights_after_s" || key == "training_share" || key == "training_s" || key == "variables" ||
        key == "objective" || key == "objective_value" || key == "step" || key == "craft_labels" ||
        key == "stall_rule" || key == "craft_early" || key == "race_weights" ||
        key == "race_training")
      continue;
    std::string text;
    if (auto b = v.value<bool>(); b && v.is_boolean()) text = *b ? "True" : "False";
    else if (auto d = v.value<double>()) text = fmt::format("{}", *d);
    else if (auto s = v.value<std::string>()) text = *s;
    else return r.error("search." + key, "must be a number, a boolean or a string");
    // The key's own line in the manifest, so the shared checks say "m.toml:LINE: key 'change': ...".
    ini["parameter"][key] = IniEntry{text, static_cast<int>(v.source().begin.line)};
  }
  auto st = apply_experiments_conf(ini, r.source, m.search);
  if (!st) return st;
  const std::string p = "search.";
  auto variant = r.string(t, p, "variant", "");
  if (!variant) return variant.error();
  if (!variant->empty()) {
    auto v = parse_variant(*variant);
    if (!v) return r.error(p + "variant", v.message());
    m.search.variant = *v;
  }
  auto score = r.string(t, p, "switch_score", "");
  if (!score) return score.error();
  if (!score->empty()) {
    auto s = parse_switch_score(*score);
    if (!s) return r.error(p + "switch_score", s.message());
    m.search.switch_score = *s;
  }
  auto step = r.string(t, p, "step", "");
  if (!step) return step.error();
  if (!step->empty()) {
    auto s = parse_step_rule(*step);
    if (!s) return r.error(p + "step", s.message());
    m.search.step = *s;
  }
  for (auto [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"switch_every", &m.search.switch_every}, {"max_iterations", &m.search.max_iterations}}) {
    auto v = r.number(t, p, key, static_cast<double>(*field));
    if (!v) return v.error();
    if (*v < 0 || *v != std::floor(*v)) return r.error(p + key, "must be a non-negative integer");
    *field = static_cast<int64_t>(*v);
  }
  if (m.search.switch_every == 0) return r.error(p + "switch_every", "must be positive");
  auto seed = r.number(t, p, "seed", static_cast<double>(m.search.seed));
  if (!seed) return seed.error();
  if (*seed < 0 || *seed != std::floor(*seed)) return r.error(p + "seed", "must be a non-negative integer");
  m.search.seed = static_cast<uint64_t>(*seed);
  auto weight_change = r.number(t, p, "weight_change", m.search.weight_change);
  if (!weight_change) return weight_change.error();
  if (*weight_change < 0) return r.error(p + "weight_change", "must not be negative");
  m.search.weight_change = *weight_change;
  auto weights_after = r.number(t, p, "weights_after", m.search.weights_after);
  if (!weights_after) return weights_after.error();
  if (!(*weights_after >= 0 && *weights_after <= 1))
    return r.error(p + "weights_after", "must be a fraction of the budget, from 0 to 1");
  m.search.weights_after = *weights_after;
  auto weights_after_s = r.number(t, p, "weights_after_s", m.search.weights_after_s);
  if (!weights_after_s) return weights_after_s.error();
  if (!(*weights_after_s >= 0)) return r.error(p + "weights_after_s", "must be a number of seconds, 0 or more");
  m.search.weights_after_s = *weights_after_s;
  auto training_share = r.number(t, p, "training_share", m.search.training_share);
  if (!training_share) return training_share.error();
  if (!(*training_share >= 0 && *training_share <= 1))
    return r.error(p + "training_share", "must be a fraction of the budget left, from 0 to 1");
  m.search.training_share = *training_share;
  auto training_s = r.number(t, p, "training_s", m.search.training_s);
  if (!training_s) return training_s.error();
  if (!(*training_s >= 0)) return r.error(p + "training_s", "must be a number of seconds, 0 or more");
  m.search.training_s = *training_s;
  auto craft_labels = r.boolean(t, p, "craft_labels", m.search.craft_labels);
  if (!craft_labels) return craft_labels.error();
  m.search.craft_labels = *craft_labels;
  // The opt-in join rules, as hunt's --stall-rule and --craft-early: one at a time, and the stall rule not beside
  // a clock of the manifest's own.
  auto stall_rule = r.boolean(t, p, "stall_rule", m.search.stall_rule);
  if (!stall_rule) return stall_rule.error();
  auto craft_early = r.boolean(t, p, "craft_early", m.search.craft_early);
  if (!craft_early) return craft_early.error();
  if (*stall_rule && *craft_early)
    return r.error(p + "craft_early", "and search.stall_rule: one rule for when crafted training joins");
  if (*stall_rule)
    for (const char* clock : {"weights_after", "weights_after_s"})
      if (t.get(clock))
        return r.error(p + "stall_rule", fmt::format("and search.{}: a clock or the stall rule, not both", clock));
  m.search.stall_rule = *stall_rule;
  m.search.craft_early = *craft_early;
  auto race_weights = r.boolean(t, p, "race_weights", m.search.race_weights);
  if (!race_weights) return race_weights.error();
  m.search.race_weights = *race_weights;
  auto race_training = r.boolean(t, p, "race_training", m.search.race_training);
  if (!race_training) return race_training.error();
  m.search.race_training = *race_training;
  auto target = r.string(t, p, "target", "");
  if (!target) return target.error();
  m.target = *target;
  if (const toml::node* vars = t.get("variables")) {
    const toml::array* a = vars->as_array();
    if (!a) return r.error(p + "variables", "must be a list of initializer names");
    for (const auto& el : *a) {
      auto name = el.value<std::string>();
      if (!name || name->empty()) return r.error(p + "variables", "must be a list of initializer names");
      m.search_variables.push_back(*name);
    }
  }
  static const std::set<std::string> objectives{"min-abs", "min-abs-one-minus", "neg-max", "max", "min", "neg-spread"};
  auto objective = r.string(t, p, "objective", "");
  if (!objective) return objective.error();
  if (!objective->empty() && !objectives.count(*objective))
    return r.error(p + "objective", fmt::format("'{}' is not min-abs, min-abs-one-minus, neg-max, max, min or "
                                                "neg-spread", *objective));
  m.objective = *objective;
  auto objective_value = r.string(t, p, "objective_value", "");
  if (!objective_value) return objective_value.error();
  m.objective_value = *objective_value;
  for (const char* k : {"objective", "objective_value"})
    if (t.get(k) && m.target.empty())
      return r.error(p + k, "chooses the objective of one hazard: name it with search.target");
  return Status::ok();
}

}  // namespace

static Result<Manifest> read_manifest_unescaped(const std::string& path, const SearchConfig& base);

Result<Manifest> read_manifest(const std::string& path, const SearchConfig& base) {
  auto m = read_manifest_unescaped(path, base);
  if (!m) return make_error("{}", one_line(m.message()));
  return m;
}

static Result<Manifest> read_manifest_unescaped(const std::string& path, const SearchConfig& base) {
  GRIST_TRY(check_input_file(path, kMaxTextBytes, "a manifest"));
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    if (!fs::exists(path)) return make_error("{}: cannot open file", path);
    return make_error("{}:{}:{}: not valid TOML: {}", path, where.line, where.column, e.description());
  }
  Reader r{path, fs::path(path).parent_path()};
  Manifest m;
  m.path = path;
  m.search = base;
  GRIST_TRY(r.only_keys(root, "", {"model", "loss", "inputs", "batch", "train", "monitor", "numerics", "search", "scan",
                                      "expect"}));
  auto model = r.string(root, "", "model", "");
  if (!model) return model.error();
  if (model->empty()) return r.error("model", "is required (the ONNX file, relative to the manifest)");
  m.model = r.resolve(*model);
  auto loss = r.string(root, "", "loss", "");
  if (!loss) return loss.error();
  m.loss = *loss;

  if (const toml::node* inputs = root.get("inputs")) {
    if (!inputs->is_table()) return r.error("inputs", "must be a table of [inputs.NAME] tables");
    for (auto&& [k, v] : *inputs->as_table()) {
      std::string name(k.str());
      if (!v.is_table()) return r.error("inputs." + name, "must be a table");
      InputSpec in;
      GRIST_TRY(read_input(*v.as_table(), name, r, in));
      m.inputs[name] = std::move(in);
    }
  }
  if (const toml::table* batch = root.get_as<toml::table>("batch")) {
    GRIST_TRY(r.only_keys(*batch, "batch", {"size", "shuffle"}));
    if (batch->get("size")) {  // without it, the batch size is decided from the model or the command line
      auto size = r.number(*batch, "batch.", "size", 0);
      if (!size) return size.error();
      if (*size < 1 || *size != std::floor(*size)) return r.error("batch.size", "must be a positive integer");
      m.batch_size = static_cast<int64_t>(*size);
    }
    auto shuffle = r.boolean(*batch, "batch.", "shuffle", true);
    if (!shuffle) return shuffle.error();
    m.shuffle = *shuffle;
  }
  if (const toml::table* train = root.get_as<toml::table>("train")) GRIST_TRY(read_train(*train, r, m.train));
  if (!m.train.phases.empty() && m.loss.empty()) m.loss = m.train.phases.front().loss;  // the one monitored
  if (m.train.enabled && m.loss.empty()) return r.error("train.optimizer", "training needs a `loss` output");
  if (const toml::table* mon = root.get_as<toml::table>("monitor")) {
    GRIST_TRY(r.only_keys(*mon, "monitor", {"dropout"}));
    auto d = r.boolean(*mon, "monitor.", "dropout", false);
    if (!d) return d.error();
    m.monitor_dropout = *d;
  }
  if (const toml::table* num = root.get_as<toml::table>("numerics")) {
    GRIST_TRY(r.only_keys(*num, "numerics", {"ftz", "precision"}));
    auto f = r.boolean(*num, "numerics.", "ftz", false);
    if (!f) return f.error();
    m.ftz = *f;
    auto name = r.string(*num, "numerics.", "precision", "fp32");
    if (!name) return name.error();
    auto precision = parse_precision(*name);
    if (!precision) return r.error("numerics.precision", precision.message());
    m.precision = *precision;
  }
  if (const toml::table* search = root.get_as<toml::table>("search")) GRIST_TRY(read_search(*search, r, m));
  if (const toml::table* sc = root.get_as<toml::table>("scan")) {
    GRIST_TRY(r.only_keys(*sc, "scan", {"trained_weights"}));
    if (sc->get("trained_weights")) {
      auto pr = r.pair(*sc, "scan.", "trained_weights");
      if (!pr) return pr.error();
      if (!(pr->first <= pr->second)) return r.error("scan.trained_weights", "needs LO <= HI");
      m.scan_trained_weights = *pr;
    }
  }
  if (const toml::table* ex = root.get_as<toml::table>("expect")) {
    GRIST_TRY(r.only_keys(*ex, "expect", {"op", "node", "study_iterations", "study_seconds", "note", "counter_offset",
                                           "counter_step"}));
    for (auto [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
             {"counter_offset", &m.expect.counter_offset}, {"counter_step", &m.expect.counter_step}}) {
      auto v = r.number(*ex, "expect.", key, static_cast<double>(*field));
      if (!v) return v.error();
      if (*v != std::floor(*v)) return r.error(std::string("expect.") + key, "must be an integer");
      *field = static_cast<int64_t>(*v);
    }
    for (auto [key, field] : std::initializer_list<std::pair<const char*, std::string*>>{
             {"op", &m.expect.op}, {"node", &m.expect.node}, {"note", &m.expect.note}}) {
      auto v = r.string(*ex, "expect.", key, "");
      if (!v) return v.error();
      *field = *v;
    }
    if (ex->get("study_iterations")) {
      auto v = r.number(*ex, "expect.", "study_iterations", 0);
      if (!v) return v.error();
      m.expect.study_iterations = static_cast<int64_t>(*v);
    }
    if (ex->get("study_seconds")) {
      auto v = r.number(*ex, "expect.", "study_seconds", 0);
      if (!v) return v.error();
      m.expect.study_seconds = *v;
    }
  }
  return m;
}

}  // namespace grist
