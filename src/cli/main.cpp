#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"

namespace grist::cli {
int fail(const std::string& message) {
  std::fprintf(stderr, "grist: error: %s\n", message.c_str());
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
  app.set_version_flag("--version", "grist 0.1.0");
  Action action;
  add_run_command(app, action);
  add_hunt_command(app, action);
  add_replay_command(app, action);
  add_bench_command(app, action);
  add_scan_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints CLI11's message
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
