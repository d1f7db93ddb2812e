#include "engine/executor.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>

#include "util/eigen.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define GRIST_HAVE_MXCSR 1
#endif

#include "ops/fused_tail.h"
#include "ops/kernel_util.h"
#include "engine/autocast.h"
#include "graph/constant_folding.h"
#include "ops/registry.h"
#include "tensor/half.h"
#include "tensor/half_tensor.h"

namespace grist {

FlushDenormalsScope::FlushDenormalsScope(bool enable) {
#ifdef GRIST_HAVE_MXCSR
  if (!enable) return;
  active_ = true;
  saved_ = _mm_getcsr();
  _mm_setcsr(saved_ | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
#else
  (void)enable;
#endif
}

FlushDenormalsScope::~FlushDenormalsScope() {
#ifdef GRIST_HAVE_MXCSR
  if (active_) _mm_setcsr(saved_);
#endif
}

namespace {

// "node 'big' (ConstantOfShape): a float32 tensor [1048576, 1048576] needs 4.0 TiB, more than this machine's 24 GiB"
Error too_large(const Node& node, const TensorTooLarge& e) {
  auto human = [](double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (b >= 1024 && u < 6) b /= 1024, ++u;
    return fmt::format("{:.1f} {}", b, units[u]);
  };
  return Error{fmt::format("node '{}' ({}): a {} tensor {} needs {}, more than this machine's memory ({})", node.name,
                           node.op_type, dtype_name(e.dtype), e.shape.str(), human(e.bytes), human(e.limit))};
}

// `t` (float32) rounded in place to `format` in one pass that also counts what the rounding saw.
void round_tallied(DType format, Tensor& t, RoundingTally& tally) {
  if (format == DType::Float16) round_to_half(t.span<float>(), t.data<float>(), &tally);
  else if (format == DType::BFloat16) round_to_bfloat16(t.span<float>(), t.data<float>(), &tally);
}

// `dst` ← float32 `src` rounded to `format`: an amp cast in one pass, not a copy and then a rounding.
void round_into(DType format, const Tensor& src, Tensor& dst) {
  dst.resize(DType::Float32, src.shape());
  if (format == DType::Float16) round_to_half(src.span<float>(), dst.data<float>());
  else round_to_bfloat16(src.span<float>(), dst.data<float>());
}

// Half inputs are computed on as PyTorch's CPU kernels do: widened to float32, the float32 kernel run, each
// float result rounded once to the half type. One mechanism for every op, forward and backward alike.
// The float32 scratch is the node's NodeArgs::wide_*, kept across passes so the steady state allocates nothing.
struct HalfScratch {
  std::vector<Tensor>&in, &grad_in, &out, &grad_out;
  Tensor& wide_in(size_t i) { return in[i]; }
  Tensor& wide_grad_in(size_t i) { return grad_in[i]; }
  Tensor& wide_out(size_t o) { return out[o]; }
  Tensor& wide_grad_out(size_t o) { return grad_out[o]; }
};

// The half type a node computes in: that of its first float16/bfloat16 input; Undefined when it has none or
// its op handles half tensors itself.
DType node_half_type(const OpDef& op, std::span<const Tensor* const> inputs) {
  if (op.has(kHandlesHalf)) return DType::Undefined;
  for (const Tensor* x : inputs)
    if (x && is_half(x->dtype())) return x->dtype();
  return DType::Undefined;
}

// Points the kernel at float32 copies of the half inputs and at float32 scratch outputs.
void widen_forward_args(HalfScratch h, std::span<const Tensor*> in, std::span<Tensor*> out) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] && is_half(in[i]->dtype())) {
      widen_half(*in[i], h.wide_in(i));
      in[i] = &h.wide_in(i);
    }
  for (size_t o = 0; o < out.size(); ++o)
    if (out[o]) out[o] = &h.wide_out(o);
}

// Rounds each float32 result to the half type into the graph's value (the scratch too: backward reads it as
// the output). An op whose output type is an attribute (EyeLike's, RandomNormalLike's dtype) keeps the type it
// made unless the model declares the output half; so do non-float results (Shape, ArgMax, comparisons).
void narrow_forward_outputs(HalfScratch h, DType half, const Graph& g, const Node& node, std::vector<Tensor>& values) {
  const bool typed_by_attribute = node.has_attr("dtype");
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] == kNoValue) continue;
    Tensor& wide = h.wide_out(o);
    Tensor& value = values[static_cast<size_t>(node.outputs[o])];
    const DType declared = g.value(node.outputs[o]).dtype;
    DType target = DType::Undefined;
    if (is_half(declared)) target = declared;
    else if (declared == DType::Undefined && !typed_by_attribute) target = half;
    if (wide.dtype() == DType::Float32 && target != DType::Undefined) narrow_to_half(wide, target, value);
    else value.copy_from(wide);
  }
}

// Backward: the forward's widened inputs and rounded outputs, the gradients widened, the kernel's input
// gradients written to float32 scratch (narrow_backward_grads rounds them to where they belong).
void widen_backward_args(HalfScratch h, std::span<const Tensor*> in, std::span<const Tensor*> out,
                         std::span<const Tensor*> grad_out, std::span<Tensor*> grad_in) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i] || !is_half(in[i]->dtype())) continue;
    in[i] = &h.wide_in(i);
    if (grad_in[i]) grad_in[i] = &h.wide_grad_in(i);
  }
  for (size_t o = 0; o < out.size(); ++o) {
    if (out[o]) out[o] = &h.wide_out(o);
    if (grad_out[o] && is_half(grad_out[o]->dtype())) {
      widen_half(*grad_out[o], h.wide_grad_out(o));
      grad_out[o] = &h.wide_grad_out(o);
    }
  }
}

}  // namespace

