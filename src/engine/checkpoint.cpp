#include "engine/checkpoint.h"

#include <cmath>
#include <set>

#include "data/npz.h"

namespace grist {

Result<Checkpoint> read_checkpoint(const std::string& path) {
  auto arrays = read_npz(path);
  if (!arrays) return arrays.error();
  Checkpoint c;
  c.path = path;
  bool has_steps = false;
  std::optional<float> scale;
  std::optional<int64_t> growth_tracker;
  for (auto& [key, t] : *arrays) {
    if (key == "scaler.scale") {
      GRIST_CHECK(t.dtype() == DType::Float32 && t.numel() == 1 && std::isfinite(t.data<float>()[0]) &&
                      t.data<float>()[0] > 0.0f,
                  "{}: scaler.scale must be one positive finite float32 (the loss scale)", path);
      scale = t.data<float>()[0];
      continue;
    }
    if (key == "scaler.growth_tracker") {
      GRIST_CHECK(is_integer(t.dtype()) && t.numel() == 1 && t.get_as_int(0) >= 0,
                  "{}: scaler.growth_tracker must be one non-negative integer (good steps since the scale changed)",
                  path);
      growth_tracker = t.get_as_int(0);
      continue;
    }
    if (key == "optimizer.steps") {
      GRIST_CHECK(is_integer(t.dtype()) && t.numel() == 1 && t.get_as_int(0) >= 0,
                  "{}: optimizer.steps must be one non-negative integer (the updates taken)", path);
      c.steps = t.get_as_int(0);
      has_steps = true;
      continue;
    }
    const auto colon = key.find(':');
    const std::string kind = colon == std::string::npos ? key : key.substr(0, colon);
    const std::string name = colon == std::string::npos ? "" : key.substr(colon + 1);
    if (kind == "weight" && !name.empty()) {
      c.weights[name] = std::move(t);
    } else if ((kind == "optimizer.first" || kind == "optimizer.second" || kind == "optimizer.mean") && !name.empty()) {
      c.slots[kind.substr(10)][name] = std::move(t);
    } else {
      return make_error("{}: unexpected array '{}' (a checkpoint holds weight:NAME, optimizer.first:NAME, "
                        "optimizer.second:NAME, optimizer.mean:NAME, optimizer.steps, scaler.scale and "
                        "scaler.growth_tracker)", path, key);
    }
  }
  // Half a scaler would restart the other half at its default: another program.
  GRIST_CHECK(scale.has_value() == growth_tracker.has_value(), "{}: it holds scaler.{} but not scaler.{} (a loss "
              "scaler's state is both)", path, scale ? "scale" : "growth_tracker", scale ? "growth_tracker" : "scale");
  if (scale) c.scaler = GradScalerState{*scale, *growth_tracker, 0};
  GRIST_CHECK(has_steps || c.slots.empty(), "{}: it holds optimizer state but no optimizer.steps (the updates "
              "taken, which Adam's bias correction needs)", path);
  return c;
}

Result<Graph> with_checkpoint_weights(const Graph& g, const Checkpoint& c) {
  Graph out = g;
  for (const auto& [name, t] : c.weights) {
    const ValueId id = out.find_value(name);
    GRIST_CHECK(id != kNoValue && out.value(id).kind == ValueKind::Initializer && out.value(id).initial,
                "{}: weight:{} names no initializer of the model", c.path, name);
    Value& v = out.value(id);
    GRIST_CHECK(t.dtype() == v.initial->dtype() && t.shape() == v.initial->shape(),
                "{}: weight:{} is {} {}, but the model's is {} {}", c.path, name, dtype_name(t.dtype()),
                t.shape().str(), dtype_name(v.initial->dtype()), v.initial->shape().str());
    v.initial = std::make_shared<Tensor>(t);  // non-const: Graph::take_initial
  }
  return out;
}

Status use_checkpoint_weights(const std::string& path, Graph& g) {
  if (path.empty()) return Status::ok();
  auto c = read_checkpoint(path);
  if (!c) return c.error();
  auto resumed = with_checkpoint_weights(g, *c);
  if (!resumed) return resumed.error();
  g = std::move(resumed).value();
  return Status::ok();
}

Result<OptimizerState> checkpoint_state(const Checkpoint& c, const Graph& g, const std::vector<ValueId>& params,
                                        const OptimizerConfig& config) {
  // The slots each rule reads (engine/optimizers.cpp).
  std::set<std::string> needed;
  switch (config.kind) {
    case OptimizerKind::SGD:
      if (config.momentum != 0.0) needed = {"first"};
      break;
    case OptimizerKind::Adam: needed = {"first", "second"}; break;
    case OptimizerKind::Adagrad: needed = {"second"}; break;
    case OptimizerKind::RMSProp:
      needed = {"second"};
      if (config.centered) needed.insert("mean");
      if (config.momentum != 0.0) needed.insert("first");
      break;
  }
  std::set<std::string> trained;
  for (ValueId id : params) trained.insert(g.value(id).name);
  for (const auto& [slot, by_name] : c.slots) {
    GRIST_CHECK(needed.count(slot), "{}: optimizer.{} is state {} does not keep", c.path, slot,
                optimizer_kind_name(config.kind));
    for (const auto& [name, t] : by_name) {
      (void)t;
      GRIST_CHECK(trained.count(name), "{}: optimizer.{}:{} is for a weight the optimizer does not train", c.path,
                  slot, name);
    }
  }
  OptimizerState st;
  st.steps = c.steps;
  for (ValueId id : params) {
    const Value& v = g.value(id);
    for (auto [slot, into] : {std::pair{"first", &st.first}, std::pair{"second", &st.second},
                              std::pair{"mean", &st.mean}}) {
      auto s = c.slots.find(slot);
      const Tensor* t = nullptr;
      if (s != c.slots.end()) {
        auto it = s->second.find(v.name);
        if (it != s->second.end()) t = &it->second;
      }
      GRIST_CHECK(t || !needed.count(slot) || c.steps == 0, "{}: {} steps taken, but no optimizer.{}:{} ({} reads "
                  "it; starting it at zero would change the program)", c.path, c.steps, slot, v.name,
                  optimizer_kind_name(config.kind));
      if (t && v.initial)
        GRIST_CHECK(t->dtype() == v.initial->dtype() && t->shape() == v.initial->shape(),
                    "{}: optimizer.{}:{} is {} {}, but the weight is {} {}", c.path, slot, v.name,
                    dtype_name(t->dtype()), t->shape().str(), dtype_name(v.initial->dtype()), v.initial->shape().str());
      into->push_back(t ? *t : Tensor{});
    }
  }
  return st;
}

}  // namespace grist
