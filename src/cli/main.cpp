#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "util/one_line.h"
#include "util/version.h"

namespace grist::cli {
int fail(const std::string& message) {
  std::fprintf(stderr, "grist: error: %s\n", grist::one_line(message).c_str());
  return kExitError;
}
}  // namespace grist::cli

int main(int argc, char** argv) {
  using namespace grist::cli;
  CLI::App app{
      "grist finds inputs that make a deep-learning model (ONNX) produce NaN or Inf, names the operation that\n"
      "produced the first bad value, and shows how to fix it.\n\n"
      "Exit status: 0 nothing non-finite, 1 a NaN/Inf was found, 2 error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "grist " + std::string(grist::kGristVersion));
  Action action;
  add_run_command(app, action);
  add_hunt_command(app, action);
  add_replay_command(app, action);
  add_bench_command(app, action);
  add_scan_command(app, action);
  add_fix_command(app, action);
  add_init_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (argc == 1) {  // bare `grist`: what it can do
      std::fputs(app.help().c_str(), stderr);
      return fail(fmt::format("a subcommand is required: {}", fmt::join(names, ", ")));
    }
    // A misspelt command reads as "a subcommand is required" in CLI11's words: name it and the commands.
    if (argv[1][0] != '-' && app.get_subcommands().empty())
      return fail(fmt::format("unknown command '{}' (the commands: {}; grist --help says what each does)", argv[1],
                              fmt::join(names, ", ")));
    fail(e.what());
    std::fprintf(stderr, "run with --help for the options\n");
    return kExitError;
  }
  int status = kExitError;
  try {
    status = action ? action() : kExitError;
  } catch (const std::bad_alloc&) {
    status = fail("out of memory");
  } catch (const std::exception& e) {
    status = fail(std::string("internal error: ") + e.what());
  }
  // A report that never reached its reader (a full disk, /dev/full, a closed pipe) is no result.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "grist: error: cannot write the output: %s\n", std::strerror(errno));
    return kExitError;
  }
  return status;
}
