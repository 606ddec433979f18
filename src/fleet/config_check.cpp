#include "fleet/config_check.h"

#include <unistd.h>

#include <sys/stat.h>

#include <fmt/format.h>

#include "fleet/child_process.h"

namespace switchyard::fleet {

std::vector<std::string> command_words(std::string_view command) {
  if (auto words = split_plain_command(command, {"${PORT}", "${GPUS}", "${SWITCHYARD}"}))
    return *words;
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < command.size()) {
    const auto start = command.find_first_not_of(" \t\n", i);
    if (start == std::string_view::npos) break;
    const auto end = std::min(command.find_first_of(" \t\n", start), command.size());
    const auto word = command.substr(start, end - start);
    i = end;
    const auto eq = word.find('=');
    const bool assignment = eq != std::string_view::npos && eq > 0 &&
                            word.substr(0, eq).find_first_of("$'\"") == std::string_view::npos;
    if (words.empty() && (assignment || word == "exec")) continue;
    words.emplace_back(word);
  }
  return words;
}

namespace {

bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string> missing_executables(const FleetConfig& config,
                                             std::string_view self_path) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < config.instances.size(); ++i) {
    const auto& inst = config.instances[i];
    if (!inst.command) continue;
    const auto words = command_words(*inst.command);
    std::string word = words.empty() ? std::string() : words.front();
    if (word.starts_with("${SWITCHYARD}"))
      word = std::string(self_path) + word.substr(std::string_view("${SWITCHYARD}").size());
    // Left to the shell to expand: nothing to look up before it runs.
    if (word.empty() || word.find_first_of("$'\"`\\*?[~") != std::string::npos) continue;
    auto program = find_program(word);
    if (!program) {
      problems.push_back(fmt::format("instances[{}] ({}): command: '{}' is not found on PATH", i,
                                     inst.name, word));
    } else if (!executable_file(*program)) {
      problems.push_back(fmt::format("instances[{}] ({}): command: '{}' is not an executable file",
                                     i, inst.name, *program));
    }
  }
  return problems;
}

}  // namespace switchyard::fleet
