#pragma once
// Pieces shared by the `sinew` subcommands (tools/*_command.cpp).
//
// Adding a subcommand: write `void add_<name>(CLI::App&, command_table&)` in
// tools/<name>_command.cpp, declare it here and call it from main().
#include <CLI/CLI.hpp>

#include <exception>
#include <functional>
#include <string>

namespace sinew_cli {

/// Exit codes of every subcommand.
constexpr int exit_ok = 0;
constexpr int exit_failure = 1;      ///< the run failed (a node's error, a verify mismatch)
constexpr int exit_usage = 2;        ///< invalid input or usage (bad JSON, bad option)
constexpr int exit_interrupted = 130;  ///< SIGINT/SIGTERM: drained and stopped

/// The action of the subcommand the user picked (set by CLI11 callbacks).
struct command_table {
  std::function<int()> action;
};

/// Prints `e` as "sinew: error: ..." and returns its exit code: 2 for invalid
/// input (sinew::json_error), 1 otherwise.
int report_error(const std::exception& e);

void add_demo(CLI::App& app, command_table& t);
void add_run(CLI::App& app, command_table& t);
void add_validate(CLI::App& app, command_table& t);
void add_dot(CLI::App& app, command_table& t);
void add_kernels(CLI::App& app, command_table& t);
void add_devices(CLI::App& app, command_table& t);

}  // namespace sinew_cli