Result<Executor> Executor::create(const Graph& graph, ExecutorOptions options) {
  Executor ex;
  ex.graph_ = &graph;
  ex.options_ = options;
  ex.rng_.reseed(options.seed);
  const auto& reg = OpRegistry::global();

  GRIST_TRY(check_ops_supported(graph));
  for (const Node& n : graph.nodes) ex.ops_.push_back(reg.find(n.op_type, n.domain));

  const size_t nv = graph.values.size();
  ex.values_.resize(nv);
  ex.finite_.assign(nv, 1);
  ex.dirty_.assign(nv, 1);
  ex.is_set_.assign(nv, 0);
  ex.in_format_.assign(nv, 0);
  ex.version_.assign(nv, 1);
  ex.finite_before_rounding_.assign(nv, 1);
  ex.finite_after_rounding_.assign(nv, -1);
  ex.zero_origin_.assign(nv, kNoValue);
  ex.grads_.resize(nv);
  ex.has_grad_.assign(nv, 0);
  ex.grad_finite_.assign(nv, 1);
  ex.grad_origin_.assign(nv, -1);
  for (ValueId id : graph.initializers) {
    const Value& v = graph.value(id);
    if (v.initial) {
      ex.values_[static_cast<size_t>(id)] = *v.initial;
      ex.is_set_[static_cast<size_t>(id)] = 1;
    }
  }
  ex.states_.resize(graph.nodes.size());
  ex.kept_scratch_.resize(graph.nodes.size());
  ex.last_use_.assign(nv, -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId in : graph.nodes[n].inputs)
      if (in != kNoValue) ex.last_use_[static_cast<size_t>(in)] = static_cast<int64_t>(n);
  for (ValueId out : graph.outputs) ex.last_use_[static_cast<size_t>(out)] = std::numeric_limits<int64_t>::max();
  ex.release_begin_.assign(graph.nodes.size() + 1, 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    ex.release_begin_[n] = static_cast<uint32_t>(ex.release_list_.size());
    for (const auto* ids : {&node.inputs, &node.outputs})
      for (ValueId id : *ids) {
        if (id == kNoValue || graph.value(id).kind != ValueKind::Intermediate ||
            ex.last_use_[static_cast<size_t>(id)] > static_cast<int64_t>(n))
          continue;
        const std::pair<int32_t, int32_t> entry{id, graph.value(id).producer};
        if (std::find(ex.release_list_.begin() + ex.release_begin_[n], ex.release_list_.end(), entry) ==
            ex.release_list_.end())
          ex.release_list_.push_back(entry);
      }
  }
  ex.release_begin_.back() = static_cast<uint32_t>(ex.release_list_.size());
  ex.args_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    auto& a = ex.args_[n];
    a.in.resize(node.inputs.size());
    a.out.resize(node.outputs.size());
    a.out_const.resize(node.outputs.size());
    a.grad_out.resize(node.outputs.size());
    a.grad_in.resize(node.inputs.size());
    a.edge_grad.resize(node.inputs.size());
    a.wide_in.resize(node.inputs.size());
    a.wide_grad_in.resize(node.inputs.size());
    a.wide_out.resize(node.outputs.size());
    a.wide_grad_out.resize(node.outputs.size());
    a.cast_version.assign(node.inputs.size(), 0);
    a.cast_format.assign(node.inputs.size(), DType::Undefined);
  }
  const std::vector<uint8_t> foldable = fold_candidates(graph, [&](const Node& n) {
    const OpDef* def = reg.find(n.op_type, n.domain);
    return def && !def->has(kDrawsRandom);
  });
  ex.folds_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!foldable[n]) continue;
    const Node& node = graph.nodes[n];
    auto& m = ex.folds_[n];
    m.candidate = true;
    m.versions.assign(node.inputs.size(), 0);
    m.shapes.resize(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) m.shape_only.push_back(reads_only_shape(node, i));
  }
  ex.fold_precision_ = options.precision;
  return ex;
}

Status Executor::set_input(const std::string& name, const Tensor& t) {
  ValueId id = graph_->find_value(name);
  GRIST_CHECK(id != kNoValue, "the model has no input named '{}'", name);
  return set_input(id, t);
}

// Both set_input overloads: `t` is copied, or moved when given as an rvalue.
template <class T>
Status Executor::store_input(ValueId id, T&& t) {
  const Value& v = graph_->value(id);
  GRIST_CHECK(v.kind != ValueKind::Intermediate, "'{}' is computed by the model, not an input", v.name);
  // numpy has no bfloat16, so files hold a bfloat16 input as float32: rounded to the input's type here.
  const bool rounded = v.dtype == DType::BFloat16 && t.dtype() == DType::Float32;
  GRIST_CHECK(v.dtype == DType::Undefined || v.dtype == t.dtype() || rounded, "input '{}' expects {} data, got {}",
              v.name, dtype_name(v.dtype), dtype_name(t.dtype()));
  if (v.shape) {
    GRIST_CHECK(static_cast<int>(v.shape->size()) == t.rank(), "input '{}' expects rank {}, got shape {}", v.name,
                v.shape->size(), t.shape().str());
    for (int d = 0; d < t.rank(); ++d) {
      const Dim& dim = (*v.shape)[static_cast<size_t>(d)];
      GRIST_CHECK(!dim.known() || dim.size == t.shape()[d], "input '{}' expects dimension {} to be {}, got shape {}",
                  v.name, d, dim.size, t.shape().str());
    }
  }
  if (rounded) cast_tensor(t, DType::BFloat16, values_[static_cast<size_t>(id)]);
  else values_[static_cast<size_t>(id)] = std::forward<T>(t);
  is_set_[static_cast<size_t>(id)] = 1;
  dirty_[static_cast<size_t>(id)] = 1;
  ++version_[static_cast<size_t>(id)];
  return Status::ok();
}

Status Executor::set_input(ValueId id, const Tensor& t) { return store_input(id, t); }

Status Executor::set_input(ValueId id, Tensor&& t) { return store_input(id, std::move(t)); }

