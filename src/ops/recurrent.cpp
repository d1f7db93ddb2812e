// Recurrent layers: LSTM, GRU and RNN (ai.onnx, opsets 7 and 14: directions, sequence_lens, initial states,
// peepholes, clip, activations, layout), forward, backward through time, and interval transfers.
//
// Where ONNX leaves the semantics open, grist follows onnxruntime (the reference exporters are tested
// against): clip bounds every activation's input, LSTM's h(Cₜ) included (the cell state itself is not
// clipped); input_forget couples the gates as f = 1 − i; a reverse direction runs each batch entry's own
// sequence_lens steps backwards from its last valid step; steps past an entry's length give zeros in Y, and
// an entry of length 0 gives zero final states.
#include <algorithm>
#include <array>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "util/eigen.h"

#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {
namespace {


enum class Cell { Rnn, Gru, Lstm };

// Gates per cell: W, R and each half of B stack them along their rows (LSTM iofc, GRU zrh).
constexpr int64_t gate_count(Cell c) { return c == Cell::Lstm ? 4 : c == Cell::Gru ? 3 : 1; }
// The activations per direction: LSTM f, g, h; GRU f, g; RNN f.
constexpr int activations_per_direction(Cell c) { return c == Cell::Lstm ? 3 : c == Cell::Gru ? 2 : 1; }

// Input and output positions (ONNX).
enum Input { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum Output { kY, kYh, kYc };

// ---------------------------------------------------------------------------------------------------
// Activations (the list of the ONNX recurrent ops' definitions).

enum class ActivationKind {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu,
  ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

struct Activation {
  ActivationKind kind = ActivationKind::Tanh;
  double alpha = 0, beta = 0;

  template <class T>
  T value(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case ActivationKind::Relu: return x > T(0) ? x : T(0);
      case ActivationKind::Tanh: return std::tanh(x);
      case ActivationKind::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      case ActivationKind::Affine: return a * x + b;
      case ActivationKind::LeakyRelu: return x >= T(0) ? x : a * x;
      case ActivationKind::ThresholdedRelu: return x > a ? x : T(0);
      case ActivationKind::ScaledTanh: return a * std::tanh(b * x);
      case ActivationKind::HardSigmoid: return std::max(T(0), std::min(T(1), a * x + b));
      case ActivationKind::Elu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
      case ActivationKind::Softsign: return x / (T(1) + std::fabs(x));
      case ActivationKind::Softplus: return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }

  // The derivative at x (the one-sided value the kernels of the element-wise ops use at kinks).
  template <class T>
  T derivative(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case ActivationKind::Relu: return x > T(0) ? T(1) : T(0);
      case ActivationKind::Tanh: {
        const T y = std::tanh(x);
        return T(1) - y * y;
      }
      case ActivationKind::Sigmoid: {
        const T y = T(1) / (T(1) + std::exp(-x));
        return y * (T(1) - y);
      }
      case ActivationKind::Affine: return a;
      case ActivationKind::LeakyRelu: return x >= T(0) ? T(1) : a;
      case ActivationKind::ThresholdedRelu: return x > a ? T(1) : T(0);
      case ActivationKind::ScaledTanh: {
        const T y = std::tanh(b * x);
        return a * b * (T(1) - y * y);
      }
      case ActivationKind::HardSigmoid: {
        const T y = a * x + b;
        return y > T(0) && y < T(1) ? a : T(0);
      }
      case ActivationKind::Elu: return x >= T(0) ? T(1) : a * std::exp(x);
      case ActivationKind::Softsign: {
        const T d = T(1) + std::fabs(x);
        return T(1) / (d * d);
      }
      case ActivationKind::Softplus: return T(1) / (T(1) + std::exp(-x));
    }
    return T(1);
  }

