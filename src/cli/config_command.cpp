// `switchyard config schema`: the JSON Schema of fleet.yaml, for editors
// (yaml-language-server) and CI checks (README, "The fleet config").
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.h"
#include "common/json_text.h"
#include "config/config_schema.h"

namespace switchyard::cli {

Command add_config_command(CLI::App& app) {
  auto* sub = app.add_subcommand("config", "Describe fleet.yaml");
  sub->require_subcommand(1);
  auto* schema =
      sub->add_subcommand("schema",
                          "Print the JSON Schema of fleet.yaml (save it and name it in the file's "
                          "'# yaml-language-server: $schema=...' line)");
  return {sub, [schema] {
            if (!schema->parsed()) return 2;
            std::cout << to_json_text(config::fleet_config_schema()) << "\n";
            return 0;
          }};
}

}  // namespace switchyard::cli