Tensor& Executor::mutable_value(ValueId id) {
  dirty_[static_cast<size_t>(id)] = 1;
  ++version_[static_cast<size_t>(id)];
  return values_[static_cast<size_t>(id)];
}

const Tensor* Executor::grad(ValueId id) const {
  return has_grad_[static_cast<size_t>(id)] ? &grads_[static_cast<size_t>(id)] : nullptr;
}

bool Executor::grad_finite(ValueId id) const {
  const auto i = static_cast<size_t>(id);
  if (!has_grad_[i]) return true;
  // A sole reader's kernel wrote the gradient itself, and the scan looked at all of it; a sum over several
  // consumers' edges can overflow although each edge was finite, so it is looked at again.
  if (backward_scanned_ && graph_->value(id).consumers.size() == 1) return grad_finite_[i];
  return all_finite(grads_[i]);
}

void Executor::note_forward_nonfinite(size_t n) {
  const Node& node = graph_->nodes[n];
  bool inputs_finite = true;
  for (ValueId in : node.inputs)
    if (in != kNoValue && !finite_[static_cast<size_t>(in)]) inputs_finite = false;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    ValueId out = node.outputs[o];
    if (out == kNoValue) continue;
    bool ok = finite_known(out);
    finite_[static_cast<size_t>(out)] = ok;
    if (!ok && inputs_finite && !forward_event_.found) {
      forward_event_ = make_nonfinite_event(*graph_, static_cast<int32_t>(n), false, static_cast<int>(o),
                                            graph_->value(out).name, values_[static_cast<size_t>(out)],
                                            args_[n].in);
      note_rounding(forward_event_, out);
    }
  }
}

// A forward-only pass keeps a node's scratch for the next when it is small (an offset table, per-channel factors)
// and all it keeps stays small: ShuffleNet's 784 nodes allocated, zeroed and freed their tables and slots every
// pass. Larger scratch (a column matrix) is freed, as what holds the pass's peak.
constexpr size_t kKeptScratchBytes = 16 << 10, kKeptScratchTotal = 1 << 20;

void Executor::release_scratch(size_t n) {
  NodeState& state = states_[n];
  if (state.saved.empty()) return;
  size_t bytes = 0;
  for (const Tensor& t : state.saved) bytes += t.capacity_bytes();
  const size_t others = kept_scratch_total_ - kept_scratch_[n];
  const bool keep = bytes <= kKeptScratchBytes && others + bytes <= kKeptScratchTotal;
  // clear(), not a fresh NodeState: a std::deque allocates even empty.
  if (!keep) state.saved.clear();
  kept_scratch_[n] = keep ? bytes : 0;
  kept_scratch_total_ = others + kept_scratch_[n];
}

// With release_dead_values: frees node n's scratch (but what release_scratch keeps), the inputs no later node reads
// and the outputs none reads, but not what constant folding keeps for the passes after (small shape arithmetic,
// Constants).
void Executor::release_dead_values(size_t n) {
  release_scratch(n);
  for (uint32_t k = release_begin_[n]; k < release_begin_[n + 1]; ++k) {
    const auto [value, producer] = release_list_[k];
    if (producer < 0 || !folds_[static_cast<size_t>(producer)].holds) values_[static_cast<size_t>(value)] = Tensor{};
  }
}

namespace {

// Node n's output 0 takes the buffer of an input no later node reads, where its op allows (OpDef::in_place): an
// elementwise tail (BatchNormalization, Clip, Relu after a Conv) then rewrites data still in cache instead of
// filling fresh pages. Only an intermediate value this node alone reads, in one slot: never a graph input, weight
// or output (last_use keeps those), nor a value a later node reads. `in` then points at the output.
template <class Kept>
bool lend_input(const Graph& g, size_t n, const OpDef& op, std::span<const int64_t> last_use,
                std::vector<Tensor>& values, std::span<const Tensor*> in, const Kept& kept_by_fold) {
  const Node& node = g.nodes[n];
  if (!op.in_place || node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId v = node.inputs[i];
    if (v == kNoValue || g.value(v).kind != ValueKind::Intermediate) continue;
    const auto vi = static_cast<size_t>(v);
    if (last_use[vi] != static_cast<int64_t>(n) || kept_by_fold(v) ||
        std::count(node.inputs.begin(), node.inputs.end(), v) != 1 ||
        !values[vi].defined() || !op.in_place(in, i))
      continue;
    Tensor& out = values[static_cast<size_t>(node.outputs[0])];
    out = std::move(values[vi]);
    values[vi] = Tensor{};
    in[i] = &out;
    return true;
  }
  return false;
}

// A Constant node between a BatchNormalization and its clamp that the clamp alone reads (the limits PyTorch exports
// for ReLU6): its finite value, which the fused pass reads from the attribute; the node itself need not run. Null
// for any other node: a non-finite value would be a first producer to report, so its node has to run.
const Tensor* skippable_limit(const Graph& g, size_t k, size_t clamp) {
  const Node& node = g.nodes[k];
  if (!node.domain.empty() || node.op_type != "Constant" || node.outputs.size() != 1) return nullptr;
  const Value& v = g.value(node.outputs[0]);
  const Attribute* a = node.attr("value");
  if (v.kind != ValueKind::Intermediate || v.consumers.size() != 1 || v.consumers[0] != static_cast<int32_t>(clamp) ||
      std::find(g.outputs.begin(), g.outputs.end(), node.outputs[0]) != g.outputs.end() || !a || !a->t ||
      !all_finite(*a->t))
    return nullptr;
  return a->t.get();
}

// Node n as a BatchNormalization or an Add whose output 0 only a Relu or Clip reads, where the two can run as one
// pass (ops/fused_tail.h): that node, with only such limit Constants between them. The output is then seen by no
// one but the clamp, nor kept.
struct Tail {
  size_t clamp_node = 0;
  Clamp clamp{};
  bool batch_norm = false;  // batch_norm_clamped; else the node's own kernel, then clamp_row
};
std::optional<Tail> fusable_tail(const Graph& g, size_t n, std::span<const int64_t> last_use,
                                 const std::vector<Tensor>& values, std::span<const Tensor* const> in) {
  const Node& node = g.nodes[n];
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return std::nullopt;
  const bool batch_norm = batch_norm_clampable(node, in);
  if (!batch_norm && !clampable_after(node, in)) return std::nullopt;
  const ValueId mid = node.outputs[0];
  const Value& v = g.value(mid);
  if (v.kind != ValueKind::Intermediate || v.consumers.size() != 1 || v.consumers[0] <= static_cast<int32_t>(n) ||
      last_use[static_cast<size_t>(mid)] != v.consumers[0])
    return std::nullopt;
  const auto c = static_cast<size_t>(v.consumers[0]);
  const Node& next = g.nodes[c];
  if (next.inputs.empty() || next.inputs.size() > 3 || next.inputs[0] != mid || next.outputs.empty() ||
      next.outputs[0] == kNoValue)
    return std::nullopt;
  std::array<const Tensor*, 3> limits{nullptr, nullptr, nullptr};
  for (size_t i = 1; i < next.inputs.size(); ++i) {
    const ValueId lim = next.inputs[i];
    if (lim == kNoValue) continue;
    const int32_t producer = g.value(lim).producer;
    limits[i] = producer > static_cast<int32_t>(n) ? skippable_limit(g, static_cast<size_t>(producer), c)
                                                   : &values[static_cast<size_t>(lim)];
    if (!limits[i]) return std::nullopt;
  }
  for (size_t k = n + 1; k < c; ++k)
    if (!skippable_limit(g, k, c)) return std::nullopt;
  auto clamp = clamp_of(next, *in[0], std::span<const Tensor* const>(limits.data(), next.inputs.size()));
  if (!clamp) return std::nullopt;
  return Tail{c, *clamp, batch_norm};
}

// Back to no event. Every event the executor records has `found` set, so one without it is the default already:
// assigning a fresh NonFiniteEvent (eight strings, three vectors) three times a forward-backward cost 7 % of a
// small graph's hunt iteration (the GRIST.md free logits).
void clear_event(NonFiniteEvent& e) {
  if (e.found) e = {};
}

}  // namespace

