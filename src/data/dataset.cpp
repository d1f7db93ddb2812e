#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "data/idx.h"
#include "data/npy.h"
#include "data/npz.h"
#include "onnx/tensor_proto.h"

namespace grist {

namespace {

// The rows of a source, as float64 [N, ...] after one-hot and scale (types are converted per batch).
Result<Tensor> load_rows(const InputSpec& in) {
  Tensor raw;
  if (in.source == InputSource::Values) {
    raw = in.values;
  } else if (in.source == InputSource::FashionMnist) {
    auto t = read_idx(in.file);
    if (!t) return make_error("input '{}': {} (install Debian's dataset-fashion-mnist)", in.name, t.message());
    raw = std::move(t).value();
  } else if (in.source == InputSource::Npz) {
    auto all = read_npz(in.file);
    if (!all) return make_error("input '{}': {}", in.name, all.message());
    bool found = false;
    for (auto& [k, t] : *all)
      if (k == in.key) {
        raw = std::move(t);
        found = true;
      }
    GRIST_CHECK(found, "input '{}': {} has no array named '{}'", in.name, in.file, in.key);
  } else if (in.source == InputSource::Npy) {
    auto t = read_npy(in.file);
    if (!t) return make_error("input '{}': {}", in.name, t.message());
    raw = std::move(t).value();
  } else {
    return Tensor();  // drawn at random per batch
  }
  GRIST_CHECK(raw.rank() >= 1 && raw.shape()[0] > 0, "input '{}': its source holds no rows", in.name);
  Tensor rows;
  if (in.one_hot > 0) {
    GRIST_CHECK(raw.rank() == 1 && (is_integer(raw.dtype()) || raw.dtype() == DType::Float64),
                "input '{}': one_hot needs a 1-D array of integer labels", in.name);
    const int64_t n = raw.shape()[0];
    rows.resize_zero(DType::Float64, Shape{n, in.one_hot});
    for (int64_t i = 0; i < n; ++i) {
      int64_t label = static_cast<int64_t>(raw.get_as_double(i));
      GRIST_CHECK(label >= 0 && label < in.one_hot, "input '{}': label {} at row {} is outside [0, {})", in.name, label,
                  i, in.one_hot);
      rows.data<double>()[i * in.one_hot + label] = 1.0;
    }
  } else {
    cast_tensor(raw, DType::Float64, rows);
  }
  if (in.scale != 1.0)
    for (double& v : rows.span<double>()) v *= in.scale;
  return rows;
}

}  // namespace

Result<Dataset> Dataset::create(const Manifest& m, const Graph& g, int64_t batch_size, uint64_t seed) {
  Dataset d;
  d.batch_size_ = batch_size;
  d.shuffle_ = m.shuffle;
  d.rng_.reseed(seed);
  for (const auto& [name, spec] : m.inputs) {
    ValueId id = g.find_value(name);
    GRIST_CHECK(id != kNoValue && g.value(id).kind == ValueKind::Input,
                "{}: [inputs.{}] names no input of the model (its inputs: {})", m.path, name, [&] {
                  std::string s;
                  for (ValueId in : g.inputs) s += (s.empty() ? "" : ", ") + g.value(in).name;
                  return s;
                }());
  }
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    Source s;
    auto it = m.inputs.find(v.name);
    if (it != m.inputs.end()) {
      s.spec = it->second;
    } else {
      s.spec.name = v.name;
      s.spec.role = InputRole::Fixed;
    }
    s.dtype = s.spec.dtype != DType::Undefined ? s.spec.dtype
                                                : (v.dtype == DType::Undefined ? DType::Float32 : v.dtype);
    GRIST_CHECK(v.shape.has_value(), "input '{}' has no declared shape in the model; grist needs its rank", v.name);
    const auto& dims = *v.shape;
    // Dimension 0 is the batch when it is symbolic, or when it equals the batch size of a data/label input.
    s.batched = !dims.empty() && (!dims[0].known() || s.spec.role != InputRole::Fixed);
    std::vector<int64_t> sample;
    for (size_t i = s.batched ? 1 : 0; i < dims.size(); ++i) sample.push_back(dims[i].known() ? dims[i].size : -1);
    auto rows = load_rows(s.spec);
    if (!rows) return rows.error();
    Tensor pool = std::move(rows).value();
    if (s.batched && !dims.empty() && dims[0].known() && dims[0].size != batch_size)
      return make_error("input '{}' has a fixed batch dimension of {}, but the batch size is {}", v.name, dims[0].size,
                        batch_size);
    // Symbolic dims of a sample come from the source's rows where it has them.
    int64_t known = 1, unknown = 0;
    for (int64_t x : sample) x < 0 ? ++unknown : known *= x;
    if (unknown > 0) {
      GRIST_CHECK(pool.defined() && unknown == 1, "input '{}': its shape {} has symbolic dimensions besides the batch; "
                  "give its data in the manifest", v.name, [&] {
                    std::string str;
                    for (const Dim& dd : dims) str += (str.empty() ? "" : ", ") + (dd.known() ? std::to_string(dd.size) : dd.symbol);
                    return "[" + str + "]";
                  }());
      int64_t per_row = pool.numel() / pool.shape()[0];
      GRIST_CHECK(per_row % known == 0, "input '{}': a row of its source has {} values, which does not fit its shape",
                  v.name, per_row);
      for (int64_t& x : sample)
        if (x < 0) x = per_row / known;
    }
    s.sample_shape = Shape(sample);
    if (pool.defined()) {
      if (!s.batched) {
        GRIST_CHECK(pool.numel() == s.sample_shape.numel(), "input '{}': its values have {} elements, the model wants "
                    "shape {}", v.name, pool.numel(), s.sample_shape.str());
        cast_tensor(pool, s.dtype, s.fixed);
        s.fixed.reshape(s.sample_shape);
      } else {
        int64_t n = pool.shape()[0];
        GRIST_CHECK(pool.numel() / n == s.sample_shape.numel(),
                    "input '{}': a row of its source has {} values, but one sample of the model input {} needs {}",
                    v.name, pool.numel() / n, s.sample_shape.str(), s.sample_shape.numel());
        if (s.spec.role == InputRole::Fixed) {
          // A fixed batched input takes the first batch of its rows, always.
          GRIST_CHECK(n >= batch_size, "input '{}': its source has {} rows, fewer than the batch size {}", v.name, n,
                      batch_size);
        } else if (d.pool_size_ == 0) {
          d.pool_size_ = n;
        } else {
          GRIST_CHECK(n == d.pool_size_, "input '{}': its source has {} rows but another data/label input has {}; rows "
                      "are samples and must pair up", v.name, n, d.pool_size_);
        }
      }
    }
    // The rows never change: copies of the data set (one per hazard searched) share them.
    if (pool.defined() && s.batched) s.pool = std::make_shared<const Tensor>(std::move(pool));
    d.names_.push_back(v.name);
    d.specs_[v.name] = s.spec;
    d.sources_[v.name] = std::move(s);
  }
  return d;
}

