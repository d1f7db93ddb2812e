// libFuzzer target for the IDX (MNIST) reader, plain or gzip-compressed: any bytes must give a tensor whose
// size matches its shape or an error that starts with the path, never crash, hang or trip a sanitizer.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz idx_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/idx_fuzzer -max_total_time=60 tests/fuzz/seeds/idx
#include <cstddef>
#include <cstdint>

#include "data/idx.h"
#include "fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = grist::fuzz::write_input(data, size, "-idx");
  auto t = grist::read_idx(path);
  if (!t) {
    grist::fuzz::check_error(t.message(), path);
    return 0;
  }
  if (t->nbytes() != static_cast<size_t>(t->numel()) * grist::dtype_size(t->dtype())) __builtin_trap();
  return 0;
}
