// A message body's framing (RFC 9112 §6.3, §7.1), decoded in place once the
// head is parsed: each piece of body handed out is a view of the caller's
// read buffer. An engine's response is relayed from these views; Beast's
// parser copied every chunk into a body buffer, and for a relayed stream,
// whose chunks are an event each, that copy and the parser's work per chunk
// were a sixth of the relay's instructions (docs/performance.md, round 7).
// A request's body is appended from them to the request (parsers.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace switchyard::http {

class BodyDecoder {
 public:
  // A body of `length` bytes (Content-Length; 0 for none).
  static BodyDecoder with_length(std::uint64_t length);
  // Transfer-Encoding: chunked. Chunk extensions and trailer fields are
  // skipped; a size line or the trailer past the limits below is malformed.
  static BodyDecoder chunked();
  // Neither: the body ends when the upstream closes the connection.
  static BodyDecoder until_close();

  static constexpr std::size_t kMaxChunkLine = 4096;
  static constexpr std::size_t kMaxTrailer = 16 * 1024;

  struct Step {
    std::string_view data;  // body bytes, a view of the input; empty if none yet
    std::size_t used = 0;   // input bytes decoded: framing and data
  };
  // Decodes from the start of `in` up to and including the next run of body
  // bytes, and the CRLF that ends its chunk when `in` holds it. Framing cut
  // off at the end of `in` is not used: call again with it and the bytes
  // that follow. Nothing is decoded from empty input, or once done() or
  // error().
  Step next(std::string_view in);

  // The upstream closed the connection: ends a body that runs until then.
  // Returns whether the body is complete.
  bool end_of_input();

  bool done() const { return state_ == State::done; }
  // Whether only the upstream's close ends the body (until_close()).
  bool ends_at_close() const { return state_ == State::until_close; }
  // Why the framing is malformed; null while it is not.
  const char* error() const { return error_; }

 private:
  enum class State { data, chunk_size, chunk_end, trailer, until_close, done };
  explicit BodyDecoder(State state, std::uint64_t left = 0) : state_(state), left_(left) {}
  void start_chunk(std::uint64_t size);
  bool take_plain_chunk_size(std::string_view in, std::size_t& at);
  const char* take_chunk_size(std::string_view line);

  State state_;
  std::uint64_t left_;  // bytes of the body (or of the current chunk) still to come
  bool chunked_ = false;
  std::size_t trailer_bytes_ = 0;
  const char* error_ = nullptr;
};

}  // namespace switchyard::http