std::vector<int64_t> Dataset::next_rows() {
  std::vector<int64_t> rows;
  if (pool_size_ == 0) return rows;
  rows.reserve(static_cast<size_t>(batch_size_));
  while (static_cast<int64_t>(rows.size()) < batch_size_) {
    if (cursor_ >= order_.size()) {
      order_.resize(static_cast<size_t>(pool_size_));
      std::iota(order_.begin(), order_.end(), 0);
      if (shuffle_)
        for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng_.below(i)]);
      cursor_ = 0;
    }
    rows.push_back(order_[cursor_++]);
  }
  return rows;
}

Status Dataset::fill(const Source& s, Tensor& out, const std::vector<int64_t>& rows) {
  if (!s.batched && s.fixed.defined()) {  // values given for an input without a batch dimension
    out = s.fixed;
    return Status::ok();
  }
  if (!s.batched) {
    out.resize(s.dtype, s.sample_shape);
  } else {
    Shape shape;
    shape.push_back(batch_size_);
    for (int64_t x : s.sample_shape) shape.push_back(x);
    out.resize(s.dtype, shape);
  }
  const int64_t per = s.sample_shape.numel();
  if (s.pool) {
    Tensor rows_f64(DType::Float64, out.shape());
    const double* src = s.pool->data<double>();
    for (int64_t r = 0; r < batch_size_; ++r) {
      int64_t row = s.spec.role == InputRole::Fixed ? r : rows[static_cast<size_t>(r)];
      std::memcpy(rows_f64.data<double>() + r * per, src + row * per, static_cast<size_t>(per) * sizeof(double));
    }
    cast_tensor(rows_f64, s.dtype, out);
    return Status::ok();
  }
  // Random draws: uniform or normal, in the input's type.
  Tensor draw(DType::Float64, out.shape());
  for (double& v : draw.span<double>())
    v = s.spec.source == InputSource::Normal ? rng_.normal(s.spec.normal_mean, s.spec.normal_std)
                                  : rng_.uniform(s.spec.uniform_lo, s.spec.uniform_hi);
  if (s.spec.scale != 1.0)
    for (double& v : draw.span<double>()) v *= s.spec.scale;
  cast_tensor(draw, s.dtype, out);
  return Status::ok();
}