Status Executor::forward() {
  FlushDenormalsScope ftz(options_.flush_denormals);
  const Graph& g = *graph_;
  clear_event(forward_event_);
  // Inputs and weights changed since the last pass are rounded to the simulated precision (autocast keeps them
  // in float32), then scanned.
  const DType format = precision_format(options_.precision);
  const bool autocast = is_autocast(options_.precision);
  auto refresh = [&](ValueId id) {
    auto i = static_cast<size_t>(id);
    if (!dirty_[i]) return;
    // Idempotent: a value left dirty is rounded again.
    const bool in_float32 = autocast || read_only_in_float32(g, id);
    if (!in_float32) round_to_format_noting(id, values_[i], {}, format);
    in_format_[i] = format != DType::Undefined && !in_float32;
    if (!options_.scan_nonfinite) return;  // stays dirty, so a scan turned on later still looks at it
    finite_[i] = finite_known(id);
    dirty_[i] = 0;
  };
  for (ValueId id : g.inputs) refresh(id);
  for (ValueId id : g.initializers) refresh(id);
  // Kept outputs are dropped when the pass cannot keep them or a precision change would round them differently.
  const bool fold = options_.fold_constants;
  if (!fold || options_.precision != fold_precision_) {
    for (auto& m : folds_) m.holds = false;
    fold_precision_ = options_.precision;
  }
  // Forward-only runs compute elementwise tails in place (lend_input) and a BatchNormalization or Add with the Relu
  // or Clip after it in one pass (fusable_tail). A node run in place has lost its input, a fused node its unclamped
  // output, so when the scan finds either the first producer of a NaN/Inf (whose report reads both) the pass runs
  // again with every node apart and every output in a buffer of its own: same inputs, same random draws, same
  // values; only that pass costs twice.
  const bool in_place = options_.release_dead_values && options_.precision == Precision::Fp32;
  const Rng start = rng_;
  auto kept_by_fold = [this](ValueId v) {
    const int32_t producer = graph_->value(v).producer;
    return producer >= 0 && folds_[static_cast<size_t>(producer)].holds;
  };
  for (bool lend = in_place;; lend = false) {
    bool redo_apart = false;
    nodes_run_ = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      auto& a = args_[n];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        ValueId in = node.inputs[i];
        if (in == kNoValue) {
          a.in[i] = nullptr;
          continue;
        }
        GRIST_CHECK(is_set_[static_cast<size_t>(in)], "node '{}' ({}) needs '{}', which was not given", node.name,
                    node.op_type, g.value(in).name);
        a.in[i] = &values_[static_cast<size_t>(in)];
      }
      if (fold && folds_[n].holds && fold_holds(n)) {
        if (options_.release_dead_values) release_dead_values(n);  // the activations it read the shape of
        continue;
      }
      // From here the node's outputs are rewritten: they are kept again only once this run has succeeded.
      folds_[n].holds = false;
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        ValueId out = node.outputs[o];
        a.out[o] = out == kNoValue ? nullptr : &values_[static_cast<size_t>(out)];
      }
      const DType half = node_half_type(*ops_[n], a.in);
      HalfScratch scratch{a.wide_in, a.wide_grad_in, a.wide_out, a.wide_grad_out};
      if (half != DType::Undefined) {
        std::fill(a.cast_version.begin(), a.cast_version.end(), 0);  // wide_in now holds widened half inputs
        widen_forward_args(scratch, a.in, a.out);
      }
      const bool lent =
          lend && half == DType::Undefined && lend_input(g, n, *ops_[n], last_use_, values_, a.in, kept_by_fold);
      const std::optional<Tail> tail =
          lend && half == DType::Undefined ? fusable_tail(g, n, last_use_, values_, a.in) : std::nullopt;
      bool tail_finite = true;  // the fused node's own output, before the clamp
      const bool simulated = format != DType::Undefined && half == DType::Undefined;
      if (simulated && autocast) cast_autocast_inputs(n, format);
      ForwardContext ctx{node, a.in, a.out, states_[n], rng_, options_.dropout_training};
      Status st;
      try {
        if (tail && tail->batch_norm) {
          st = batch_norm_clamped(ctx, tail->clamp, tail_finite);
        } else {
          st = ops_[n]->forward(ctx);
          if (st && tail) tail_finite = clamp_row(a.out[0]->data<float>(), a.out[0]->numel(), tail->clamp);
        }
        if (st && half != DType::Undefined) narrow_forward_outputs(scratch, half, g, node, values_);
        if (st && simulated) {
          const bool rounded = !node.keep_float32 && (!autocast || autocast_output_in_format(n));
          for (ValueId out : node.outputs) {
            if (out == kNoValue) continue;
            round_to_format_noting(out, values_[static_cast<size_t>(out)], node.inputs,
                                   rounded ? format : DType::Undefined);
            in_format_[static_cast<size_t>(out)] = rounded;
          }
        }
      } catch (const TensorTooLarge& e) {
        return too_large(node, e);
      }
      if (!st) return st;
      for (ValueId out : node.outputs)
        if (out != kNoValue) {
          is_set_[static_cast<size_t>(out)] = 1;
          ++version_[static_cast<size_t>(out)];
        }
      if (options_.scan_nonfinite && tail) {
        finite_[static_cast<size_t>(node.outputs[0])] = tail_finite;
        bool inputs_finite = true;
        for (ValueId in : node.inputs)
          if (in != kNoValue && !finite_[static_cast<size_t>(in)]) inputs_finite = false;
        if (!tail_finite && inputs_finite && !forward_event_.found) {
          redo_apart = true;
          break;
        }
      } else if (options_.scan_nonfinite) {
        note_forward_nonfinite(n);
        if (lent && forward_event_.found && forward_event_.node == static_cast<int32_t>(n)) {
          redo_apart = true;
          break;
        }
      }
      if (options_.release_dead_values) release_dead_values(n);
      ++nodes_run_;
      if (fold && folds_[n].candidate) remember_fold(n);
      if (tail) {  // the Relu or Clip has run too (the limit Constants before it need not): it takes the values
        const auto mid = static_cast<size_t>(node.outputs[0]);
        n = tail->clamp_node;
        const auto y = static_cast<size_t>(g.nodes[n].outputs[0]);
        values_[y] = std::move(values_[mid]);
        values_[mid] = Tensor{};
        is_set_[y] = 1;
        ++version_[y];
        if (options_.scan_nonfinite) finite_[y] = tail_finite || all_finite(values_[y]);
        release_dead_values(n);
        ++nodes_run_;
      }
    }
    if (!redo_apart) return Status::ok();
    forward_event_ = {};
    rng_ = start;
  }
}

