#include "config/optimizer_config.h"

#include <algorithm>
#include <cctype>

namespace grist {

OptimizerConfig OptimizerConfig::defaults(OptimizerKind kind, Framework flavor) {
  OptimizerConfig c;
  c.kind = kind;
  c.flavor = flavor;
  const bool tf = flavor == Framework::TensorFlow;
  switch (kind) {
    case OptimizerKind::SGD:
      c.lr = 0.01;
      break;
    case OptimizerKind::Adam:
      c.lr = 0.001;
      c.epsilon = 1e-8;
      break;
    case OptimizerKind::Adagrad:
      c.lr = 0.01;
      c.initial_accumulator = tf ? 0.1 : 0.0;
      c.epsilon = tf ? 0.0 : 1e-10;
      break;
    case OptimizerKind::RMSProp:
      c.lr = tf ? 0.001 : 0.01;
      c.decay = tf ? 0.9 : 0.99;
      c.epsilon = tf ? 1e-10 : 1e-8;
      c.initial_accumulator = tf ? 1.0 : 0.0;
      break;
  }
  return c;
}

Result<OptimizerKind> parse_optimizer_kind(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (n == "sgd" || n == "gradientdescent" || n == "momentum") return OptimizerKind::SGD;
  if (n == "adam") return OptimizerKind::Adam;
  if (n == "adagrad") return OptimizerKind::Adagrad;
  if (n == "rmsprop") return OptimizerKind::RMSProp;
  return make_error("unknown optimizer '{}' (expected sgd, adam, adagrad or rmsprop)", name);
}

std::string_view optimizer_kind_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD: return "SGD";
    case OptimizerKind::Adam: return "Adam";
    case OptimizerKind::Adagrad: return "Adagrad";
    case OptimizerKind::RMSProp: return "RMSProp";
  }
  return "optimizer";
}

}  // namespace grist
