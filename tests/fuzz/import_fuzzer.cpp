// libFuzzer target for the importer and the engine behind it: any byte string must import cleanly or be
// refused with an error, never crash, hang or trip a sanitizer. A model that imports and that grist can run
// is run forward on seeded random inputs and backward from its first float output, so the kernels and
// gradients of every op the fuzzer reaches see the shapes and attributes it invents. A model from memory has no
// folder, so a tensor claiming external data is refused (an error starting "fuzz.onnx: "): no file is opened.
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz import_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/import_fuzzer -max_total_time=60 tests/models examples
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "data/random_input.h"
#include "engine/executor.h"
#include "onnx/import.h"

namespace {

// Runs only models whose every value has a shape that shape inference knew, none over 2^16 elements: the
// engine allocates what a model asks for, so unbounded shapes would report the fuzzer's memory limit rather
// than a bug. A symbolic dimension counts as 1 (the random inputs bind them so) only when it is one of the
// graph inputs'; any other is a size inference could not work out.
bool small_enough(const grist::Graph& g) {
  constexpr int64_t kMaxElements = int64_t{1} << 16;
  std::set<std::string> input_symbols;
  for (grist::ValueId id : g.inputs)
    if (g.value(id).shape)
      for (const grist::Dim& d : *g.value(id).shape)
        if (!d.known() && !d.symbol.empty()) input_symbols.insert(d.symbol);
  for (const grist::Value& v : g.values) {
    if (!v.shape) return false;
    int64_t n = 1;
    for (const grist::Dim& d : *v.shape) {
      if (!d.known() && !input_symbols.count(d.symbol)) return false;
      const int64_t size = d.known() ? d.size : 1;
      if (size < 0 || (size > 0 && n > kMaxElements / size)) return false;
      n *= size;
    }
    if (n > kMaxElements) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto graph = grist::import_onnx_bytes(bytes, "fuzz.onnx");
  if (!graph) {
    if (graph.message().rfind("fuzz.onnx: ", 0) != 0) __builtin_trap();
    return 0;
  }
  auto ex = grist::Executor::create(*graph);
  if (!ex || !small_enough(*graph)) return 0;
  grist::Rng rng(1);
  grist::RandomInputSpec spec;
  spec.lo = -2;
  spec.hi = 2;
  spec.int_lo = 0;
  spec.int_hi = 3;  // small integers: valid indices and axes more often
  for (grist::ValueId id : graph->inputs) {
    auto t = grist::random_input(graph->value(id), spec, rng);
    if (!t || !ex->set_input(id, *t)) return 0;
  }
  if (!ex->forward()) return 0;
  for (grist::ValueId out : graph->outputs) {
    if (!grist::is_float(ex->value(out).dtype())) continue;
    (void)ex->backward(out);  // ops without a gradient refuse: an error, not a crash
    break;
  }
  return 0;
}
