// switchyard: one binary, one verb per job. This file only dispatches.
#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "switchyard_version.h"

int main(int argc, char** argv) {
  // Writes to a closed pipe or socket are handled as errors, not fatal.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{"switchyard: one dependable LLM service over many GPUs", "switchyard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "switchyard " SWITCHYARD_VERSION);

  using namespace switchyard::cli;
  const Command commands[] = {

      add_serve_command(app),  add_sim_command(app),   add_plan_command(app),
      add_doctor_command(app), add_bench_command(app), add_keys_command(app),
      add_usage_command(app),  add_admin_command(app), add_config_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // bad input, as every verb reports it
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 2;
}
