#include "support/zoo_hunt.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "onnx/import.h"

namespace grist::testing {

HazardOutcome hunt_zoo_inputs_only(const std::string& id, int64_t max_iterations,
                                   const std::function<void(Manifest&)>& adjust) {
  const std::string dir = std::string(GRIST_SOURCE_DIR) + "/zoo/" + id + "/";
  auto m = read_manifest(dir + "manifest.toml");
  EXPECT_TRUE(m.is_ok()) << m.message();
  EXPECT_TRUE(std::filesystem::exists(m->model)) << m->model << " missing: run /usr/bin/python3 zoo/zoo_export.py";
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  if (!m || !g) return {};
  HuntOptions h;
  h.manifest = *m;
  h.manifest.search.seed = 1;
  h.manifest.search.weight_change = 0;   // the inputs alone, as GRIST (--reach inputs): no weight steps
  h.manifest.search.training_share = 0;  // and no crafted training batches
  h.manifest.search.max_iterations = max_iterations;
  h.manifest.search.time_limit = 10;  // minutes, a backstop
  if (adjust) adjust(h.manifest);
  h.batch_size = m->batch_size;
  auto r = hunt(*g, h);
  EXPECT_TRUE(r.is_ok()) << r.message();
  if (!r || r->outcomes.empty()) return {};
  return r->outcomes.front();
}

}  // namespace grist::testing
