// http:// URLs as instances and tools name them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace switchyard::http {

struct Url {
  std::string host;
  std::uint16_t port = 80;
  std::string path;  // "" or "/prefix", never ending in '/'

  // "host:port", as a Host header and in messages.
  std::string authority() const;
};

// Accepts "http://host[:port][/path]". The error names the URL and what is wrong.
Result<Url> parse_url(std::string_view text);

}  // namespace switchyard::http
