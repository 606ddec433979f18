// libFuzzer target for the SSE splitter: any upstream byte stream, cut into
// pieces at fuzzer-chosen sizes. Checks what a relay relies on: events come
// out whole (ending in a blank line) and in order, nothing is lost or made up
// (events + pending == input), no event is longer than the limit, and the
// work stays linear in the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using switchyard::http::SseSplitter;
  if (size < 2) return 0;
  const std::size_t piece = 1 + data[0] % 32;
  const std::size_t max_event = 1 + data[1] * 4;
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  SseSplitter splitter(max_event);
  std::string out;
  for (std::size_t at = 0; at < input.size(); at += piece) {
    // A copy, gone after the call: events must not point into it later.
    const std::string bytes(input.substr(at, piece));
    splitter.split(bytes, [&](std::string_view e) {
      if (e.size() > max_event) std::abort();
      if (!(e.ends_with("\n\n") || e.ends_with("\n\r\n"))) std::abort();
      out += e;
    });
  }
  if (!splitter.overflowed() && out + std::string(splitter.pending()) != input) std::abort();
  if (splitter.overflowed() && !input.starts_with(out)) std::abort();
  if (splitter.bytes_scanned() > 2 * input.size() + 2) std::abort();
  return 0;
}
