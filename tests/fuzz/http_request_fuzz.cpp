// libFuzzer target for the request side of the HTTP server: any byte string,
// cut into pieces as a socket might deliver it, through the RequestParser the
// server uses (same header and body limits) and the Transfer-Encoding rules
// applied before a body is read. It must end in a request, a wait for more
// bytes or an error, never a crash, a hang or unbounded memory.
// Build and run: `make fuzz` (docs/reliability.md).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "http/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::http;
  if (size < 1) return 0;
  // The first byte picks the piece size, so pipelined and split requests
  // are both covered.
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // What the server's read buffer holds: the parser keeps no bytes of its
  // own, a head is taken once it is whole in the buffer.
  std::string buffer;
  Request request;
  auto parser = std::make_unique<RequestParser>(request);
  bool checked = false;
  const auto fresh = [&] {
    parser.reset();
    request = Request();
    parser = std::make_unique<RequestParser>(request);
    parser->header_limit(64 * 1024);
    parser->body_limit(1 << 20);
    checked = false;
  };
  fresh();
  bool want_more = true;
  for (;;) {
    if (want_more) {
      if (input.empty()) return 0;
      const auto chunk = input.substr(0, piece);
      buffer.append(chunk);
      input.remove_prefix(chunk.size());
    }
    if (buffer.empty()) {
      want_more = true;
      continue;
    }
    boost::system::error_code ec;
    const std::size_t used = parser->put(boost::asio::buffer(buffer.data(), buffer.size()), ec);
    buffer.erase(0, used);
    if (ec && ec != boost::beast::http::error::need_more) return 0;  // answered 400 and closed
    want_more = ec == boost::beast::http::error::need_more || used == 0 || buffer.empty();
    if (parser->is_header_done() && !checked) {
      checked = true;
      // The server answers and closes on a framing error.
      if (check_request_framing(request.head.headers, parser->version())) return 0;
    }
    if (parser->is_done()) {
      fresh();  // the next pipelined request
      want_more = buffer.empty();
    }
  }
}