  // The values the float32 or float64 kernel can return, where that is a bounded range (for any input, ±inf
  // included, NaN excepted): tanh, sigmoid and their kin never round past their exact bounds.
  std::optional<Interval> range() const {
    switch (kind) {
      case ActivationKind::Tanh:
      case ActivationKind::Softsign: return Interval{-1, 1};
      case ActivationKind::Sigmoid:
      case ActivationKind::HardSigmoid: return Interval{0, 1};
      case ActivationKind::ScaledTanh: {
        const double a = round_up_f32(std::fabs(alpha));  // |alpha| as the kernel rounds it, and no further
        return Interval{-a, a};
      }
      default: return std::nullopt;
    }
  }
};

// Name, and the defaults ONNX gives the element-wise op of that name; `alpha`/`beta`: the activation takes them.
struct ActivationInfo {
  const char* name;
  ActivationKind kind;
  bool alpha, beta;
  double default_alpha, default_beta;
};
constexpr ActivationInfo kActivations[] = {
    {"relu", ActivationKind::Relu, false, false, 0, 0},
    {"tanh", ActivationKind::Tanh, false, false, 0, 0},
    {"sigmoid", ActivationKind::Sigmoid, false, false, 0, 0},
    {"affine", ActivationKind::Affine, true, true, 1, 0},
    {"leakyrelu", ActivationKind::LeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", ActivationKind::ThresholdedRelu, true, false, 1, 0},
    {"scaledtanh", ActivationKind::ScaledTanh, true, true, 1, 1},
    {"hardsigmoid", ActivationKind::HardSigmoid, true, true, 0.2, 0.5},
    {"elu", ActivationKind::Elu, true, false, 1, 0},
    {"softsign", ActivationKind::Softsign, false, false, 0, 0},
    {"softplus", ActivationKind::Softplus, false, false, 0, 0},
};

// ---------------------------------------------------------------------------------------------------
// The node's attributes and its operands' dimensions.

struct RecurrentConfig {
  Cell cell = Cell::Rnn;
  int directions = 1;
  bool reverse = false;      // a single direction that runs backwards
  bool batch_first = false;  // layout = 1
  std::optional<double> clip;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  int64_t hidden = 0;                // from hidden_size or W
  // activations_per_direction(cell) per direction, direction 0 first.
  std::array<Activation, 6> activations{};

  int64_t gates() const { return gate_count(cell); }
  bool runs_backwards(int direction) const { return reverse || direction == 1; }
  const Activation& activation(int direction, int k) const {
    return activations[static_cast<size_t>(direction * activations_per_direction(cell) + k)];
  }
};

Status parse_activations(const Node& node, RecurrentConfig& cfg) {
  const int per = activations_per_direction(cfg.cell);
  static constexpr const char* kDefaults[3][3] = {{"tanh"}, {"sigmoid", "tanh"}, {"sigmoid", "tanh", "tanh"}};
  std::vector<std::string> names;
  if (const Attribute* a = node.attr("activations")) names = a->strings;
  if (names.empty())
    for (int k = 0; k < per; ++k) names.emplace_back(kDefaults[per - 1][k]);
  // A bidirectional node that lists one direction's activations uses them for both (as onnxruntime does).
  if (cfg.directions == 2 && names.size() == static_cast<size_t>(per))
    for (int k = 0; k < per; ++k) names.push_back(names[static_cast<size_t>(k)]);
  if (names.size() != static_cast<size_t>(per * cfg.directions))
    return node_error(node, fmt::format("expects {} activations, got {}", per * cfg.directions, names.size()));
  // activation_alpha and activation_beta are consumed in order by the activations that take them.
  const std::vector<double> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    std::string lower = names[k];
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& i : kActivations)
      if (lower == i.name) info = &i;
    if (!info) return node_error(node, fmt::format("unsupported activation '{}'", names[k]));
    Activation& act = cfg.activations[k];
    act.kind = info->kind;
    act.alpha = info->default_alpha;
    act.beta = info->default_beta;
    if (info->alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->beta && next_beta < betas.size()) act.beta = betas[next_beta++];
  }
  return Status::ok();
}

Status parse_config(const Node& node, Cell cell, const Shape& w_shape, RecurrentConfig& cfg) {
  cfg.cell = cell;
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") {
    cfg.directions = 2;
  } else if (direction == "reverse") {
    cfg.reverse = true;
  } else if (direction != "forward") {
    return node_error(node, fmt::format("unknown direction '{}'", direction));
  }
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return node_error(node, fmt::format("layout must be 0 or 1, got {}", layout));
  cfg.batch_first = layout == 1;
  if (node.has_attr("clip")) {
    cfg.clip = node.attr_float("clip", 0);
    if (!(*cfg.clip > 0)) return node_error(node, fmt::format("clip must be positive, got {}", *cfg.clip));
  }
  cfg.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  cfg.input_forget = node.attr_int("input_forget", 0) != 0;
  if (w_shape.rank() != 3) return node_error(node, fmt::format("W must have rank 3, got {}", w_shape.str()));
  cfg.hidden = node.attr_int("hidden_size", w_shape[1] / cfg.gates());
  if (cfg.hidden <= 0) return node_error(node, fmt::format("hidden_size must be positive, got {}", cfg.hidden));
  return parse_activations(node, cfg);
}

struct RecurrentDims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, gates = 0;
  int directions = 1;
  bool batch_first = false;

  int64_t gate_width() const { return gates * hidden; }
  // X viewed as a [seq·batch, input] matrix: the row of time t, batch entry b.
  int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
  // Where Y's hidden vector of (t, direction, b) starts.
  int64_t y_offset(int64_t t, int d, int64_t b) const {
    return batch_first ? ((b * seq + t) * directions + d) * hidden : ((t * directions + d) * batch + b) * hidden;
  }
  // Where a state's (initial_h, initial_c, Y_h, Y_c) hidden vector of direction d, batch entry b starts.
  int64_t state_offset(int d, int64_t b) const {
    return batch_first ? (b * directions + d) * hidden : (d * batch + b) * hidden;
  }
  Shape y_shape() const {
    return batch_first ? Shape{batch, seq, directions, hidden} : Shape{seq, directions, batch, hidden};
  }
  Shape state_shape() const {
    return batch_first ? Shape{batch, directions, hidden} : Shape{directions, batch, hidden};
  }
};

// The dimensions of a node with X of shape `x` (rank 3).
RecurrentDims dims_of(const RecurrentConfig& cfg, const Shape& x) {
  RecurrentDims d;
  d.batch_first = cfg.batch_first;
  d.seq = x[cfg.batch_first ? 1 : 0];
  d.batch = x[cfg.batch_first ? 0 : 1];
  d.input = x[2];
  d.hidden = cfg.hidden;
  d.gates = cfg.gates();
  d.directions = cfg.directions;
  return d;
}

