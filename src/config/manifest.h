// The per-model manifest (TOML, docs/MANIFEST.md): what each input means, where data comes from, how the
// model trains, the search settings and what the study measured.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/optimizer_config.h"
#include "engine/precision.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

enum class InputRole { Data, Label, Fixed };
// Where an input's samples come from (manifest key `source`).
enum class InputSource { Values, FashionMnist, Npz, Npy, Uniform, Normal };
enum class ClipRange { None, Explicit, FirstBatch };

struct InputSpec {
  std::string name;
  InputRole role = InputRole::Fixed;
  InputSource source = InputSource::Uniform;
  std::string file;              // npz/npy file (absolute) or the IDX file of fashion-mnist
  std::string key;               // npz entry
  Tensor values;                 // source = values: rows are samples (float64 as written)
  double uniform_lo = 0, uniform_hi = 1;
  double normal_mean = 0, normal_std = 1;
  // Preprocessing, in this order: rows [row_begin, row_end) of the source (row_end -1: to its end), one-hot,
  // then value = ((stored × scale + offset) − mean[c]) / std[c], c the index along `channel_axis` of the model
  // input (mean/std of one element: every element alike; empty: 0 and 1).
  int64_t row_begin = 0, row_end = -1;
  double scale = 1;
  double offset = 0;
  std::vector<double> mean, std;
  int64_t channel_axis = 1;      // an axis of the model input; negative: from the end
  int64_t one_hot = 0;
  DType dtype = DType::Undefined;  // Undefined: the model input's
  ClipRange range = ClipRange::None;
  double lo = 0, hi = 0;         // with ClipRange::Explicit
  bool redraw = false;
  bool sampled() const { return source == InputSource::Uniform || source == InputSource::Normal; }
  bool per_channel() const { return mean.size() > 1 || std.size() > 1; }
  // The preprocessing of one stored value at channel c (an index below the channel count; 0 when not per channel).
  double preprocess(double v, size_t c) const {
    if (scale != 1.0) v *= scale;
    if (offset != 0.0) v += offset;  // skipped at 0: −0 + 0 is +0, and the sign of a zero can matter here
    if (!mean.empty()) v -= mean[mean.size() == 1 ? 0 : c];
    if (!std.empty()) v /= std[std.size() == 1 ? 0 : c];
    return v;
  }
};

// One of several training phases ([[train.phases]], a GAN's D and G): its own loss, optimizer and weights, stepped
// `steps` times in its turn each iteration.
struct TrainPhase {
  std::string loss;
  OptimizerConfig optimizer;
  std::vector<std::string> params;
  int64_t steps = 1;
};

struct TrainSpec {
  bool enabled = false;          // an optimizer other than none
  OptimizerConfig optimizer;
  bool all_params = true;
  std::vector<std::string> params;
  bool on_updated_batch = true;  // false: the batch just monitored (or a fresh one, with on_fresh_batch)
  bool on_fresh_batch = false;   // a new batch of the source every iteration (a DataLoader): the searched batch
                                 // is only monitored
  bool dropout = true;
  // A training step on the monitored batch with dropout on in both passes: fresh masks (a fresh forward in
  // training mode, what the frameworks do) or the monitored pass's own (grist's shortcut before session 8).
  bool fresh_masks = true;
  // The program's own training steps before the search starts (from the initial or checkpoint weights), on
  // batches of the source in its order: the hunt starts from the weights and optimizer state they reach.
  int64_t pretrain_steps = 0;
  std::string checkpoint;        // a .npz to resume from (engine/checkpoint.h): weights and optimizer state
  // Several losses trained in turn, in this order (empty: the one loss and optimizer above). With them,
  // `optimizer` is the first phase's and `params` every phase's weights.
  std::vector<TrainPhase> phases;
};

struct Expectation {
  std::string op, node, note;
  std::optional<int64_t> study_iterations;
  std::optional<double> study_seconds;
  // How the study's program counted iterations: it reported counter_offset + counter_step × (grist's
  // 1-based iteration). Its PyTorch toys incremented before checking (offset 1); its RBMs counted 2 a loop.
  int64_t counter_offset = 0;
  int64_t counter_step = 1;
  int64_t study_count(int64_t iteration) const { return counter_offset + counter_step * iteration; }
};

struct Manifest {
  std::string path;              // the manifest file
  std::string model;             // absolute or relative to the working directory
  std::string loss;              // output name, empty: none
  std::map<std::string, InputSpec> inputs;
  int64_t batch_size = 0;        // 0: decided from the model or the command line
  bool shuffle = true;
  TrainSpec train;
  bool monitor_dropout = false;
  bool ftz = false;
  Precision precision = Precision::Fp32;  // [numerics] precision: simulated 16-bit numerics
  SearchConfig search;
  // grist scan: the range of every weight the model trains, where training is known to carry weights far
  // beyond RANUM's default (their initial span widened by 100 %); unset: that default.
  std::optional<std::pair<double, double>> scan_trained_weights;
  std::string target;            // hunt only this hazard (node name), empty: all
  // Initializers that are search variables from the first iteration, beside the data inputs (a gain the study's
  // program searched): sign steps of the inputs' ε, never clipped.
  std::vector<std::string> search_variables;
  // The GRIST objective of the target hazard, and the value it reads, where the automatic choice is not the
  // program's (empty: automatic); both need `target`.
  std::string objective;         // min-abs | min-abs-one-minus | neg-max | max | min | neg-spread
  std::string objective_value;   // a value (tensor) name of the model
  Expectation expect;
};

// Reads a manifest over `base` (the experiments.conf settings); every error names the file and key.
Result<Manifest> read_manifest(const std::string& path, const SearchConfig& base = {});

}  // namespace grist