// A folded node's inputs are those its kept outputs were computed from.
bool Executor::fold_holds(size_t n) const {
  const Node& node = graph_->nodes[n];
  const FoldMemo& m = folds_[n];
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId in = node.inputs[i];
    if (in == kNoValue) continue;
    const auto v = static_cast<size_t>(in);
    if (m.shape_only[i] ? values_[v].shape() != m.shapes[i] : version_[v] != m.versions[i]) return false;
  }
  return true;
}

// Keeps node n's outputs for the passes that follow when they are shape arithmetic: small results computed from
// no float values, or a Constant's finite value. A folded node never runs again while it holds, so it can never be
// the first producer of a NaN/Inf: what it keeps is finite. A node that fails the test is never folded.
void Executor::remember_fold(size_t n) {
  const Node& node = graph_->nodes[n];
  FoldMemo& m = folds_[n];
  const bool constant_op = node.domain.empty() && node.op_type == "Constant";
  bool keep = true;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId in = node.inputs[i];
    if (in != kNoValue && !m.shape_only[i] && is_float(values_[static_cast<size_t>(in)].dtype())) keep = false;
  }
  for (ValueId out : node.outputs) {
    if (out == kNoValue) continue;
    const Tensor& t = values_[static_cast<size_t>(out)];
    if (is_float(t.dtype()) ? !constant_op || !all_finite(t) : !constant_op && t.numel() > kMaxFoldedElements)
      keep = false;
  }
  if (!keep) {
    m.candidate = m.holds = false;
    return;
  }
  // A pass that frees its values keeps no large Constant (weights exported as Constants) for the next: it would hold
  // a second copy of it all along. A pass that keeps every value still folds it.
  if (options_.release_dead_values)
    for (ValueId out : node.outputs)
      if (out != kNoValue && values_[static_cast<size_t>(out)].numel() > kMaxFoldedElements) return;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId in = node.inputs[i];
    if (in == kNoValue) continue;
    if (m.shape_only[i]) m.shapes[i] = values_[static_cast<size_t>(in)].shape();
    else m.versions[i] = version_[static_cast<size_t>(in)];
  }
  for (ValueId out : node.outputs)
    if (out != kNoValue) finite_[static_cast<size_t>(out)] = 1;
  m.holds = true;
}

