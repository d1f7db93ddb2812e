#include "search/label_choice.h"

#include <cmath>

namespace grist {

std::optional<OneHotValues> one_hot_values(const InputSpec& spec, int64_t classes, int64_t rank) {
  const int64_t axis = spec.channel_axis < 0 ? spec.channel_axis + rank : spec.channel_axis;
  if (spec.per_channel() && axis != rank - 1) return std::nullopt;
  OneHotValues v;
  for (int64_t k = 0; k < classes; ++k) {
    const auto c = static_cast<size_t>(spec.per_channel() ? k : 0);
    v.on.push_back(spec.preprocess(1.0, c));
    v.off.push_back(spec.preprocess(0.0, c));
  }
  return v;
}

Result<int64_t> choose_one_hot_labels(Tensor& labels, const Tensor& gain, const OneHotValues& values) {
  GRIST_CHECK(labels.rank() == 2 && gain.shape() == labels.shape() &&
                  (labels.dtype() == DType::Float32 || labels.dtype() == DType::Float64) &&
                  static_cast<int64_t>(values.on.size()) == labels.shape()[1] && values.off.size() == values.on.size(),
              "float32/float64 one-hot labels [rows, classes], a gain of the same shape and values of each class, "
              "got {} {}, {} and {} classes",
              dtype_name(labels.dtype()), labels.shape().str(), gain.shape().str(), values.on.size());
  const int64_t rows = labels.shape()[0], classes = labels.shape()[1];
  int64_t changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    // The row's class: the one entry nearer its class's `on` value than its `off` value.
    int64_t current = -1, on_entries = 0;
    for (int64_t k = 0; k < classes; ++k) {
      const double v = labels.get_as_double(r * classes + k);
      const auto c = static_cast<size_t>(k);
      if (std::fabs(v - values.on[c]) < std::fabs(v - values.off[c])) current = k, ++on_entries;
    }
    if (on_entries != 1) continue;
    int64_t best = -1;
    double best_gain = gain.get_as_double(r * classes + current);
    for (int64_t k = 0; k < classes; ++k) {
      const double g = gain.get_as_double(r * classes + k);
      // `g > best_gain` is false for a NaN on either side: a NaN never wins, a NaN current gain never loses.
      if (k != current && g > best_gain) best = k, best_gain = g;
    }
    if (best < 0) continue;
    dispatch_float(labels.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* row = labels.data<T>() + r * classes;
      for (int64_t k = 0; k < classes; ++k) {
        const auto c = static_cast<size_t>(k);
        row[k] = static_cast<T>(k == best ? values.on[c] : values.off[c]);
      }
    });
    ++changed;
  }
  return changed;
}

}  // namespace grist
