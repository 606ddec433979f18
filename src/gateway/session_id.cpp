#include "gateway/session_id.h"

#include "common/hash.h"
#include "common/hex.h"

namespace switchyard::gateway {

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
  // Each piece with its length: ("ab", "c") differs from ("a", "bc").
  std::uint64_t h = hash::piece(hash::kSeed, key_name);
  h = hash::piece(h, model);
  h = hash::mix(h ^ conversation);
  std::string id = "c-";
  id.resize(18);
  write_hex64(h, id.data() + 2);
  return id;
}

}  // namespace switchyard::gateway
