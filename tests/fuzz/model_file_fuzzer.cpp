// libFuzzer target for the model-file walk (src/onnx/model_file.h) against protobuf's own parse: any file must be
// refused by both with the same message, or imported by both with the same initializers, bit for bit. The walk
// reads every raw_data of 1 byte or more from the file, so each byte string takes the walk's every path.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz model_file_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/model_file_fuzzer -max_total_time=60 tests/models
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_file.h"
#include "onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = grist::fuzz::write_input(data, size, ".onnx");
  grist::ImportOptions protobuf, walk;
  protobuf.in_file_min_bytes = 0;
  walk.in_file_min_bytes = 1;
  auto want = grist::import_onnx_file(path, protobuf);
  auto got = grist::import_onnx_file(path, walk);
  if (want.is_ok() != got.is_ok()) __builtin_trap();
  if (!want) {
    // As import_fuzzer checks it: a name in a message may hold a newline (the importer prints names as given).
    if (want.message().rfind(path + ": ", 0) != 0) __builtin_trap();
    if (want.message() != got.message()) __builtin_trap();
    return 0;
  }
  if (want->initializers != got->initializers || want->nodes.size() != got->nodes.size()) __builtin_trap();
  for (grist::ValueId id : want->initializers) {
    const grist::Tensor& a = *want->value(id).initial;
    const grist::Tensor& b = *got->value(id).initial;
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) __builtin_trap();
    if (a.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0) __builtin_trap();
  }
  return 0;
}
