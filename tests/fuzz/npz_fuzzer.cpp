// libFuzzer target for the .npz reader (a zip of .npy entries, stored or deflated): any bytes must give
// named tensors whose sizes match their shapes or an error that starts with the path, never crash, hang,
// over-allocate or trip a sanitizer.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz npz_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/npz_fuzzer -max_total_time=60 tests/data/fixtures tests/models
#include <cstddef>
#include <cstdint>

#include "data/npz.h"
#include "fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = grist::fuzz::write_input(data, size, ".npz");
  auto arrays = grist::read_npz(path);
  if (!arrays) {
    grist::fuzz::check_error(arrays.message(), path);
    return 0;
  }
  for (const auto& [name, t] : *arrays)
    if (name.empty() || t.nbytes() != static_cast<size_t>(t.numel()) * grist::dtype_size(t.dtype())) __builtin_trap();
  return 0;
}
