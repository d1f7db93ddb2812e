// Subcommands of the `grist` command line. Each adds itself to the app and, when chosen, leaves the
// action to run; main() runs it and turns its result into the exit status.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace grist::cli {

// Exit statuses shared by every subcommand.
constexpr int kExitClean = 0;      // ran, nothing non-finite (or nothing triggered)
constexpr int kExitNonFinite = 1;  // ran, found/triggered a NaN or Inf
constexpr int kExitError = 2;      // bad input or usage: one line on stderr

using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_hunt_command(CLI::App& app, Action& action);
void add_replay_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_scan_command(CLI::App& app, Action& action);
void add_fix_command(CLI::App& app, Action& action);
void add_init_command(CLI::App& app, Action& action);

// Prints "grist: error: MESSAGE" on stderr and returns kExitError.
int fail(const std::string& message);

}  // namespace grist::cli