// Dimensions from X, checked against every operand given.
Status recurrent_dims(const Node& node, const RecurrentConfig& cfg, std::span<const Tensor* const> in,
                      RecurrentDims& d) {
  auto input = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  for (size_t i : {kX, kW, kR})
    if (!input(i)) return node_error(node, fmt::format("required input {} is missing", i));
  const Tensor& x = *input(kX);
  if (!is_float(x.dtype()))
    return node_error(node, fmt::format("X must be float32 or float64, got {}", dtype_name(x.dtype())));
  if (x.rank() != 3) return node_error(node, fmt::format("X must have rank 3, got {}", x.shape().str()));
  d = dims_of(cfg, x.shape());
  const int64_t nd = cfg.directions, gw = d.gate_width(), h = d.hidden;
  struct Expected {
    size_t index;
    const char* name;
    Shape shape;
  };
  const Expected expected[] = {{kW, "W", Shape{nd, gw, d.input}},
                               {kR, "R", Shape{nd, gw, h}},
                               {kB, "B", Shape{nd, 2 * gw}},
                               {kInitialH, "initial_h", d.state_shape()},
                               {kInitialC, "initial_c", d.state_shape()},
                               {kPeepholes, "P", Shape{nd, 3 * h}}};
  for (const Expected& e : expected) {
    const Tensor* t = input(e.index);
    if (!t) continue;
    if ((e.index == kInitialC || e.index == kPeepholes) && cfg.cell != Cell::Lstm) continue;  // not GRU's or RNN's
    if (t->dtype() != x.dtype()) return node_error(node, fmt::format("{} must have the dtype of X", e.name));
    if (t->shape() != e.shape)
      return node_error(node, fmt::format("{} must be {}, got {}", e.name, e.shape.str(), t->shape().str()));
  }
  if (const Tensor* lens = input(kSequenceLens)) {
    if (!is_integer(lens->dtype()) || lens->shape() != Shape{d.batch})
      return node_error(node, fmt::format("sequence_lens must be integers of shape [{}], got {} {}", d.batch,
                                          dtype_name(lens->dtype()), lens->shape().str()));
    for (int64_t b = 0; b < d.batch; ++b)
      if (lens->get_as_int(b) < 0 || lens->get_as_int(b) > d.seq)
        return node_error(node,
                          fmt::format("sequence_lens[{}] = {} is outside [0, {}]", b, lens->get_as_int(b), d.seq));
  }
  return Status::ok();
}