// Rounds value `id` to `format` (Undefined: leaves it) and, with the scan on, notes what the rounding did for
// the first-producer report: whether the value was finite before, and where its zeros come from (this
// rounding flushing non-zero values, else the first of `inputs` that holds such zeros, if it has zeros too).
void Executor::round_to_format_noting(ValueId id, Tensor& t, std::span<const ValueId> inputs, DType format) {
  const auto i = static_cast<size_t>(id);
  if (!options_.scan_nonfinite || t.dtype() != DType::Float32) {
    if (format != DType::Undefined) round_to_format(format, t);
    return;
  }
  ValueId origin = kNoValue;
  finite_before_rounding_[i] = 1;
  int64_t zeros = -1;  // counted when needed
  if (format != DType::Undefined) {
    // One pass rounds and counts (it was four: finiteness, zeros, the rounding, zeros again).
    RoundingTally tally;
    round_tallied(format, t, tally);
    finite_before_rounding_[i] = tally.nonfinite_before == 0;
    finite_after_rounding_[i] = tally.nonfinite_after == 0;
    zeros = tally.zeros_after;
    if (tally.flushed > 0) origin = id;
  }
  for (size_t k = 0; origin == kNoValue && k < inputs.size(); ++k) {
    if (inputs[k] == kNoValue || zero_origin_[static_cast<size_t>(inputs[k])] == kNoValue) continue;
    if (zeros < 0) zeros = count_zeros(t);
    if (zeros > 0) origin = zero_origin_[static_cast<size_t>(inputs[k])];
    break;
  }
  zero_origin_[i] = origin;
}

// Whether value `id` is finite: what its rounding in this pass counted, else a pass over it.
bool Executor::finite_known(ValueId id) {
  int8_t& known = finite_after_rounding_[static_cast<size_t>(id)];
  const bool finite = known >= 0 ? known == 1 : all_finite(values_[static_cast<size_t>(id)]);
  known = -1;  // used once: the value changes before its next rounding
  return finite;
}

// Under a 16-bit precision: whether the producer's rounding made its NaN/Inf, and an input zero the format made.
void Executor::note_rounding(NonFiniteEvent& e, ValueId out) const {
  const DType format = precision_format(options_.precision);
  if (format == DType::Undefined) return;
  if (in_format_[static_cast<size_t>(out)]) {
    e.format = format;
    e.finite_in_float32 = finite_before_rounding_[static_cast<size_t>(out)];
  }
  for (const OperandAt& at : e.inputs) {
    if (!at.has_value || at.value != 0) continue;
    const ValueId in = graph_->find_value(at.name);
    if (in == kNoValue) continue;
    const ValueId origin = zero_origin_[static_cast<size_t>(in)];
    if (origin == kNoValue) continue;
    e.format = format;
    e.zero_input = graph_->value(in).name;
    e.zero_by_value = graph_->value(origin).name;
    const int32_t p = graph_->value(origin).producer;
    if (p >= 0) {
      e.zero_by_node = graph_->nodes[static_cast<size_t>(p)].name;
      e.zero_by_op = graph_->nodes[static_cast<size_t>(p)].op_type;
    }
    break;
  }
}

// amp-*: a LowerPrecision op (autocast.h) reads its float32 inputs cast to the format: rounded copies, in the
// node's scratch, of every input not already holding the format's values. A copy made of the same version of the
// value, in the same format, is kept: weights are rounded again only after an update.
void Executor::cast_autocast_inputs(size_t n, DType format) {
  const Node& node = graph_->nodes[n];
  if (node.keep_float32 || !node.domain.empty() || autocast_rule(node.op_type) != AutocastRule::LowerPrecision)
    return;
  auto& a = args_[n];
  HalfScratch scratch{a.wide_in, a.wide_grad_in, a.wide_out, a.wide_grad_out};
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const auto in = static_cast<size_t>(node.inputs[i]);
    if (node.inputs[i] == kNoValue || values_[in].dtype() != DType::Float32 || in_format_[in]) continue;
    Tensor& cast = scratch.wide_in(i);
    if (a.cast_version[i] != version_[in] || a.cast_format[i] != format) {
      round_into(format, values_[in], cast);
      a.cast_version[i] = version_[in];
      a.cast_format[i] = format;
    }
    a.in[i] = &cast;
  }
}

// amp-*: whether a node's float results are in the format: always for LowerPrecision ops, never for Float32
// ones; Promote: when every float input is; Follow (PyTorch's type promotion): when some float input is and
// every other is a weight or constant (in an export those stand for what PyTorch computes inside one op, as the
// bias of a linear layer split into MatMul and Add).
bool Executor::autocast_output_in_format(size_t n) const {
  const Node& node = graph_->nodes[n];
  const AutocastRule rule = node.domain.empty() ? autocast_rule(node.op_type) : AutocastRule::Follow;
  if (rule == AutocastRule::LowerPrecision) return true;
  if (rule == AutocastRule::Float32) return false;
  bool any = false, all = true, others_constant = true;
  for (ValueId in : node.inputs) {
    if (in == kNoValue || values_[static_cast<size_t>(in)].dtype() != DType::Float32) continue;
    if (in_format_[static_cast<size_t>(in)]) {
      any = true;
      continue;
    }
    all = false;
    const Value& v = graph_->value(in);
    const bool constant = v.kind == ValueKind::Initializer ||
                          (v.producer >= 0 && graph_->nodes[static_cast<size_t>(v.producer)].op_type == "Constant");
    others_constant = others_constant && constant;
  }
  return rule == AutocastRule::Promote ? any && all : any && others_constant;
}

Status Executor::backward(ValueId loss, std::span<const ValueId> wrt) {
  GRIST_CHECK(loss != kNoValue && is_set_[static_cast<size_t>(loss)], "backward: the loss has not been computed");
  const Tensor& l = values_[static_cast<size_t>(loss)];
  GRIST_CHECK(is_float(l.dtype()), "backward: the loss '{}' is not a float tensor", graph_->value(loss).name);
  Tensor& ones = loss_seed_;
  ones.resize(l.dtype(), l.shape());
  if (l.dtype() == DType::Float16) std::fill_n(ones.data<Half>(), ones.numel(), to_half(1.0f));
  if (l.dtype() == DType::BFloat16) std::fill_n(ones.data<BFloat16>(), ones.numel(), to_bfloat16(1.0f));
  dispatch_float(l.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(ones.data<T>(), ones.numel(), T(1));
  });
  const Tensor* seed = &ones;
  return backward(std::span<const ValueId>(&loss, 1), std::span<const Tensor* const>(&seed, 1), wrt);
}