Status Dataset::next_batch(Batch& out) {
  std::vector<int64_t> rows = next_rows();
  for (const auto& name : names_) {
    Source& s = sources_.at(name);
    if (s.spec.role == InputRole::Fixed && s.fixed.defined()) {
      out[name] = s.fixed;
      continue;
    }
    GRIST_TRY(fill(s, out[name], rows));
    if (s.spec.role == InputRole::Fixed) s.fixed = out[name];  // drawn once, then always the same
  }
  return Status::ok();
}

Status Dataset::redraw(Batch& batch) {
  std::vector<int64_t> rows;
  bool need_rows = false;
  for (const auto& name : names_) need_rows |= sources_.at(name).spec.redraw && sources_.at(name).pool;
  if (need_rows) rows = next_rows();
  for (const auto& name : names_)
    if (sources_.at(name).spec.redraw) GRIST_TRY(fill(sources_.at(name), batch[name], rows));
  return Status::ok();
}

Result<std::optional<SourceRange>> source_range(const InputSpec& in) {
  auto scaled = [&](double lo, double hi) { return std::pair{std::min(lo * in.scale, hi * in.scale), std::max(lo * in.scale, hi * in.scale)}; };
  if (in.one_hot > 0) return std::optional<SourceRange>(SourceRange{0, 1, "one-hot labels"});
  switch (in.source) {
    case InputSource::Uniform: {
      const auto [lo, hi] = scaled(in.uniform_lo, in.uniform_hi);
      return std::optional<SourceRange>(SourceRange{lo, hi, "manifest uniform source"});
    }
    case InputSource::Normal:
      return std::optional<SourceRange>();
    case InputSource::FashionMnist: {
      // The IDX format fixes the range; reading 47 million pixels to learn it is not needed.
      if (in.file.find("labels") != std::string::npos)
        return std::optional<SourceRange>(SourceRange{0, 9, "Fashion-MNIST labels"});
      const auto [lo, hi] = scaled(0, 255);
      return std::optional<SourceRange>(SourceRange{lo, hi, "Fashion-MNIST pixels × scale"});
    }
    case InputSource::Values:
    case InputSource::Npz:
    case InputSource::Npy: {
      auto rows = load_rows(in);
      if (!rows) return rows.error();
      double lo = INFINITY, hi = -INFINITY;
      for (double v : rows->span<double>())
        if (v == v) lo = std::min(lo, v), hi = std::max(hi, v);
      return std::optional<SourceRange>(
          SourceRange{lo, hi, in.source == InputSource::Values ? "manifest values" : "hull of the data file × scale"});
    }
  }
  return std::optional<SourceRange>();
}

namespace {

// The classes an integer input indexes when it is a loss's target: dimension 1 of the scores that
// SoftmaxCrossEntropyLoss or NegativeLogLikelihoodLoss reads beside it, where the model declares it; 0 otherwise.
int64_t target_classes(const Graph& g, const Value& v) {
  for (int32_t c : v.consumers) {
    const Node& n = g.nodes[static_cast<size_t>(c)];
    if (n.op_type != "SoftmaxCrossEntropyLoss" && n.op_type != "NegativeLogLikelihoodLoss") continue;
    if (n.inputs.size() < 2 || n.inputs[1] != g.find_value(v.name)) continue;
    const Value& scores = g.value(n.inputs[0]);
    if (scores.shape && scores.shape->size() >= 2 && (*scores.shape)[1].known()) return (*scores.shape)[1].size;
  }
  return 0;
}

}  // namespace

void default_inputs(const Graph& g, Manifest& m) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (m.inputs.count(v.name)) continue;
    InputSpec in;
    in.name = v.name;
    in.source = InputSource::Uniform;
    if (is_float(v.dtype) || v.dtype == DType::Undefined) {
      in.role = InputRole::Data;
    } else {
      in.role = InputRole::Label;
      // A loss's target takes the classes the model scores (a 5-class head must not see label 9).
      const int64_t classes = target_classes(g, v);
      in.uniform_hi = classes > 0 ? static_cast<double>(classes) : 10;
    }
    m.inputs[v.name] = in;
  }
}

}  // namespace grist