std::vector<int64_t> sequence_lengths(const RecurrentDims& d, const Tensor* lens) {
  std::vector<int64_t> out(static_cast<size_t>(d.batch), d.seq);
  if (lens)
    for (int64_t b = 0; b < d.batch; ++b) out[static_cast<size_t>(b)] = lens->get_as_int(b);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The recurrence. One direction at a time: X·Wᵀ for every step in one product, then per step the
// recurrent product Hₜ₋₁·Rᵀ for the whole batch and the gates row by row. A batch entry past its length
// carries its states unchanged, so the backward passes their gradients through unchanged too.
//
// NodeState slots (what the backward needs): 0 the gates' inputs before clip and activation [nd, seq,
// batch, gates·hidden]; 1 the hidden states [nd, seq + 1, batch, hidden] (step 0 the initial one); 2 the cell
// states (LSTM), same shape; 3 GRU with linear_before_reset: Hₜ₋₁·Rhᵀ + Rbh [nd, seq, batch, hidden].
enum Slot { kPreActivations, kHiddenStates, kCellStates, kResetInputs };

template <class T>
struct Recurrence {
  const RecurrentConfig& cfg;
  const RecurrentDims& dims;
  const std::vector<int64_t>& lengths;
  std::span<const Tensor* const> in;
  NodeState& state;

  int64_t H() const { return dims.hidden; }
  int64_t GH() const { return dims.gate_width(); }
  int64_t rows() const { return dims.seq * dims.batch; }
  const T* input(size_t i) const { return i < in.size() && in[i] ? in[i]->data<T>() : nullptr; }
  int64_t length(int64_t b) const { return lengths[static_cast<size_t>(b)]; }
  // The time step that step s of direction d reads for batch entry b (valid while s < length(b)).
  int64_t time(int d, int64_t s, int64_t b) const { return cfg.runs_backwards(d) ? length(b) - 1 - s : s; }

  ConstMatrixMap<T> x() const { return {input(kX), rows(), dims.input}; }
  ConstMatrixMap<T> w(int d) const { return {input(kW) + d * GH() * dims.input, GH(), dims.input}; }
  ConstMatrixMap<T> r(int d) const { return {input(kR) + d * GH() * H(), GH(), H()}; }
  // The W and R halves of B for direction d (nullptr without B).
  const T* w_bias(int d) const { return input(kB) ? input(kB) + d * 2 * GH() : nullptr; }
  const T* r_bias(int d) const { return input(kB) ? input(kB) + d * 2 * GH() + GH() : nullptr; }
  const T* peepholes(int d) const { return input(kPeepholes) ? input(kPeepholes) + d * 3 * H() : nullptr; }

  T* pre(int d, int64_t s, int64_t b) {
    return state.slot(kPreActivations).data<T>() + ((d * dims.seq + s) * dims.batch + b) * GH();
  }
  MatrixMap<T> states(Slot slot, int d, int64_t s) {
    return {state.slot(slot).data<T>() + (d * (dims.seq + 1) + s) * dims.batch * H(), dims.batch, H()};
  }
  T* reset_input(int d, int64_t s, int64_t b) {
    return state.slot(kResetInputs).data<T>() + ((d * dims.seq + s) * dims.batch + b) * H();
  }

  // The activation k of direction d at a gate's input, and its derivative, clip applied.
  T clipped(T v) const {
    if (!cfg.clip) return v;
    const T c = static_cast<T>(*cfg.clip);
    return std::max(-c, std::min(c, v));
  }
  T act(int d, int k, T v) const { return cfg.activation(d, k).value(clipped(v)); }
  T act_derivative(int d, int k, T v) const {
    if (cfg.clip && std::fabs(v) > static_cast<T>(*cfg.clip)) return T(0);  // clipped: constant
    return cfg.activation(d, k).derivative(v);
  }

  void allocate_state(DType dtype) {
    const int64_t nd = dims.directions;
    state.slot(kPreActivations).resize(dtype, Shape{nd, dims.seq, dims.batch, GH()});
    state.slot(kHiddenStates).resize(dtype, Shape{nd, dims.seq + 1, dims.batch, H()});
    if (cfg.cell == Cell::Lstm) state.slot(kCellStates).resize(dtype, Shape{nd, dims.seq + 1, dims.batch, H()});
    if (cfg.cell == Cell::Gru && cfg.linear_before_reset)
      state.slot(kResetInputs).resize(dtype, Shape{nd, dims.seq, dims.batch, H()});
  }

  // Step 0 of the hidden (and cell) states: the initial ones, or zeros.
  void load_initial(int d, Slot slot, const T* initial) {
    MatrixMap<T> s0 = states(slot, d, 0);
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t j = 0; j < H(); ++j) s0(b, j) = initial ? initial[dims.state_offset(d, b) + j] : T(0);
  }

  void forward(Tensor* y, Tensor* y_h, Tensor* y_c) {
    for (int d = 0; d < dims.directions; ++d) {
      load_initial(d, kHiddenStates, input(kInitialH));
      if (cfg.cell == Cell::Lstm) load_initial(d, kCellStates, input(kInitialC));
      const RowMajorMatrix<T> xw = x() * w(d).transpose();
      for (int64_t s = 0; s < dims.seq; ++s) {
        // Inputs of the gates from X, R and B; GRU's candidate gets its recurrent part through the reset
        // gate, and LSTM's gates their peepholes, in cell_forward_step.
        const RowMajorMatrix<T> recurrent = states(kHiddenStates, d, s) * r(d).transpose();
        const int64_t with_recurrent = cfg.cell == Cell::Gru ? 2 * H() : GH();
        const T *wb = w_bias(d), *rb = r_bias(d);
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          T* p = pre(d, s, b);
          const int64_t row = dims.x_row(time(d, s, b), b);
          for (int64_t k = 0; k < GH(); ++k)
            p[k] = k < with_recurrent ? xw(row, k) + recurrent(b, k) + (wb ? wb[k] + rb[k] : T(0))
                                      : xw(row, k) + (wb ? wb[k] : T(0));
        }
        cell_forward_step(d, s, recurrent);
        MatrixMap<T> hp = states(kHiddenStates, d, s), hn = states(kHiddenStates, d, s + 1);
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s < length(b)) continue;
          hn.row(b) = hp.row(b);
          if (cfg.cell == Cell::Lstm) states(kCellStates, d, s + 1).row(b) = states(kCellStates, d, s).row(b);
        }
      }
      write_outputs(d, y, y_h, y_c);
    }
  }

  void write_outputs(int d, Tensor* y, Tensor* y_h, Tensor* y_c) {
    for (int64_t b = 0; b < dims.batch; ++b) {
      if (y)
        for (int64_t s = 0; s < length(b); ++s) {
          T* out = y->data<T>() + dims.y_offset(time(d, s, b), d, b);
          for (int64_t j = 0; j < H(); ++j) out[j] = states(kHiddenStates, d, s + 1)(b, j);
        }
      const bool empty = length(b) == 0;
      if (y_h) {
        T* out = y_h->data<T>() + dims.state_offset(d, b);
        for (int64_t j = 0; j < H(); ++j) out[j] = empty ? T(0) : states(kHiddenStates, d, dims.seq)(b, j);
      }
      if (y_c) {
        T* out = y_c->data<T>() + dims.state_offset(d, b);
        for (int64_t j = 0; j < H(); ++j) out[j] = empty ? T(0) : states(kCellStates, d, dims.seq)(b, j);
      }
    }
  }

  // The gates of step s for the active batch entries, from their inputs so far, into the next states.
  void cell_forward_step(int d, int64_t s, const RowMajorMatrix<T>& recurrent) {
    MatrixMap<T> hp = states(kHiddenStates, d, s), hn = states(kHiddenStates, d, s + 1);
    const int64_t n = H();
    switch (cfg.cell) {
      case Cell::Rnn:
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          for (int64_t j = 0; j < n; ++j) hn(b, j) = act(d, 0, p[j]);
        }
        return;
      case Cell::Lstm: {
        MatrixMap<T> cp = states(kCellStates, d, s), cn = states(kCellStates, d, s + 1);
        const T* peep = peepholes(d);
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          T* p = pre(d, s, b);
          T *pi = p, *po = p + n, *pf = p + 2 * n, *pc = p + 3 * n;
          for (int64_t j = 0; j < n; ++j) {
            if (peep) {
              pi[j] += peep[j] * cp(b, j);
              if (!cfg.input_forget) pf[j] += peep[2 * n + j] * cp(b, j);
            }
            const T i = act(d, 0, pi[j]);
            const T f = cfg.input_forget ? T(1) - i : act(d, 0, pf[j]);
            const T c = f * cp(b, j) + i * act(d, 1, pc[j]);
            cn(b, j) = c;
            if (peep) po[j] += peep[n + j] * c;
            hn(b, j) = act(d, 0, po[j]) * act(d, 2, c);
          }
        }
        return;
      }
      case Cell::Gru: {
        const T* rb = r_bias(d);
        if (cfg.linear_before_reset) {
          // ĥ = g(X·Whᵀ + Wbh + r ⊙ (Hₜ₋₁·Rhᵀ + Rbh)).
          for (int64_t b = 0; b < dims.batch; ++b) {
            if (s >= length(b)) continue;
            T* p = pre(d, s, b);
            T* m = reset_input(d, s, b);
            for (int64_t j = 0; j < n; ++j) {
              m[j] = recurrent(b, 2 * n + j) + (rb ? rb[2 * n + j] : T(0));
              p[2 * n + j] += act(d, 0, p[n + j]) * m[j];
            }
          }
        } else {
          // ĥ = g(X·Whᵀ + Wbh + Rbh + (r ⊙ Hₜ₋₁)·Rhᵀ).
          RowMajorMatrix<T> reset_state = RowMajorMatrix<T>::Zero(dims.batch, n);
          for (int64_t b = 0; b < dims.batch; ++b) {
            if (s >= length(b)) continue;
            const T* p = pre(d, s, b);
            for (int64_t j = 0; j < n; ++j) reset_state(b, j) = act(d, 0, p[n + j]) * hp(b, j);
          }
          const RowMajorMatrix<T> reset_recurrent = reset_state * r(d).bottomRows(n).transpose();
          for (int64_t b = 0; b < dims.batch; ++b) {
            if (s >= length(b)) continue;
            T* p = pre(d, s, b);
            for (int64_t j = 0; j < n; ++j) p[2 * n + j] += reset_recurrent(b, j) + (rb ? rb[2 * n + j] : T(0));
          }
        }
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          for (int64_t j = 0; j < n; ++j) {
            const T z = act(d, 0, p[j]);
            hn(b, j) = (T(1) - z) * act(d, 1, p[2 * n + j]) + z * hp(b, j);
          }
        }
        return;
      }
    }
  }

  // Gradients of every float input (nullptr: not wanted) from those of the outputs (nullptr: zero).
  struct Grads {
    T *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *initial_h = nullptr, *initial_c = nullptr, *p = nullptr;
  };

  void backward(const T* dy, const T* dy_h, const T* dy_c, const Grads& g) {
    const int64_t n = H(), batch = dims.batch;
    if (g.x) MatrixMap<T>(g.x, rows(), dims.input).setZero();
    for (int d = 0; d < dims.directions; ++d) {
      // dH, dC: the gradients reaching the states after the step being undone.
      RowMajorMatrix<T> dh = RowMajorMatrix<T>::Zero(batch, n), dc = RowMajorMatrix<T>::Zero(batch, n);
      for (int64_t b = 0; b < batch; ++b) {
        if (length(b) == 0) continue;  // the final states were written as zeros
        for (int64_t j = 0; j < n; ++j) {
          if (dy_h) dh(b, j) = dy_h[dims.state_offset(d, b) + j];
          if (dy_c) dc(b, j) = dy_c[dims.state_offset(d, b) + j];
        }
      }
      // Per row of X·Wᵀ and per recurrent product, the gradient of the gates' inputs.
      RowMajorMatrix<T> d_xw = RowMajorMatrix<T>::Zero(rows(), GH());
      RowMajorMatrix<T> d_r = RowMajorMatrix<T>::Zero(GH(), n);
      Eigen::Matrix<T, 1, Eigen::Dynamic> d_rb = Eigen::Matrix<T, 1, Eigen::Dynamic>::Zero(GH());
      std::vector<T> d_peep(static_cast<size_t>(3 * n), T(0));
      RowMajorMatrix<T> d_rec(batch, GH()), dh_prev(batch, n), dc_prev(batch, n);
      for (int64_t s = dims.seq - 1; s >= 0; --s) {
        d_rec.setZero();
        dh_prev.setZero();
        dc_prev.setZero();
        for (int64_t b = 0; b < batch; ++b) {
          if (s >= length(b) || !dy) continue;
          const T* g_out = dy + dims.y_offset(time(d, s, b), d, b);
          for (int64_t j = 0; j < n; ++j) dh(b, j) += g_out[j];
        }
        cell_backward_step(d, s, dh, dc, d_xw, d_rec, dh_prev, dc_prev, d_r, d_rb, d_peep);
        dh_prev.noalias() += d_rec * r(d);
        d_r.noalias() += d_rec.transpose() * states(kHiddenStates, d, s);
        d_rb += d_rec.colwise().sum();
        for (int64_t b = 0; b < batch; ++b) {
          if (s < length(b)) continue;
          dh_prev.row(b) = dh.row(b);
          dc_prev.row(b) = dc.row(b);
        }
        dh.swap(dh_prev);
        dc.swap(dc_prev);
      }
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < n; ++j) {
          if (g.initial_h) g.initial_h[dims.state_offset(d, b) + j] = dh(b, j);
          if (g.initial_c) g.initial_c[dims.state_offset(d, b) + j] = dc(b, j);
        }
      if (g.x) MatrixMap<T>(g.x, rows(), dims.input).noalias() += d_xw * w(d);
      if (g.w) MatrixMap<T>(g.w + d * GH() * dims.input, GH(), dims.input).noalias() = d_xw.transpose() * x();
      if (g.r) MatrixMap<T>(g.r + d * GH() * n, GH(), n) = d_r;
      if (g.b) {
        MatrixMap<T>(g.b + d * 2 * GH(), 1, GH()) = d_xw.colwise().sum();
        MatrixMap<T>(g.b + d * 2 * GH() + GH(), 1, GH()) = d_rb;
      }
      if (g.p) std::copy(d_peep.begin(), d_peep.end(), g.p + d * 3 * n);
    }
  }

  // Undoes step s for the active batch entries: from dh, dc (after the step) the gradients of the gates'
  // inputs into d_xw (the X·Wᵀ + B part) and d_rec (the part that came through Hₜ₋₁·Rᵀ + Rb, which the
  // caller multiplies out), and the direct gradients of the previous states into dh_prev, dc_prev. Terms
  // that do not have the form Hₜ₋₁·Rᵀ (GRU's (r ⊙ Hₜ₋₁)·Rhᵀ) go into d_r and d_rb here.
  void cell_backward_step(int d, int64_t s, const RowMajorMatrix<T>& dh, const RowMajorMatrix<T>& dc,
                          RowMajorMatrix<T>& d_xw, RowMajorMatrix<T>& d_rec, RowMajorMatrix<T>& dh_prev,
                          RowMajorMatrix<T>& dc_prev, RowMajorMatrix<T>& d_r, Eigen::Matrix<T, 1, Eigen::Dynamic>& d_rb,
                          std::vector<T>& d_peep) {
    const int64_t n = H();
    MatrixMap<T> hp = states(kHiddenStates, d, s);
    auto gate_grads = [&](int64_t b) { return d_xw.row(dims.x_row(time(d, s, b), b)).data(); };
    switch (cfg.cell) {
      case Cell::Rnn:
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          T* dp = gate_grads(b);
          for (int64_t j = 0; j < n; ++j) dp[j] = d_rec(b, j) = dh(b, j) * act_derivative(d, 0, p[j]);
        }
        return;
      case Cell::Lstm: {
        MatrixMap<T> cp = states(kCellStates, d, s), cn = states(kCellStates, d, s + 1);
        const T* peep = peepholes(d);
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          const T *pi = p, *po = p + n, *pf = p + 2 * n, *pc = p + 3 * n;
          T* dp = gate_grads(b);
          for (int64_t j = 0; j < n; ++j) {
            const T i = act(d, 0, pi[j]), o = act(d, 0, po[j]), g = act(d, 1, pc[j]);
            const T f = cfg.input_forget ? T(1) - i : act(d, 0, pf[j]);
            const T c = cn(b, j);
            const T d_po = dh(b, j) * act(d, 2, c) * act_derivative(d, 0, po[j]);
            const T d_c = dc(b, j) + dh(b, j) * o * act_derivative(d, 2, c) + (peep ? d_po * peep[n + j] : T(0));
            T d_i = d_c * g;
            const T d_f = d_c * cp(b, j);
            if (cfg.input_forget) d_i -= d_f;
            const T d_pi = d_i * act_derivative(d, 0, pi[j]);
            const T d_pf = cfg.input_forget ? T(0) : d_f * act_derivative(d, 0, pf[j]);
            const T d_pc = d_c * i * act_derivative(d, 1, pc[j]);
            dc_prev(b, j) = d_c * f + (peep ? d_pi * peep[j] + d_pf * peep[2 * n + j] : T(0));
            if (peep) {
              d_peep[static_cast<size_t>(j)] += d_pi * cp(b, j);
              d_peep[static_cast<size_t>(n + j)] += d_po * c;
              d_peep[static_cast<size_t>(2 * n + j)] += d_pf * cp(b, j);
            }
            dp[j] = d_rec(b, j) = d_pi;
            dp[n + j] = d_rec(b, n + j) = d_po;
            dp[2 * n + j] = d_rec(b, 2 * n + j) = d_pf;
            dp[3 * n + j] = d_rec(b, 3 * n + j) = d_pc;
          }
        }
        return;
      }
      case Cell::Gru: {
        // z, ĥ and the direct path first: they need only dh.
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          T* dp = gate_grads(b);
          for (int64_t j = 0; j < n; ++j) {
            const T z = act(d, 0, p[j]), h_cand = act(d, 1, p[2 * n + j]);
            dp[j] = d_rec(b, j) = dh(b, j) * (hp(b, j) - h_cand) * act_derivative(d, 0, p[j]);
            dp[2 * n + j] = dh(b, j) * (T(1) - z) * act_derivative(d, 1, p[2 * n + j]);
            dh_prev(b, j) = dh(b, j) * z;
          }
        }
        if (cfg.linear_before_reset) {
          // m = Hₜ₋₁·Rhᵀ + Rbh enters as r ⊙ m: dm = dĥ·r (through the recurrent product), dr = dĥ·m.
          for (int64_t b = 0; b < dims.batch; ++b) {
            if (s >= length(b)) continue;
            const T* p = pre(d, s, b);
            const T* m = reset_input(d, s, b);
            T* dp = gate_grads(b);
            for (int64_t j = 0; j < n; ++j) {
              const T r = act(d, 0, p[n + j]);
              d_rec(b, 2 * n + j) = dp[2 * n + j] * r;
              dp[n + j] = d_rec(b, n + j) = dp[2 * n + j] * m[j] * act_derivative(d, 0, p[n + j]);
            }
          }
          return;
        }
        // q = r ⊙ Hₜ₋₁ enters as q·Rhᵀ: dq = dĥ·Rh, then dr = dq ⊙ Hₜ₋₁ and dHₜ₋₁ += dq ⊙ r.
        RowMajorMatrix<T> d_cand = RowMajorMatrix<T>::Zero(dims.batch, n), q = RowMajorMatrix<T>::Zero(dims.batch, n);
        for (int64_t b = 0; b < dims.batch; ++b)
          if (s < length(b))
            d_cand.row(b) = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(gate_grads(b) + 2 * n, n);
        const RowMajorMatrix<T> dq = d_cand * r(d).bottomRows(n);
        for (int64_t b = 0; b < dims.batch; ++b) {
          if (s >= length(b)) continue;
          const T* p = pre(d, s, b);
          T* dp = gate_grads(b);
          for (int64_t j = 0; j < n; ++j) {
            const T r = act(d, 0, p[n + j]);
            q(b, j) = r * hp(b, j);
            dh_prev(b, j) += dq(b, j) * r;
            dp[n + j] = d_rec(b, n + j) = dq(b, j) * hp(b, j) * act_derivative(d, 0, p[n + j]);
          }
        }
        d_r.bottomRows(n).noalias() += d_cand.transpose() * q;
        d_rb.tail(n) += d_cand.colwise().sum();
        return;
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------------
// Kernels.