const Executor::BackwardPlan& Executor::plan_for(std::span<const ValueId> outputs, std::span<const ValueId> wrt) {
  for (const auto& p : plans_)
    if (std::equal(outputs.begin(), outputs.end(), p.outputs.begin(), p.outputs.end()) &&
        std::equal(wrt.begin(), wrt.end(), p.wrt.begin(), p.wrt.end()))
      return p;
  const Graph& g = *graph_;
  const size_t nv = g.values.size();
  // A value needs a gradient when it is float, depends on a wanted source through differentiable edges,
  // and some seeded output depends on it.
  std::vector<uint8_t> from_source(nv, 0), to_output(nv, 0);
  if (wrt.empty()) {
    for (ValueId id : g.inputs) from_source[static_cast<size_t>(id)] = 1;
    for (ValueId id : g.initializers) from_source[static_cast<size_t>(id)] = 1;
  } else {
    for (ValueId id : wrt) from_source[static_cast<size_t>(id)] = 1;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (!ops_[n]->backward) continue;
    bool any = false;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] != kNoValue && (ops_[n]->differentiable_inputs >> i & 1u) &&
          from_source[static_cast<size_t>(node.inputs[i])])
        any = true;
    if (any)
      for (ValueId out : node.outputs)
        if (out != kNoValue) from_source[static_cast<size_t>(out)] = 1;
  }
  for (ValueId out : outputs) to_output[static_cast<size_t>(out)] = 1;
  for (size_t n = g.nodes.size(); n-- > 0;) {
    const Node& node = g.nodes[n];
    if (!ops_[n]->backward) continue;
    bool any = false;
    for (ValueId out : node.outputs)
      if (out != kNoValue && to_output[static_cast<size_t>(out)]) any = true;
    if (!any) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] != kNoValue && (ops_[n]->differentiable_inputs >> i & 1u))
        to_output[static_cast<size_t>(node.inputs[i])] = 1;
  }
  BackwardPlan plan;
  plan.outputs.assign(outputs.begin(), outputs.end());
  plan.wrt.assign(wrt.begin(), wrt.end());
  plan.needs_grad.assign(nv, 0);
  for (size_t v = 0; v < nv; ++v) plan.needs_grad[v] = from_source[v] && to_output[v] && is_float(values_[v].dtype());
  plans_.push_back(std::move(plan));
  return plans_.back();
}

Status Executor::backward(std::span<const ValueId> outputs, std::span<const Tensor* const> seeds,
                          std::span<const ValueId> wrt) {
  FlushDenormalsScope ftz(options_.flush_denormals);
  const Graph& g = *graph_;
  GRIST_CHECK(!options_.release_dead_values, "backward: the forward pass freed the values it needs "
              "(ExecutorOptions::release_dead_values)");
  GRIST_CHECK(outputs.size() == seeds.size(), "backward: {} outputs but {} seeds", outputs.size(), seeds.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    ValueId out = outputs[k];
    GRIST_CHECK(out != kNoValue && is_set_[static_cast<size_t>(out)], "backward: an output has not been computed");
    const Tensor& v = values_[static_cast<size_t>(out)];
    GRIST_CHECK(is_float(v.dtype()), "backward: '{}' is not a float tensor", g.value(out).name);
    GRIST_CHECK(seeds[k]->dtype() == v.dtype() && seeds[k]->shape() == v.shape(),
                "backward: the seed for '{}' is {} {}, expected {} {}", g.value(out).name,
                dtype_name(seeds[k]->dtype()), seeds[k]->shape().str(), dtype_name(v.dtype()), v.shape().str());
  }
  const BackwardPlan& plan = plan_for(outputs, wrt);
  needs_grad_ = &plan.needs_grad;
  backward_scanned_ = options_.scan_nonfinite;

  std::fill(has_grad_.begin(), has_grad_.end(), 0);
  std::fill(grad_finite_.begin(), grad_finite_.end(), 1);
  std::fill(grad_origin_.begin(), grad_origin_.end(), -1);
  backward_producers_.clear();
  clear_event(backward_event_);
  clear_event(masked_backward_event_);
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto id = static_cast<size_t>(outputs[k]);
    if (&grads_[id] != seeds[k]) grads_[id].copy_from(*seeds[k]);
    has_grad_[id] = 1;
    grad_finite_[id] = all_finite(grads_[id]);
  }
  for (size_t n = g.nodes.size(); n-- > 0;) {
    Status st = run_node_backward(n);
    if (!st) return st;
  }
  settle_backward_events(plan);
  return Status::ok();
}

// A non-finite gradient is the program's failure only where it reaches a gradient the caller wanted (a
// weight's, for the optimizer; the input's, for the user): of the producers whose NaN/Inf got there, the
// first met in reverse order is reported; when none got there, the first one is reported as masked.
void Executor::settle_backward_events(const BackwardPlan& plan) {
  if (backward_producers_.empty()) return;
  int32_t reached = -1;
  auto consider = [&](ValueId id) {
    const auto i = static_cast<size_t>(id);
    if (!has_grad_[i] || grad_finite_[i] || grad_origin_[i] < 0) return;
    if (reached < 0 || grad_origin_[i] < reached) reached = grad_origin_[i];
  };
  if (plan.wrt.empty()) {
    for (ValueId id : graph_->inputs) consider(id);
    for (ValueId id : graph_->initializers) consider(id);
  } else {
    for (ValueId id : plan.wrt) consider(id);
  }
  if (reached >= 0) {
    backward_event_ = backward_producers_[static_cast<size_t>(reached)];
  } else {
    masked_backward_event_ = backward_producers_.front();
    masked_backward_event_.masked = true;
  }
}

