// libFuzzer target for the chunked body decoder: any upstream byte stream,
// read in pieces of a fuzzer-chosen size as a connection reads it. Checks
// what the relay relies on: every piece of body is a view of the bytes given,
// the decoder never uses more than it was given, and however the bytes are
// cut it decodes the same body, ends at the same place and fails the same way.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/body_decoder.h"

namespace {

struct Outcome {
  std::string body;
  bool done = false;
  std::string error;
};

Outcome decode(std::string_view wire, std::size_t piece) {
  using switchyard::http::BodyDecoder;
  BodyDecoder decoder = BodyDecoder::chunked();
  Outcome out;
  std::string buffer;
  for (std::size_t at = 0; at < wire.size() && !decoder.done() && !decoder.error(); at += piece) {
    buffer.append(wire.substr(at, piece));
    for (;;) {
      const auto step = decoder.next(buffer);
      if (step.used > buffer.size()) std::abort();
      if (!step.data.empty() && (step.data.data() < buffer.data() ||
                                 step.data.data() + step.data.size() > buffer.data() + step.used))
        std::abort();
      out.body.append(step.data);
      buffer.erase(0, step.used);
      if (step.data.empty()) break;
    }
  }
  out.done = decoder.done();
  out.error = decoder.error() ? decoder.error() : "";
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome cut = decode(wire, piece);
  const Outcome whole = decode(wire, wire.size() + 1);
  if (cut.body != whole.body || cut.done != whole.done || cut.error != whole.error) std::abort();
  if (cut.body.size() > wire.size()) std::abort();
  return 0;
}
