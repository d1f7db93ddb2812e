#include "search/label_choice.h"

namespace grist {

Result<int64_t> choose_one_hot_labels(Tensor& labels, const Tensor& gain) {
  GRIST_CHECK(labels.rank() == 2 && gain.shape() == labels.shape() &&
                  (labels.dtype() == DType::Float32 || labels.dtype() == DType::Float64),
              "float32/float64 one-hot labels [rows, classes] and a gain of the same shape, got {} {} and {}",
              dtype_name(labels.dtype()), labels.shape().str(), gain.shape().str());
  const int64_t rows = labels.shape()[0], classes = labels.shape()[1];
  int64_t changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t current = 0, best = -1;
    for (int64_t k = 1; k < classes; ++k)
      if (labels.get_as_double(r * classes + k) > labels.get_as_double(r * classes + current)) current = k;
    const double current_gain = gain.get_as_double(r * classes + current);
    double best_gain = current_gain;
    for (int64_t k = 0; k < classes; ++k) {
      const double g = gain.get_as_double(r * classes + k);
      // `g > best_gain` is false for a NaN on either side: a NaN never wins, a NaN current gain never loses.
      if (k != current && g > best_gain) best = k, best_gain = g;
    }
    if (best < 0) continue;
    dispatch_float(labels.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* row = labels.data<T>() + r * classes;
      for (int64_t k = 0; k < classes; ++k) row[k] = T(k == best ? 1 : 0);
    });
    ++changed;
  }
  return changed;
}

}  // namespace grist
