#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "data/idx.h"
#include "data/npy.h"
#include "data/npz.h"
#include "data/row_cache.h"
#include "data/streamed_rows.h"
#include "onnx/tensor_proto.h"

namespace grist {

namespace {

// A source's rows as stored (float64 for inline values; a file's or data set's own element type), all of them:
// the manifest's `rows` subset and the preprocessing are applied per batch.
Result<Tensor> load_stored(const InputSpec& in) {
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
  if (in.one_hot > 0)
    GRIST_CHECK(raw.rank() == 1 && (is_integer(raw.dtype()) || raw.dtype() == DType::Float64),
                "input '{}': one_hot needs a 1-D array of integer labels", in.name);
  return raw;
}

// IDX data files from this size on are read on a thread while the hunt starts, and kept uncompressed in the
// cache folder (data/streamed_rows.h); labels (60 kB for Fashion-MNIST) are read at once.
constexpr uint64_t kStreamedFrom = uint64_t{1} << 20;

bool streams(const InputSpec& in) { return in.source == InputSource::FashionMnist && in.one_hot == 0; }

// The manifest's `rows` subset of a source of `n` rows, as [first, first + count).
Result<std::pair<int64_t, int64_t>> row_subset(const InputSpec& in, int64_t n) {
  if (in.row_end < 0) return std::pair<int64_t, int64_t>{0, n};
  GRIST_CHECK(in.row_end <= n, "input '{}': rows = [{}, {}] reaches past the {} rows of its source", in.name,
              in.row_begin, in.row_end, n);
  return std::pair<int64_t, int64_t>{in.row_begin, in.row_end - in.row_begin};
}

// `count` stored values from element `at` of `t`, as double.
void stored_values(const Tensor& t, int64_t at, int64_t count, double* out) {
  const bool done = dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = t.data<T>() + at;
    for (int64_t j = 0; j < count; ++j) out[j] = static_cast<double>(src[j]);
  });
  if (!done)
    for (int64_t j = 0; j < count; ++j) out[j] = t.get_as_double(at + j);
}

// Applies the input's preprocessing to `count` values of one sample (channel by position).
void preprocess_sample(const InputSpec& in, int64_t channels, int64_t inner, double* v, int64_t count) {
  if (in.scale == 1.0 && in.offset == 0.0 && in.mean.empty() && in.std.empty()) return;
  for (int64_t j = 0; j < count; ++j)
    v[j] = in.preprocess(v[j], channels > 1 ? static_cast<size_t>((j / inner) % channels) : 0);
}

// The channel count and the elements below one channel step, for a per-channel mean/std along the input's
// `channel_axis` (an axis of the model input: `dims`, with the batch first when `batched`).
Result<std::pair<int64_t, int64_t>> channel_layout(const InputSpec& in, const Shape& sample, bool batched) {
  if (!in.per_channel()) return std::pair<int64_t, int64_t>{1, 1};
  const int64_t rank = sample.rank() + (batched ? 1 : 0);
  const int64_t axis = in.channel_axis < 0 ? in.channel_axis + rank : in.channel_axis;
  GRIST_CHECK(axis >= 0 && axis < rank, "input '{}': channel_axis = {} is not an axis of the model input (rank {})",
              in.name, in.channel_axis, rank);
  GRIST_CHECK(!(batched && axis == 0), "input '{}': channel_axis = {} is the batch axis", in.name, in.channel_axis);
  const int64_t at = batched ? axis - 1 : axis;
  const int64_t channels = sample[static_cast<size_t>(at)];
  int64_t inner = 1;
  for (int64_t i = at + 1; i < sample.rank(); ++i) inner *= sample[static_cast<size_t>(i)];
  for (const auto& [key, list] : {std::pair{"mean", &in.mean}, std::pair{"std", &in.std}})
    GRIST_CHECK(list->size() <= 1 || static_cast<int64_t>(list->size()) == channels,
                "input '{}': {} has {} values (one a channel), but axis {} of the model input has {}", in.name, key,
                list->size(), axis, channels);
  return std::pair<int64_t, int64_t>{channels, inner};
}

}  // namespace

