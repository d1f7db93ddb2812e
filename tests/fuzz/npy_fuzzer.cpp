// libFuzzer target for the .npy reader: any byte string must parse into a consistent tensor or be refused
// with a one-line error that names the source, never crash, hang, over-allocate or trip a sanitizer.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz npy_fuzzer
// Run:   build-fuzz/npy_fuzzer -max_total_time=60 tests/data/fixtures
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "data/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto t = grist::parse_npy(bytes, "fuzz.npy");
  if (t && t->nbytes() != static_cast<size_t>(t->numel()) * grist::dtype_size(t->dtype())) std::abort();
  if (!t && (t.message().rfind("fuzz.npy: ", 0) != 0 || t.message().find('\n') != std::string::npos)) std::abort();
  return 0;
}