Status Executor::run_node_backward(size_t n) {
  const Graph& g = *graph_;
  const Node& node = g.nodes[n];
  const OpDef* op = ops_[n];
  if (!op->backward) return Status::ok();
  auto& a = args_[n];
  bool any_out = false, outs_finite = true;
  int32_t origin_out = -1;  // where the gradient outputs' NaN/Inf came from
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    ValueId out = node.outputs[o];
    bool has = out != kNoValue && has_grad_[static_cast<size_t>(out)];
    a.grad_out[o] = has ? &grads_[static_cast<size_t>(out)] : nullptr;
    a.out_const[o] = out == kNoValue ? nullptr : &values_[static_cast<size_t>(out)];
    any_out |= has;
    if (has && !grad_finite_[static_cast<size_t>(out)]) {
      outs_finite = false;
      if (origin_out < 0) origin_out = grad_origin_[static_cast<size_t>(out)];
    }
  }
  if (!any_out) return Status::ok();
  bool any_in = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId in = node.inputs[i];
    a.in[i] = in == kNoValue ? nullptr : &values_[static_cast<size_t>(in)];
    bool want = in != kNoValue && (*needs_grad_)[static_cast<size_t>(in)] && (op->differentiable_inputs >> i & 1u);
    if (!want) {
      a.grad_in[i] = nullptr;
      continue;
    }
    any_in = true;
    // A value read only here gets its gradient written in place; otherwise through this edge's scratch.
    bool sole_reader = g.value(in).consumers.size() == 1;
    a.grad_in[i] = sole_reader ? &grads_[static_cast<size_t>(in)] : &a.edge_grad[i];
  }
  if (!any_in) return Status::ok();
  // The forward's inputs are unchanged since, so this is the half type it computed in.
  const DType half = node_half_type(*ops_[n], a.in);
  HalfScratch scratch{a.wide_in, a.wide_grad_in, a.wide_out, a.wide_grad_out};
  if (half != DType::Undefined) {
    std::fill(a.cast_version.begin(), a.cast_version.end(), 0);
    widen_backward_args(scratch, a.in, a.out_const, a.grad_out, a.grad_in);
  }
  const DType format = half == DType::Undefined ? precision_format(options_.precision) : DType::Undefined;
  const bool autocast = is_autocast(options_.precision);
  if (format != DType::Undefined && autocast) cast_autocast_inputs(n, format);  // as the forward saw them
  BackwardContext ctx{node, a.in, a.out_const, a.grad_out, a.grad_in, states_[n]};
  Status st;
  try {
    st = op->backward(ctx);
    if (st && half != DType::Undefined) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (a.grad_in[i] != &scratch.wide_grad_in(i)) continue;
        // Where the gradient goes had the kernel computed in half: the value's own, or this edge's.
        const auto vid = static_cast<size_t>(node.inputs[i]);
        Tensor* target = g.value(node.inputs[i]).consumers.size() == 1 ? &grads_[vid] : &a.edge_grad[i];
        narrow_to_half(scratch.wide_grad_in(i), values_[vid].dtype(), *target);
        a.grad_in[i] = target;
      }
    }
  } catch (const TensorTooLarge& e) {
    return too_large(node, e);
  }
  if (!st) return st;

  for (size_t i = 0; i < node.inputs.size(); ++i) {
    Tensor* gi = a.grad_in[i];
    if (!gi) continue;
    auto vid = static_cast<size_t>(node.inputs[i]);
    const Tensor& x = values_[vid];
    // A gradient is in the format where its value is, or where autocast cast the value into the format; a node
    // kept in float32 leaves the gradients of its float32 inputs in float32.
    const int32_t from = g.value(node.inputs[i]).producer;
    const bool kept_value = from >= 0 && g.nodes[static_cast<size_t>(from)].keep_float32;
    const bool grad_in_format = format != DType::Undefined && !(node.keep_float32 && !in_format_[vid]) &&
                                (!autocast || in_format_[vid] || a.in[i] == &scratch.wide_in(i));
    // With the scan on, the rounding counts what it leaves non-finite in the same pass.
    int8_t rounded_finite = -1;
    if (grad_in_format && options_.scan_nonfinite && gi->dtype() == DType::Float32) {
      RoundingTally tally;
      round_tallied(format, *gi, tally);
      rounded_finite = tally.nonfinite_after == 0;
    } else if (grad_in_format) {
      round_to_format(format, *gi);
    }
    GRIST_CHECK(gi->dtype() == x.dtype() && gi->shape() == x.shape(),
                "internal: the gradient of node '{}' ({}) for input {} is {} {}, expected {} {}", node.name,
                node.op_type, i, dtype_name(gi->dtype()), gi->shape().str(), dtype_name(x.dtype()), x.shape().str());
    bool edge_finite = !options_.scan_nonfinite || (rounded_finite >= 0 ? rounded_finite == 1 : all_finite(*gi));
    int32_t origin = -1;
    if (!edge_finite) {
      if (outs_finite || origin_out < 0) {
        origin = static_cast<int32_t>(backward_producers_.size());
        backward_producers_.push_back(make_nonfinite_event(g, static_cast<int32_t>(n), true, static_cast<int>(i),
                                                           g.value(node.inputs[i]).name, *gi, a.in));
      } else {
        origin = origin_out;
      }
    }
    if (gi != &grads_[vid]) {
      Tensor& acc = grads_[vid];
      if (!has_grad_[vid]) {
        acc.copy_from(*gi);
      } else if (is_half(acc.dtype())) {
        add_in_half(*gi, acc);
      } else {
        dispatch_float(acc.dtype(), [&](auto tag) {
          using T = decltype(tag);
          using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
          Eigen::Map<Arr>(acc.data<T>(), acc.numel()) += Eigen::Map<const Arr>(gi->data<T>(), gi->numel());
        });
        if (format != DType::Undefined && !kept_value && (!autocast || in_format_[vid])) round_to_format(format, acc);
      }
    }
    has_grad_[vid] = 1;
    grad_finite_[vid] = grad_finite_[vid] && edge_finite;
    if (grad_origin_[vid] < 0) grad_origin_[vid] = origin;
  }
  return Status::ok();
}

}  // namespace grist