Result<Dataset> Dataset::create(const Manifest& m, const Graph& g, int64_t batch_size, uint64_t seed) {
  Dataset d;
  d.batch_size_ = batch_size;
  d.data_order_.shuffle = m.shuffle;
  d.redrawn_fixed_.shuffle = m.shuffle;
  d.rng_.reseed(seed);
  d.fixed_rng_.reseed(seed ^ 0x6a09e667f3bcc909ull);  // a stream of its own (the constant: √2's fraction bits)
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
    std::shared_ptr<StreamedRows> streamed;
    Tensor loaded;
    if (streams(s.spec)) {
      auto r = StreamedRows::open_idx(s.spec.file, kStreamedFrom, default_row_cache_dir());
      if (!r) return make_error("input '{}': {} (install Debian's dataset-fashion-mnist)", v.name, r.message());
      streamed = std::move(r).value();
    } else {
      auto stored = load_stored(s.spec);
      if (!stored) return stored.error();
      loaded = std::move(stored).value();
    }
    const Tensor& pool = streamed ? streamed->tensor() : loaded;
    GRIST_CHECK(!streamed || (pool.rank() >= 1 && pool.shape()[0] > 0), "input '{}': its source holds no rows", v.name);
    if (pool.defined()) {
      auto subset = row_subset(s.spec, pool.shape()[0]);
      if (!subset) return subset.error();
      std::tie(s.first_row, s.rows) = *subset;
      s.stored_per_row = pool.numel() / pool.shape()[0];
      if (s.spec.one_hot > 0) {  // every label of the subset in range, once, rather than at each batch
        for (int64_t i = s.first_row; i < s.first_row + s.rows; ++i) {
          const int64_t label = static_cast<int64_t>(pool.get_as_double(i));
          GRIST_CHECK(label >= 0 && label < s.spec.one_hot, "input '{}': label {} at row {} is outside [0, {})",
                      v.name, label, i, s.spec.one_hot);
        }
      }
    }
    // Values one row gives the model: its stored values, or the one-hot depth.
    const int64_t per_row = s.spec.one_hot > 0 ? s.spec.one_hot : s.stored_per_row;
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
      GRIST_CHECK(per_row % known == 0, "input '{}': a row of its source has {} values, which does not fit its shape",
                  v.name, per_row);
      for (int64_t& x : sample)
        if (x < 0) x = per_row / known;
    }
    s.sample_shape = Shape(sample);
    auto layout = channel_layout(s.spec, s.sample_shape, s.batched);
    if (!layout) return layout.error();
    std::tie(s.channels, s.inner) = *layout;
    if (pool.defined()) {
      if (streamed) {
        s.pool = std::shared_ptr<const Tensor>(streamed, &streamed->tensor());
        s.streamed = streamed;
      } else {
        s.pool = std::make_shared<const Tensor>(std::move(loaded));
      }
      if (!s.batched) {
        if (s.streamed) GRIST_TRY(s.streamed->wait_rows(s.streamed->rows()));
        GRIST_CHECK(s.rows * per_row == s.sample_shape.numel(), "input '{}': its values have {} elements, the model "
                    "wants shape {}", v.name, s.rows * per_row, s.sample_shape.str());
        GRIST_CHECK(!s.spec.redraw, "input '{}': redraw = true, but the model input has no batch dimension to draw "
                    "rows for (its values are one fixed tensor)", v.name);
        std::vector<int64_t> all(static_cast<size_t>(s.rows));
        std::iota(all.begin(), all.end(), 0);
        Tensor f64;
        d.gather(s, all, f64);
        f64.reshape(s.sample_shape);
        cast_tensor(f64, s.dtype, s.fixed);
        s.pool.reset();
      } else {
        GRIST_CHECK(per_row == s.sample_shape.numel(),
                    "input '{}': a row of its source has {} values, but one sample of the model input {} needs {}",
                    v.name, per_row, s.sample_shape.str(), s.sample_shape.numel());
        if (s.spec.role == InputRole::Fixed && s.spec.redraw) {
          // Redrawn fixed rows advance a batch per redraw, together, apart from the data's rows.
          GRIST_CHECK(d.redrawn_fixed_.pool_size == 0 || s.rows == d.redrawn_fixed_.pool_size,
                      "input '{}': its source has {} rows but another redrawn fixed input has {}; they are drawn "
                      "together and must pair up", v.name, s.rows, d.redrawn_fixed_.pool_size);
          d.redrawn_fixed_.pool_size = s.rows;
        } else if (s.spec.role == InputRole::Fixed) {
          // A fixed batched input takes the first batch of its rows, always.
          GRIST_CHECK(s.rows >= batch_size, "input '{}': its source has {} rows, fewer than the batch size {}", v.name,
                      s.rows, batch_size);
        } else if (d.data_order_.pool_size == 0) {
          d.data_order_.pool_size = s.rows;
        } else {
          GRIST_CHECK(s.rows == d.data_order_.pool_size, "input '{}': its source has {} rows but another data/label "
                      "input has {}; rows are samples and must pair up", v.name, s.rows, d.data_order_.pool_size);
        }
      }
    }
    d.redraws_ = d.redraws_ || s.spec.redraw;
    d.names_.push_back(v.name);
    d.specs_[v.name] = s.spec;
    d.sources_[v.name] = std::move(s);
  }
  return d;
}

