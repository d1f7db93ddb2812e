// Batches for a hunt: each model input's samples from its manifest source (a data set, inline values,
// files, or random draws), shaped and typed like the model input, served batch after batch in a seeded
// epoch order shared by all inputs so a sample's data and label stay together.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "config/manifest.h"
#include "tensor/tensor.h"
#include "util/rng.h"
#include "util/status.h"

namespace grist {

class StreamedRows;
using Batch = std::map<std::string, Tensor>;

class Dataset {
 public:
  // Resolves every model input: named in the manifest or not (unnamed ones are fixed uniform [0, 1)).
  static Result<Dataset> create(const Manifest& m, const Graph& g, int64_t batch_size, uint64_t seed);

  int64_t batch_size() const { return batch_size_; }
  // Rows in the pooled sources (0 when every batched input is drawn at random).
  int64_t pool_size() const { return data_order_.pool_size; }
  const InputSpec& spec(const std::string& name) const { return specs_.at(name); }
  // Bytes the pooled rows take, as stored (shared by every copy of the data set).
  size_t stored_bytes() const;
  const std::vector<std::string>& input_names() const { return names_; }

  // The next batch of every input (fixed inputs included, always the same).
  Status next_batch(Batch& out);
  // A fresh draw of the inputs marked `redraw` into `batch`.
  Status redraw(Batch& batch);

 private:
  // A seeded sequence of row numbers over a pool, epoch after epoch (reshuffled each epoch or in order).
  struct RowOrder {
    int64_t pool_size = 0;
    bool shuffle = true;
    std::vector<int64_t> order;
    size_t cursor = 0;
    std::vector<int64_t> next(int64_t count, Rng& rng);
  };
  struct Source {
    InputSpec spec;
    bool batched = true;   // dimension 0 is the batch
    DType dtype = DType::Float32;
    Shape sample_shape;    // one row's shape in the model
    // The source's rows as stored (uint8 pixels stay uint8; integer labels stay 1-D under one-hot), converted
    // and preprocessed per batch; null for random draws. Copies of the data set share it.
    std::shared_ptr<const Tensor> pool;
    std::shared_ptr<StreamedRows> streamed;  // when the pool is still arriving: its rows are waited for
    int64_t first_row = 0;  // the manifest's `rows` subset: pool rows [first_row, first_row + rows)
    int64_t rows = 0;
    int64_t stored_per_row = 0;  // stored values a row (1 for one-hot labels)
    int64_t channels = 1, inner = 1;  // per-channel preprocessing: element j's channel is (j / inner) % channels
    Tensor fixed;          // a fixed input's current value (drawn once, or at each redraw)
  };
  Status fill(const Source& s, Tensor& out, const std::vector<int64_t>& rows);
  // Pooled rows (row numbers within the subset) → float64 [rows.size(), sample...], preprocessed.
  void gather(const Source& s, const std::vector<int64_t>& rows, Tensor& out) const;

  int64_t batch_size_ = 1;
  Rng rng_;                 // the data order's shuffles and the random draws, interleaved
  Rng fixed_rng_;           // the shuffles of redrawn fixed rows (the data's sequence stays as without them)
  bool redraws_ = false;    // some input is marked `redraw`
  std::vector<std::string> names_;
  std::map<std::string, InputSpec> specs_;
  std::map<std::string, Source> sources_;
  RowOrder data_order_;     // data and label rows, shared so a sample's data and label stay together
  RowOrder redrawn_fixed_;  // fixed inputs redrawn from rows: a sequence of their own, in step among them
};

// The values an input's source can put into the model (after its preprocessing: rows, one-hot, scale, offset,
// mean and std), and why, for the interval analysis: the hull of inline values and data files, a data set's
// value range, the uniform draws' range; none for normal draws (unbounded). The one place an input spec
// becomes a range.
struct SourceRange {
  double lo = 0, hi = 0;
  std::string why;
};
Result<std::optional<SourceRange>> source_range(const InputSpec& in);

// Without a manifest (or for the inputs it leaves out) every float input is searched data drawn uniform in
// [0, 1) and every integer input a label drawn in [0, 10), or in [0, C) when it is the target of a loss over C
// classes: what `grist hunt`, `fix` and `bench` assume.
void default_inputs(const Graph& g, Manifest& m);

}  // namespace grist
