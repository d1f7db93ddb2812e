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

using Batch = std::map<std::string, Tensor>;

class Dataset {
 public:
  // Resolves every model input: named in the manifest or not (unnamed ones are fixed uniform [0, 1)).
  static Result<Dataset> create(const Manifest& m, const Graph& g, int64_t batch_size, uint64_t seed);

  int64_t batch_size() const { return batch_size_; }
  // Rows in the pooled sources (0 when every batched input is drawn at random).
  int64_t pool_size() const { return pool_size_; }
  const InputSpec& spec(const std::string& name) const { return specs_.at(name); }
  const std::vector<std::string>& input_names() const { return names_; }

  // The next batch of every input (fixed inputs included, always the same).
  Status next_batch(Batch& out);
  // A fresh draw of the inputs marked `redraw` into `batch`.
  Status redraw(Batch& batch);

 private:
  struct Source {
    InputSpec spec;
    bool batched = true;   // dimension 0 is the batch
    DType dtype = DType::Float32;
    Shape sample_shape;    // one row's shape in the model
    std::shared_ptr<const Tensor> pool;  // pooled rows [N, sample_shape...] as float64; null for random draws
    Tensor fixed;          // fixed inputs that are not batched
  };
  Status fill(const Source& s, Tensor& out, const std::vector<int64_t>& rows);
  std::vector<int64_t> next_rows();

  int64_t batch_size_ = 1;
  int64_t pool_size_ = 0;
  bool shuffle_ = true;
  Rng rng_;
  std::vector<std::string> names_;
  std::map<std::string, InputSpec> specs_;
  std::map<std::string, Source> sources_;
  std::vector<int64_t> order_;
  size_t cursor_ = 0;
};

// The values an input's source can put into the model (after one-hot and scale), and why, for the interval
// analysis: the hull of inline values and data files, a data set's value range, the uniform draws' range;
// none for normal draws (unbounded). The one place an input spec becomes a range.
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
