#include "fleet/config_check.h"

#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <iterator>

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

// Words after which a simple command's own first word follows.
bool leads_command(std::string_view word) {
  static constexpr std::string_view kLeads[] = {"exec", "command", "time", "!",     "{",     "if",
                                                "then", "else",    "elif", "while", "until", "do"};
  return std::find(std::begin(kLeads), std::end(kLeads), word) != std::end(kLeads);
}

// Words the shell runs itself (its builtins, POSIX's and dash's, and the
// reserved words that end a compound command): never looked up on PATH.
bool shell_own(std::string_view word) {
  static constexpr std::string_view kOwn[] = {
      "}",        "[",       ":",       ".",     "alias", "bg",     "break",  "cd",   "continue",
      "done",     "echo",    "esac",    "eval",  "exit",  "export", "false",  "fc",   "fg",
      "fi",       "getopts", "hash",    "jobs",  "kill",  "local",  "printf", "pwd",  "read",
      "readonly", "return",  "set",     "shift", "test",  "times",  "trap",   "true", "type",
      "ulimit",   "umask",   "unalias", "unset", "wait"};
  return std::find(std::begin(kOwn), std::end(kOwn), word) != std::end(kOwn);
}

// The programs a shell command runs, as the shell finds them: the first
// word of each simple command (split at ; & | ( ) and newlines, a
// redirection's & excepted) after NAME=value assignments and words such as
// `exec` or `then`, unless the shell runs it itself (`ulimit -n 4096; exec
// llama-server ...` runs llama-server). A loop's or case's own words are
// not commands: such a piece is left to the shell.
std::vector<std::string> shell_programs(std::string_view command) {
  std::vector<std::string> programs;
  const auto take = [&](std::string_view piece) {
    std::size_t i = 0;
    while (i < piece.size()) {
      const auto start = piece.find_first_not_of(" \t", i);
      if (start == std::string_view::npos) return;
      const auto end = std::min(piece.find_first_of(" \t", start), piece.size());
      const auto word = piece.substr(start, end - start);
      i = end;
      if (word == "for" || word == "case") return;
      const auto eq = word.find('=');
      const bool assignment = eq != std::string_view::npos && eq > 0 &&
                              word.substr(0, eq).find_first_of("$'\"") == std::string_view::npos;
      if (assignment || leads_command(word)) continue;
      if (!shell_own(word)) programs.emplace_back(word);
      return;
    }
  };
  std::size_t from = 0;
  for (std::size_t i = 0; i <= command.size(); ++i) {
    const char c = i < command.size() ? command[i] : ';';
    const bool redirection = c == '&' && i > 0 && (command[i - 1] == '>' || command[i - 1] == '<');
    if ((c == ';' || c == '\n' || c == '|' || c == '&' || c == '(' || c == ')') && !redirection) {
      take(command.substr(from, i - from));
      from = i + 1;
    }
  }
  return programs;
}

// The programs a command runs, before substitution: a plain command's first
// word (run directly), else what the shell runs.
std::vector<std::string> programs_of(std::string_view command) {
  if (auto words = split_plain_command(command, {"${PORT}", "${GPUS}", "${SWITCHYARD}"}))
    return {words->front()};
  return shell_programs(command);
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string> missing_executables(const config::FleetConfig& config,
                                             std::string_view self_path) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < config.instances.size(); ++i) {
    const auto& inst = config.instances[i];
    if (!inst.command) continue;
    for (std::string word : programs_of(*inst.command)) {
      if (word.starts_with("${SWITCHYARD}"))
        word = std::string(self_path) + word.substr(std::string_view("${SWITCHYARD}").size());
      // Left to the shell to expand: nothing to look up before it runs.
      if (word.find_first_of("$'\"`\\*?[~<>") != std::string::npos) continue;
      auto program = find_program(word);
      if (!program) {
        problems.push_back(fmt::format("instances[{}] ({}): command: '{}' is not found on PATH", i,
                                       inst.name, word));
      } else if (!executable_file(*program)) {
        problems.push_back(fmt::format(
            "instances[{}] ({}): command: '{}' is not an executable file", i, inst.name, *program));
      }
    }
  }
  return problems;
}

}  // namespace switchyard::fleet
