// `switchyard serve --check`: what a loaded config still needs from the box
// before anything starts, checked without starting anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/fleet_config.h"

namespace switchyard::fleet {

// The words of a command from its program on, before substitution: split as
// the supervisor splits a plain command (split_plain_command), or, for a shell
// command, on blanks after any NAME=value assignments and `exec` (quotes are
// not interpreted, so a quoted word with a blank comes out in pieces).
std::vector<std::string> command_words(std::string_view command);

// One line per instance whose command's program cannot be run: not found on
// PATH (searched as the supervisor does), or not an executable file. A shell
// command (run under /bin/sh -c) is checked as the shell runs it: each simple
// command's program after NAME=value assignments and `exec`, the shell's
// builtins (`ulimit -n 4096; exec llama-server ...`) skipped; a word the
// shell still has to expand is not checked.
// `self_path` is the value of ${SWITCHYARD}.
std::vector<std::string> missing_executables(const config::FleetConfig& config,
                                             std::string_view self_path);

}  // namespace switchyard::fleet