size_t Dataset::stored_bytes() const {
  size_t bytes = 0;
  for (const auto& [name, s] : sources_)
    if (s.pool) bytes += s.pool->nbytes();
  return bytes;
}

std::vector<int64_t> Dataset::RowOrder::next(int64_t count, Rng& rng) {
  std::vector<int64_t> rows;
  if (pool_size == 0) return rows;
  rows.reserve(static_cast<size_t>(count));
  while (static_cast<int64_t>(rows.size()) < count) {
    if (cursor >= order.size()) {
      order.resize(static_cast<size_t>(pool_size));
      std::iota(order.begin(), order.end(), 0);
      if (shuffle)
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
      cursor = 0;
    }
    rows.push_back(order[cursor++]);
  }
  return rows;
}

void Dataset::gather(const Source& s, const std::vector<int64_t>& rows, Tensor& out) const {
  const int64_t per = s.spec.one_hot > 0 ? s.spec.one_hot : s.stored_per_row;
  Shape shape;
  shape.push_back(static_cast<int64_t>(rows.size()));
  for (int64_t x : s.sample_shape) shape.push_back(x);
  out.resize(DType::Float64, s.batched ? shape : Shape{static_cast<int64_t>(rows.size()) * per});
  double* dst = out.data<double>();
  for (size_t r = 0; r < rows.size(); ++r, dst += per) {
    const int64_t row = s.first_row + rows[r];
    if (s.spec.one_hot > 0) {
      std::fill_n(dst, per, 0.0);
      dst[static_cast<int64_t>(s.pool->get_as_double(row))] = 1.0;  // checked in range by create
    } else {
      stored_values(*s.pool, row * per, per, dst);
    }
    preprocess_sample(s.spec, s.channels, s.inner, dst, per);
  }
}

Status Dataset::fill(const Source& s, Tensor& out, const std::vector<int64_t>& rows) {
  Shape shape;
  if (s.batched) shape.push_back(batch_size_);
  for (int64_t x : s.sample_shape) shape.push_back(x);
  if (s.pool) {
    if (s.streamed && !rows.empty()) {
      const int64_t last = s.first_row + *std::max_element(rows.begin(), rows.end());
      if (auto st = s.streamed->wait_rows(last + 1); !st) return make_error("input '{}': {}", s.spec.name, st.message());
    }
    Tensor rows_f64;
    gather(s, rows, rows_f64);
    cast_tensor(rows_f64, s.dtype, out);
    return Status::ok();
  }
  // Random draws: uniform or normal, preprocessed, in the input's type.
  Tensor draw(DType::Float64, shape);
  if (s.spec.source == InputSource::Normal) {
    rng_.fill_normal(draw.data<double>(), draw.numel(), s.spec.normal_mean, s.spec.normal_std);
  } else {
    for (double& v : draw.span<double>()) v = rng_.uniform(s.spec.uniform_lo, s.spec.uniform_hi);
  }
  const int64_t per = s.sample_shape.numel();
  for (int64_t r = 0; r < draw.numel() / std::max<int64_t>(per, 1); ++r)
    preprocess_sample(s.spec, s.channels, s.inner, draw.data<double>() + r * per, per);
  cast_tensor(draw, s.dtype, out);
  return Status::ok();
}

