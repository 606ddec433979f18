// libFuzzer target, differential: any byte string as a request head and as
// a response head, through HeadParser (by the parsers the server and the
// upstream calls use) and through Beast 1.81's parser, which it replaced.
// Both must accept it, with the same method, target, status, fields and
// framing, or both refuse it; the one difference on purpose (a folded line,
// which HeadParser refuses) is left out. Build and run: `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "head_oracle.h"

namespace {

using namespace switchyard::http::head_oracle;

// Whether a line of the head starts with white space: a fold to Beast.
bool has_fold(std::string_view wire) {
  const auto end = wire.find("\r\n\r\n");
  const auto head = wire.substr(0, end == std::string_view::npos ? wire.size() : end + 2);
  return head.find("\r\n ") != std::string_view::npos ||
         head.find("\r\n\t") != std::string_view::npos;
}

template <class Ours, class Theirs>
void compare(std::string_view wire, Ours ours, Theirs theirs) {
  const auto a = ours(wire);
  const auto b = theirs(wire);
  if (a == b || (!a && has_fold(wire))) return;
  std::cerr << "HeadParser: " << a << "\nBeast:      " << b << "\n";
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  compare(wire, ours_request, beasts<true>);
  compare(wire, ours_response, beasts<false>);
  return 0;
}
