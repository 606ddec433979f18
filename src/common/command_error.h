// A command's error: one line on stderr naming the command
// ("switchyard keys: <message>"), and the exit status it returns.
#pragma once

#include <iostream>
#include <string_view>

namespace switchyard {

inline int command_error(std::string_view command, std::string_view message, int status = 2) {
  std::cerr << "switchyard " << command << ": " << message << "\n";
  return status;
}

}  // namespace switchyard
