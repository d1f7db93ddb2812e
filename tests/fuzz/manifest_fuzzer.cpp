// libFuzzer target for manifests (TOML): any text must read into a manifest or be refused with one line
// naming the file, never crash or trip a sanitizer. A manifest that reads and whose data are inline values
// or random draws is then turned into batches for a small model, so the dataset's shaping, one-hot, scale
// and type conversions see what the fuzzer invents.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz manifest_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/manifest_fuzzer -max_total_time=60 CORPUS_OF_TOML_FILES
#include <cstddef>
#include <cstdint>

#include "config/manifest.h"
#include "data/dataset.h"
#include "fuzz/fuzz_file.h"

namespace {

// x [batch, 2] float data, y [batch] int64 labels, s [3] a fixed float without a batch dimension.
grist::Graph small_model() {
  grist::Graph g;
  auto input = [&](const char* name, grist::DType dtype, std::vector<grist::Dim> dims) {
    grist::Value v;
    v.name = name;
    v.kind = grist::ValueKind::Input;
    v.dtype = dtype;
    v.shape = dims;
    g.inputs.push_back(g.add_value(std::move(v)));
  };
  input("x", grist::DType::Float32, {grist::Dim{-1, "batch"}, grist::Dim{2, {}}});
  input("y", grist::DType::Int64, {grist::Dim{-1, "batch"}});
  input("s", grist::DType::Float32, {grist::Dim{3, {}}});
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = grist::fuzz::write_input(data, size, ".toml");
  auto m = grist::read_manifest(path);
  if (!m) {
    grist::fuzz::check_error(m.message(), path);
    return 0;
  }
  // Inline data only (files and Fashion-MNIST would make every input a slow read), and bounded sizes: a
  // one_hot of a billion classes is a real allocation, not a bug.
  for (const auto& [name, in] : m->inputs)
    if (!(in.source == grist::InputSource::Values || in.sampled()) || in.one_hot > 1024) return 0;
  static const grist::Graph g = small_model();
  const int64_t batch = m->batch_size > 0 && m->batch_size <= 64 ? m->batch_size : 2;
  auto d = grist::Dataset::create(*m, g, batch, m->search.seed);
  if (!d) return 0;
  grist::Batch b;
  for (int i = 0; i < 3; ++i)
    if (!d->next_batch(b) || !d->redraw(b)) break;
  return 0;
}