template <Cell kCell>
Status recurrent_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, kW));
  RecurrentConfig cfg;
  GRIST_TRY(parse_config(ctx.node, kCell, ctx.input(kW)->shape(), cfg));
  RecurrentDims dims;
  GRIST_TRY(recurrent_dims(ctx.node, cfg, ctx.inputs, dims));
  const std::vector<int64_t> lengths = sequence_lengths(dims, ctx.input(kSequenceLens));
  const DType dtype = ctx.input(kX)->dtype();
  Tensor* y = ctx.output(kY);
  Tensor* y_h = ctx.output(kYh);
  Tensor* y_c = kCell == Cell::Lstm ? ctx.output(kYc) : nullptr;
  if (y) y->resize_zero(dtype, dims.y_shape());  // zeros past each entry's length
  if (y_h) y_h->resize(dtype, dims.state_shape());
  if (y_c) y_c->resize(dtype, dims.state_shape());
  dispatch_float(dtype, [&](auto tag) {
    Recurrence<decltype(tag)> rec{cfg, dims, lengths, ctx.inputs, ctx.state};
    rec.allocate_state(dtype);
    rec.forward(y, y_h, y_c);
  });
  return Status::ok();
}

template <Cell kCell>
Status recurrent_backward(BackwardContext& ctx) {
  RecurrentConfig cfg;
  GRIST_TRY(parse_config(ctx.node, kCell, ctx.input(kW)->shape(), cfg));
  RecurrentDims dims;
  GRIST_TRY(recurrent_dims(ctx.node, cfg, ctx.inputs, dims));
  if (ctx.state.saved.size() <= kHiddenStates || ctx.state.slot(kHiddenStates).numel() == 0)
    return node_error(ctx.node, "backward without a matching forward");
  const std::vector<int64_t> lengths = sequence_lengths(dims, ctx.input(kSequenceLens));
  dispatch_float(ctx.input(kX)->dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto grad = [&](size_t i) -> T* {
      Tensor* g = ctx.input(i) ? ctx.grad_input(i) : nullptr;
      if (!g) return nullptr;
      g->resize(ctx.input(i)->dtype(), ctx.input(i)->shape());
      return g->data<T>();
    };
    auto grad_out = [&](size_t i) -> const T* { return ctx.grad_output(i) ? ctx.grad_output(i)->data<T>() : nullptr; };
    typename Recurrence<T>::Grads g{grad(kX),
                                    grad(kW),
                                    grad(kR),
                                    grad(kB),
                                    grad(kInitialH),
                                    kCell == Cell::Lstm ? grad(kInitialC) : nullptr,
                                    kCell == Cell::Lstm ? grad(kPeepholes) : nullptr};
    Recurrence<T> rec{cfg, dims, lengths, ctx.inputs, ctx.state};
    rec.backward(grad_out(kY), grad_out(kYh), kCell == Cell::Lstm ? grad_out(kYc) : nullptr, g);
  });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Interval transfers. The outputs are hidden (and cell) states, which the activations bound whatever the