Status Dataset::next_batch(Batch& out) {
  std::vector<int64_t> rows = data_order_.next(batch_size_, rng_);
  // A fixed input with rows takes the first batch of them; a redrawn one the first of its own sequence, drawn
  // once for all of them (they go in step).
  std::vector<int64_t> first(static_cast<size_t>(batch_size_)), first_redrawn;
  std::iota(first.begin(), first.end(), 0);
  for (const auto& name : names_) {
    const Source& s = sources_.at(name);
    if (s.spec.role == InputRole::Fixed && s.spec.redraw && s.pool && !s.fixed.defined() && first_redrawn.empty())
      first_redrawn = redrawn_fixed_.next(batch_size_, fixed_rng_);
  }
  for (const auto& name : names_) {
    Source& s = sources_.at(name);
    if (s.spec.role == InputRole::Fixed && s.fixed.defined()) {
      out[name] = s.fixed;
      continue;
    }
    if (s.spec.role == InputRole::Fixed && s.pool) {
      GRIST_TRY(fill(s, out[name], s.spec.redraw ? first_redrawn : first));
    } else {
      GRIST_TRY(fill(s, out[name], rows));
    }
    if (s.spec.role == InputRole::Fixed) s.fixed = out[name];  // drawn once, then always the same until a redraw
  }
  return Status::ok();
}

Status Dataset::redraw(Batch& batch) {
  if (!redraws_) return Status::ok();  // called every iteration of a hunt: most manifests redraw nothing
  std::vector<int64_t> rows, fixed_rows;
  bool need_rows = false, need_fixed_rows = false;
  for (const auto& name : names_) {
    const Source& s = sources_.at(name);
    if (!s.spec.redraw || !s.pool) continue;
    (s.spec.role == InputRole::Fixed ? need_fixed_rows : need_rows) = true;
  }
  // Only inputs that take their rows from the data's sequence advance it.
  if (need_rows) rows = data_order_.next(batch_size_, rng_);
  if (need_fixed_rows) fixed_rows = redrawn_fixed_.next(batch_size_, fixed_rng_);
  for (const auto& name : names_) {
    Source& s = sources_.at(name);
    if (!s.spec.redraw) continue;
    GRIST_TRY(fill(s, batch[name], s.spec.role == InputRole::Fixed ? fixed_rows : rows));
    if (s.spec.role == InputRole::Fixed) s.fixed = batch[name];
  }
  return Status::ok();
}

Result<std::optional<SourceRange>> source_range(const InputSpec& in) {
  // The stored values' range, then its image under the preprocessing (monotone in each channel).
  double lo = 0, hi = 0;
  std::string why;
  if (in.one_hot > 0) {
    lo = 0, hi = 1, why = "one-hot labels";
  } else {
    switch (in.source) {
      case InputSource::Uniform:
        lo = in.uniform_lo, hi = in.uniform_hi, why = "manifest uniform source";
        break;
      case InputSource::Normal:
        return std::optional<SourceRange>();
      case InputSource::FashionMnist:
        // The IDX format fixes the range; reading 47 million pixels to learn it is not needed.
        if (in.file.find("labels") != std::string::npos) lo = 0, hi = 9, why = "Fashion-MNIST labels";
        else lo = 0, hi = 255, why = "Fashion-MNIST pixels";
        break;
      case InputSource::Values:
      case InputSource::Npz:
      case InputSource::Npy: {
        auto stored = load_stored(in);
        if (!stored) return stored.error();
        auto subset = row_subset(in, stored->shape()[0]);
        if (!subset) return subset.error();
        const int64_t per = stored->numel() / stored->shape()[0];
        std::vector<double> v(static_cast<size_t>(per));
        lo = INFINITY, hi = -INFINITY;
        for (int64_t r = subset->first; r < subset->first + subset->second; ++r) {
          stored_values(*stored, r * per, per, v.data());
          for (double x : v)
            if (x == x) lo = std::min(lo, x), hi = std::max(hi, x);
        }
        why = in.source == InputSource::Values ? "manifest values" : "hull of the data file";
        break;
      }
    }
  }
  const bool preprocessed = in.scale != 1.0 || in.offset != 0.0 || !in.mean.empty() || !in.std.empty();
  if (!preprocessed || !(lo <= hi)) return std::optional<SourceRange>(SourceRange{lo, hi, why});
  double out_lo = INFINITY, out_hi = -INFINITY;
  const size_t channels = std::max({in.mean.size(), in.std.size(), size_t{1}});
  for (size_t c = 0; c < channels; ++c) {
    const double a = in.preprocess(lo, c), b = in.preprocess(hi, c);
    out_lo = std::min({out_lo, a, b});
    out_hi = std::max({out_hi, a, b});
  }
  return std::optional<SourceRange>(SourceRange{out_lo, out_hi, why + " after its preprocessing"});
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
