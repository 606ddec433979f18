#include "gateway/session_id.h"

#include "common/hash.h"

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
  // "c-" and the hash in 16 hex digits, written here: fmt's machinery for
  // one number was half of this function's cost.
  std::string id(18, 'c');
  id[1] = '-';
  for (std::size_t i = id.size() - 1; i >= 2; --i, h >>= 4) id[i] = "0123456789abcdef"[h & 15];
  return id;
}

}  // namespace switchyard::gateway