// inputs are, so the bounds hold for every input; NaN is ruled out only where every float input is bounded
// and no gate's input can overflow (inf − inf). A zero is joined in: Y past an entry's length and the final
// states of an empty one are zeros.

double magnitude(Interval i) { return std::max(std::fabs(i.lo), std::fabs(i.hi)); }

// The product of two activation ranges as the kernel rounds it: exact where every corner is a float32
// (the kernel's products then round to values between them), else widened outward.
Interval range_product(Interval a, Interval b) {
  const double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  Interval r{std::min({p[0], p[1], p[2], p[3]}), std::max({p[0], p[1], p[2], p[3]})};
  bool exact = true;
  for (double v : p) exact = exact && static_cast<double>(static_cast<float>(v)) == v;
  return exact ? r : widen_f32(r);
}

Interval join(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

// The hull of activation k over every direction, if all are bounded.
std::optional<Interval> activation_range(const RecurrentConfig& cfg, int k) {
  std::optional<Interval> out;
  for (int d = 0; d < cfg.directions; ++d) {
    const std::optional<Interval> r = cfg.activation(d, k).range();
    if (!r) return std::nullopt;
    out = out ? join(*out, *r) : *r;
  }
  return out;
}

bool within(Interval inner, Interval outer) { return inner.lo >= outer.lo && inner.hi <= outer.hi; }

// Bounds on the outputs' magnitudes: hidden states (Y, Y_h) and cell states (Y_c); nullopt: unbounded.
struct StateBounds {
  std::optional<double> hidden, cell;
};

StateBounds state_bounds(const RecurrentConfig& cfg, int64_t seq, const IntervalTensor* initial_h,
                         const IntervalTensor* initial_c, Interval& hidden_range) {
  StateBounds out;
  const std::optional<Interval> f = activation_range(cfg, 0);
  const std::optional<Interval> g = cfg.cell == Cell::Rnn ? std::nullopt : activation_range(cfg, 1);
  auto initial = [](const IntervalTensor* t) -> std::optional<double> {
    if (!t) return 0.0;
    const Interval h = t->hull();
    return h.finite() ? std::optional<double>(magnitude(h)) : std::nullopt;
  };
  switch (cfg.cell) {
    case Cell::Rnn:  // Hₜ = f(·)
      if (f) hidden_range = join(*f, {0, 0}), out.hidden = magnitude(hidden_range);
      return out;
    case Cell::Lstm: {  // Hₜ = o ⊙ h(Cₜ); |Cₜ| ≤ |Cₜ₋₁| + |i·g| while |f| ≤ 1
      const std::optional<Interval> h = activation_range(cfg, 2);
      if (f && h) hidden_range = join(range_product(*f, *h), {0, 0}), out.hidden = magnitude(hidden_range);
      const bool forget_within_one = f && within(*f, cfg.input_forget ? Interval{0, 1} : Interval{-1, 1});
      const std::optional<double> c0 = initial(initial_c);
      if (forget_within_one && g && c0) {
        const double step = round_up_f32(magnitude(*f) * magnitude(*g));
        double c = *c0;
        for (int64_t s = 0; s < seq && std::isfinite(c); ++s) c = round_up_f32(c + step);  // each sum rounded up
        if (std::isfinite(c)) out.cell = c;
      }
      return out;
    }
    case Cell::Gru: {  // Hₜ = (1 − z) ⊙ ĥ + z ⊙ Hₜ₋₁, a convex combination while z ∈ [0, 1]
      const std::optional<double> h0 = initial(initial_h);
      if (!f || !within(*f, {0, 1}) || !g || !h0) return out;
      // Three roundings a step (1 − z, the two products, their sum) grow the bound by at most (1 + u)³.
      double m = std::max(magnitude(*g), *h0);
      for (int64_t s = 0; s < seq && std::isfinite(m); ++s) m = round_up_f32(m * (1 + 3 * 0x1.0p-24));
      if (std::isfinite(m)) out.hidden = m, hidden_range = {-m, m};
      return out;
    }
  }
  return out;
}

template <Cell kCell>
Status recurrent_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(kX);
  const IntervalTensor* w = c.input(kW);
  if (!x || !w || !x->shape_known || !w->shape_known || x->shape.rank() != 3 || w->shape.rank() != 3)
    return bounds_unbounded(c);
  RecurrentConfig cfg;
  if (!parse_config(c.node, kCell, w->shape, cfg).is_ok()) return bounds_unbounded(c);
  const RecurrentDims dims = dims_of(cfg, x->shape);
  if (w->shape != Shape{cfg.directions, dims.gate_width(), dims.input}) return bounds_unbounded(c);
  const IntervalTensor* initial_h = c.input(kInitialH);
  const IntervalTensor* initial_c = kCell == Cell::Lstm ? c.input(kInitialC) : nullptr;
  Interval hidden_range;
  const StateBounds sb = state_bounds(cfg, dims.seq, initial_h, initial_c, hidden_range);

  // NaN needs a NaN or infinite input, or a sum overflowing (inf − inf): ruled out when every float input
  // and every state is bounded and Σ|terms| of the largest gate input stays far below FLT_MAX.
  bool bounded = sb.hidden && (kCell != Cell::Lstm || sb.cell);
  auto input_magnitude = [&](size_t i) {
    const IntervalTensor* t = c.input(i);
    if (!t) return 0.0;
    bounded = bounded && t->bounded();
    return magnitude(t->hull());
  };
  const double x_mag = input_magnitude(kX), w_mag = input_magnitude(kW), r_mag = input_magnitude(kR),
               b_mag = input_magnitude(kB), h0_mag = input_magnitude(kInitialH);
  const double c0_mag = kCell == Cell::Lstm ? input_magnitude(kInitialC) : 0;
  const double p_mag = kCell == Cell::Lstm ? input_magnitude(kPeepholes) : 0;
  const double hidden_mag = std::max(sb.hidden.value_or(kInf), h0_mag);
  const double cell_mag = std::max(sb.cell.value_or(kInf), c0_mag);
  const double max_gate_input = static_cast<double>(dims.input) * x_mag * w_mag +
                                static_cast<double>(dims.hidden) * hidden_mag * r_mag + 2 * b_mag +
                                (p_mag > 0 ? p_mag * cell_mag : 0);
  const bool may_be_nan = !bounded || !(max_gate_input <= FLT_MAX / 4);

  const DType dtype = x->dtype;
  auto fill = [&](size_t k, const Shape& shape, std::optional<Interval> range) {
    if (k >= c.outputs.size()) return;
    c.outputs[k] = range ? IntervalTensor::filled(dtype, shape, *range) : IntervalTensor::unbounded(dtype, shape);
    c.outputs[k].may_be_nan = may_be_nan || !range;
  };
  const std::optional<Interval> hidden = sb.hidden ? std::optional<Interval>(hidden_range) : std::nullopt;
  fill(kY, dims.y_shape(), hidden);
  fill(kYh, dims.state_shape(), hidden);
  if (kCell == Cell::Lstm)
    fill(kYc, dims.state_shape(), sb.cell ? std::optional<Interval>(Interval{-*sb.cell, *sb.cell}) : std::nullopt);
  return Status::ok();
}

}  // namespace

void register_recurrent_ops(OpRegistry& r) {
  // The float inputs; sequence_lens (input 4) is an integer tensor.
  constexpr uint32_t kLstmInputs = inputs_mask({kX, kW, kR, kB, kInitialH, kInitialC, kPeepholes});
  constexpr uint32_t kGruRnnInputs = inputs_mask({kX, kW, kR, kB, kInitialH});
  r.add(OpDef{"LSTM", "", recurrent_forward<Cell::Lstm>, recurrent_backward<Cell::Lstm>, kLstmInputs, {},
              recurrent_bounds<Cell::Lstm>});
  r.add(OpDef{"GRU", "", recurrent_forward<Cell::Gru>, recurrent_backward<Cell::Gru>, kGruRnnInputs, {},
              recurrent_bounds<Cell::Gru>});
  r.add(OpDef{"RNN", "", recurrent_forward<Cell::Rnn>, recurrent_backward<Cell::Rnn>, kGruRnnInputs, {},
              recurrent_bounds<Cell::Rnn>});
}

}  // namespace grist
