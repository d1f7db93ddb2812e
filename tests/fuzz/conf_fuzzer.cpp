// libFuzzer target for GRIST's experiments.conf (INI): any text must apply to the search settings or be
// refused with one line naming the file and line, never crash or trip a sanitizer; what it sets must be a
// usable configuration (a positive step and time limit, rates in [0, 1]).
// Build: cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGRIST_FUZZ=ON
//        ninja -C build-fuzz conf_fuzzer   (make fuzz-smoke builds and runs every fuzzer)
// Run:   build-fuzz/conf_fuzzer -max_total_time=60 tests/fuzz/seeds/conf
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "util/ini.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto ini = grist::parse_ini(text, "fuzz.conf");
  if (!ini) {
    if (ini.message().rfind("fuzz.conf:", 0) != 0 || ini.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  grist::SearchConfig c;
  grist::Status st = grist::apply_experiments_conf(*ini, "fuzz.conf", c);
  if (!st) {
    if (st.message().rfind("fuzz.conf", 0) != 0 || st.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (!(c.change > 0) || !(c.time_limit > 0) || !(c.drop_rate >= 0 && c.drop_rate <= 1) ||
      !(c.decay_rate >= 0 && c.decay_rate <= 1) || c.decay_steps < 1 || !std::isfinite(c.epsilon_at(123456)))
    __builtin_trap();
  return 0;
}
