// Crafted training batches choose their labels from the label set (issue 9's "system test": training data within
// the inputs' ranges, labels from the label set). A classifier's data may never hold the label that drives the
// hazard's weights (9b's zero-initialised sigmoid MLP: every batch holds the class whose logit must fall, so its
// own rows pull that logit back up); stepping the data inputs alone cannot change what a row is labelled.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// Per row of a float32/float64 one-hot label tensor [rows, classes]: moves the row's 1 to the class with the largest `gain`
// (the derivative of what the crafted step should raise with respect to each label entry) when that beats the
// row's current class; a NaN gain never wins. The losses a classifier trains on are linear in the labels, so
// the first-order gain of a switch is the gain of the switch. Returns the number of rows changed; an error for
// anything but a float32/float64 [rows, classes] table and a gain of its shape.
Result<int64_t> choose_one_hot_labels(Tensor& labels, const Tensor& gain);

}  // namespace grist
