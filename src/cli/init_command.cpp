// `grist init MODEL.onnx [--out FILE]`: write a commented manifest skeleton for the model (never over an
// existing file), then read it back and build its batches, so what it wrote is known to run.
#include <filesystem>
#include <iterator>
#include <memory>

#include "cli/commands.h"
#include "config/manifest.h"
#include "config/manifest_skeleton.h"
#include "data/dataset.h"
#include "data/file_write.h"
#include "onnx/import.h"

namespace grist::cli {

namespace {

namespace fs = std::filesystem;

struct InitOptions {
  std::string model;
  std::string out;  // default: the model's path with .toml for .onnx
};

int init_main(const InitOptions& o) {
  auto graph = import_onnx_file(o.model);
  if (!graph) return fail(graph.message());
  const std::string out = o.out.empty() ? fs::path(o.model).replace_extension(".toml").string() : o.out;
  std::error_code ec;
  if (fs::symlink_status(out, ec).type() != fs::file_type::not_found)
    return fail(fmt::format("{}: already exists; refusing to overwrite it", out));
  // The manifest names its model relative to its own folder.
  const fs::path out_dir = fs::absolute(out).parent_path();
  fs::path model_path = fs::absolute(o.model).lexically_normal();
  // Relative where the two share a folder below the root (a project moved as a whole keeps working).
  const fs::path relative = model_path.lexically_relative(out_dir);
  const bool share = std::distance(out_dir.begin(), out_dir.end()) > 1 &&
                     *std::next(model_path.begin()) == *std::next(out_dir.begin());
  if (!relative.empty() && share) model_path = relative;
  SkeletonOptions so;
  so.model_path = model_path.string();
  so.model_label = fs::path(o.model).filename().string();
  const std::string text = manifest_skeleton(*graph, so);
  if (auto st = write_new_file(out, text); !st) return fail(st.message());

  auto m = read_manifest(out);
  if (!m) return fail(fmt::format("wrote {}, but it does not read back: {}", out, m.message()));
  const int64_t batch = m->batch_size > 0 ? m->batch_size : graph->fixed_batch_size().value_or(1);
  auto data = Dataset::create(*m, *graph, batch, 0);
  if (!data) return fail(fmt::format("wrote {}, but its inputs need more than grist could guess: {}", out,
                                     data.message()));
  std::string roles;
  for (const auto& name : data->input_names()) {
    const InputRole r = data->spec(name).role;
    roles += fmt::format("{}{} ({})", roles.empty() ? "" : ", ", name,
                         r == InputRole::Data ? "data" : r == InputRole::Label ? "label" : "fixed");
  }
  std::printf("wrote %s: inputs %s; loss %s\ncheck the lines marked \"guess\", then: grist hunt %s\n", out.c_str(),
              roles.empty() ? "none" : roles.c_str(), m->loss.empty() ? "none" : m->loss.c_str(), out.c_str());
  return kExitClean;
}

}  // namespace

void add_init_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "init",
      "Write a commented manifest skeleton for a model: its inputs' roles and sources, its loss and weights,\n"
      "guessed from names, types and shapes, each guess said in a comment. Never replaces an existing file.");
  cmd->add_option("model", o->model, "the ONNX model")->required();
  cmd->add_option("--out,-o", o->out, "the manifest to write (default: the model's path with .toml)");
  cmd->callback([o, &action] { action = [o] { return init_main(*o); }; });
}

}  // namespace grist::cli
