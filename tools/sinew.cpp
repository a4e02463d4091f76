// The `sinew` command-line tool.
//
//   sinew --version                 prints "sinew <version>"
//   sinew run FILE [options]        runs a JSON graph (see docs/json.md, docs/cli.md)
//   sinew validate FILE             checks a JSON graph without running it
//   sinew dot FILE [--run]          Graphviz DOT of a graph (annotated after a run)
//   sinew kernels                   the kernels graph files can name
//   sinew devices                   the CPU topology and the OpenCL devices
//   sinew demo                      the image-pipeline demo (make run)
//
// Exit codes: 0 success, 1 runtime failure, 2 invalid input or usage,
// 130 interrupted (SIGINT/SIGTERM: the stream was drained and stopped).
#include "cli.hpp"

#include <sinew/json/graph_file.hpp>
#include <sinew/engine/version.hpp>

#include <cstdio>
#include <string>

namespace sinew_cli {

int report_error(const std::exception& e) {
  std::fprintf(stderr, "sinew: error: %s\n", e.what());
  return dynamic_cast<const sinew::json_error*>(&e) ? exit_usage : exit_failure;
}

}  // namespace sinew_cli

int main(int argc, char** argv) {
  using namespace sinew_cli;
  CLI::App app{"Sinew data-flow skeleton engine: run JSON-defined streaming graphs", "sinew"};
  app.set_version_flag("--version", std::string("sinew ") + sinew::version_string() + " (" + sinew::build_commit() + ")",
                       "Print the version and exit");
  app.require_subcommand(1);

  command_table table;
  add_run(app, table);
  add_validate(app, table);
  add_dot(app, table);
  add_kernels(app, table);
  add_devices(app, table);
  add_demo(app, table);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    return exit_usage;
  }

  if (!table.action) {
    std::fprintf(stderr, "sinew: no subcommand\n");
    return exit_usage;
  }
  try {
    return table.action();
  } catch (const std::exception& e) {
    return report_error(e);
  }
}
