// Each verb registers its options on the top-level CLI and returns how to run it.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace switchyard::cli {

struct Command {
  CLI::App* app;             // the verb's subcommand, owned by the top-level app
  std::function<int()> run;  // runs the parsed verb; returns the process exit status
};

Command add_serve_command(CLI::App& app);
Command add_sim_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_keys_command(CLI::App& app);
Command add_usage_command(CLI::App& app);
Command add_admin_command(CLI::App& app);
Command add_config_command(CLI::App& app);

}  // namespace switchyard::cli
