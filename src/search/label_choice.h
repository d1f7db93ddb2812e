// Crafted training batches choose their labels from the label set (issue 9's "system test": training data within
// the inputs' ranges, labels from the label set). A classifier's data may never hold the label that drives the
// hazard's weights (9b's zero-initialised sigmoid MLP: every batch holds the class whose logit must fall, so its
// own rows pull that logit back up); stepping the data inputs alone cannot change what a row is labelled.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "config/manifest.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// What a one-hot label row holds after the input's preprocessing (scale, offset, per-class mean/std): `on[k]`
// where the row is class k, `off[k]` elsewhere.
struct OneHotValues {
  std::vector<double> on, off;
};

// The values for a label input of `classes` classes, or nothing when its preprocessing is per channel along
// another axis than the classes' (a row's values would then depend on more than its class).
std::optional<OneHotValues> one_hot_values(const InputSpec& spec, int64_t classes, int64_t rank);

// Per row of a float32/float64 one-hot label tensor [rows, classes]: moves the row's class to the one with the
// largest `gain` (the derivative of what the crafted step should raise with respect to each label entry) when
// that beats the row's current class, writing `values`; a NaN gain never wins, and a row that is not one class
// of `values` (an all-zero row, say) is left alone. The losses a classifier trains on are linear in the labels,
// so the first-order gain of a switch is the gain of the switch. Returns the number of rows changed; an error for
// anything but a float32/float64 [rows, classes] table, a gain of its shape and values of its classes.
Result<int64_t> choose_one_hot_labels(Tensor& labels, const Tensor& gain, const OneHotValues& values);

}  // namespace grist
