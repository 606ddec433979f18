#include "gateway/session_id.h"

#include <fmt/compile.h>
#include <fmt/format.h>

namespace switchyard::gateway {

namespace {

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return (h ^ 0xff) * 1099511628211ULL;  // a separator: ("ab","c") differs from ("a","bc")
}

}  // namespace

Result<std::string> session_id(const http::Headers& headers, std::string_view key_name,
                               std::string_view model, std::uint64_t conversation) {
  if (auto given = headers.find("x-session-id")) {
    bool sane = !given->empty() && given->size() <= 128;
    for (unsigned char c : *given) sane &= c >= 0x21 && c <= 0x7e;
    if (!sane)
      return Error{"the header 'X-Session-Id' must be 1 to 128 printable ASCII characters"};
    return std::string(*given);
  }
  if (conversation == 0) return std::string();
  std::uint64_t h = 14695981039346656037ULL;
  h = fnv1a(h, key_name);
  h = fnv1a(h, model);
  h = fnv1a(h, std::string_view(reinterpret_cast<const char*>(&conversation), sizeof conversation));
  return fmt::format(FMT_COMPILE("c-{:016x}"), h);
}

}  // namespace switchyard::gateway
