// libFuzzer target for the importer: any byte string must import cleanly or be refused with an error,
// never crash, hang or trip a sanitizer. Models that import are also planned by the executor.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON && ninja -C build-fuzz import_fuzzer
// Run:   build-fuzz/import_fuzzer -max_total_time=60 tests/models examples
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/executor.h"
#include "onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto graph = grist::import_onnx_bytes(bytes, "fuzz.onnx");
  if (graph) {
    auto ex = grist::Executor::create(*graph);
    (void)ex;
  }
  return 0;
}
