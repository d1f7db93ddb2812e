// `grist bench --fix`: grist fix on each zoo subject, summarised by the repair of the subject's expected hazard
// (the bug the study reported), its four checks, and the three preconditions.
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "config/manifest.h"
#include "data/dataset.h"
#include "fix/fixer.h"
#include "onnx/import.h"
#include "search/benchmark.h"

namespace grist {

namespace {

namespace fs = std::filesystem;

// The fixed hazard that stands for the subject's bug: the expected op (and node, when the manifest names one),
// the first such hazard repaired, else the first such at all.
const HazardFix* expected_hazard(const FixResult& r, const Manifest& m) {
  const HazardFix* first = nullptr;
  for (const HazardFix& h : r.hazards) {
    if (!m.expect.op.empty() && h.site.op_type != m.expect.op) continue;
    if (!m.expect.node.empty() && h.site.node_name != m.expect.node) continue;
    if (!first) first = &h;
    if (h.fixed()) return &h;
  }
  return first;
}

}  // namespace

SubjectFix fix_subject(const std::string& id, const std::string& manifest_path, const BenchOptions& o) {
  SubjectFix f;
  f.ran = true;
  const auto start = std::chrono::steady_clock::now();
  auto manifest = read_manifest(manifest_path);
  if (!manifest) {
    f.error = manifest.message();
    return f;
  }
  auto graph = import_onnx_file(manifest->model);
  if (!graph) {
    f.error = graph.message();
    return f;
  }
  FixOptions fo;
  fo.manifest = *manifest;
  fo.has_manifest = true;
  default_inputs(*graph, fo.manifest);
  fo.batch = manifest->batch_size > 0 ? manifest->batch_size : 1;
  fo.hunt_seconds = o.fix_hunt_seconds;
  fo.manifest.search.seed = o.first_seed;
  auto r = fix_model(*graph, fo);
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r) {
    f.error = r.message();
    return f;
  }
  f.hazards = static_cast<int>(r->hazards.size());
  for (const HazardFix& h : r->hazards) f.fixed += h.fixed();
  const HazardFix* h = expected_hazard(*r, fo.manifest);
  if (!h) {
    f.error = fmt::format("the scan flags no {} hazard to repair", manifest->expect.op);
    return f;
  }
  const HazardFix* by = h;
  if (h->repaired_with)
    for (const HazardFix& other : r->hazards)
      if (other.site.id == h->repaired_with) by = &other;
  f.hazard = h->site.label();
  if (by->repaired) {
    f.repair = std::string(repair_entry(by->match.kind).id);
    f.pattern = by->match.pattern;
    f.constant = takes_constant(by->match.kind) ? by->applied.constant : 0;
  }
  f.a = std::string(check_state_name(by->scan.state));
  f.b = std::string(check_state_name(by->hunt.state));
  f.c = std::string(check_state_name(by->data.state));
  f.d = std::string(check_state_name(by->training.state));
  f.verified = by->fixed();
  const HazardFix& p = h->has_preconditions ? *h : *by;
  if (p.has_preconditions) {
    f.pre_i = p.preconditions.inputs.found;
    f.pre_w = p.preconditions.weights.found;
    f.pre_wi = p.preconditions.both.found;
    f.pre_i_holds_data = f.pre_i && p.preconditions.inputs.holds_data;
    f.pre_wi_holds_data = f.pre_wi && p.preconditions.both.holds_data;
    f.width_i = p.preconditions.inputs.width;
    f.width_w = p.preconditions.weights.width;
    f.width_wi = p.preconditions.both.width;
    f.size_i = p.preconditions.inputs.size;
    f.size_w = p.preconditions.weights.size;
    f.size_wi = p.preconditions.both.size;
    f.max_i = p.preconditions.inputs.maximal;
    f.max_w = p.preconditions.weights.maximal;
    f.max_wi = p.preconditions.both.maximal;
  }
  if (!o.fix_out.empty() && r->changed) {
    std::error_code ec;
    const fs::path dir = fs::path(o.fix_out) / id;
    fs::create_directories(dir, ec);
    for (int n = 1; n < 1000 && !ec; ++n) {
      const fs::path path = dir / (n == 1 ? std::string("model.fixed.onnx") : fmt::format("model.fixed-{}.onnx", n));
      if (fs::exists(path)) continue;
      if (std::FILE* file = std::fopen(path.c_str(), "wbx")) {
        const bool ok = std::fwrite(r->fixed_bytes.data(), 1, r->fixed_bytes.size(), file) == r->fixed_bytes.size();
        if (std::fclose(file) == 0 && ok) f.fixed_model = path.string();
        break;
      }
    }
  }
  return f;
}

}  // namespace grist
