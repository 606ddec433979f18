#include "http/body_decoder.h"

#include <algorithm>

#include "http/message.h"

namespace switchyard::http {

namespace {

// The hexadecimal number `s` starts with.
struct HexPrefix {
  std::size_t digits = 0;
  std::uint64_t value = 0;
  bool overflow = false;  // past 2^64 - 1: `value` means nothing
};
HexPrefix hex_prefix(std::string_view s) {
  HexPrefix hex;
  for (int v; hex.digits < s.size() && (v = hex_value(s[hex.digits])) >= 0; ++hex.digits) {
    if (hex.value > (UINT64_MAX >> 4)) hex.overflow = true;
    hex.value = hex.value << 4 | static_cast<unsigned>(v);
  }
  return hex;
}

// Whether `in` holds a CRLF at `at`.
bool crlf_at(std::string_view in, std::size_t at) {
  return in.size() - at >= 2 && in[at] == '\r' && in[at + 1] == '\n';
}

}  // namespace

BodyDecoder BodyDecoder::with_length(std::uint64_t length) {
  return BodyDecoder(length > 0 ? State::data : State::done, length);
}

BodyDecoder BodyDecoder::chunked() {
  BodyDecoder decoder(State::chunk_size);
  decoder.chunked_ = true;
  return decoder;
}

BodyDecoder BodyDecoder::until_close() {
  return BodyDecoder(State::until_close);
}

void BodyDecoder::start_chunk(std::uint64_t size) {
  left_ = size;
  state_ = size > 0 ? State::data : State::trailer;
}

// chunk-size [ chunk-ext ], the line's CRLF removed. Returns why it is
// malformed, or null.
const char* BodyDecoder::take_chunk_size(std::string_view line) {
  const HexPrefix hex = hex_prefix(line);
  if (hex.digits == 0) return "a chunk size is not a hexadecimal number";
  if (hex.overflow) return "a chunk size is too large";
  const std::string_view rest = line.substr(hex.digits);
  const auto ext = rest.find_first_not_of(" \t");
  if (ext != std::string_view::npos && rest[ext] != ';')
    return "a chunk size is followed by something other than an extension";
  start_chunk(hex.value);
  return nullptr;
}

// The usual size line, "<hex>\r\n" whole in `in`, read in one pass; anything
// else is left to the general path.
bool BodyDecoder::take_plain_chunk_size(std::string_view in, std::size_t& at) {
  const HexPrefix hex = hex_prefix(in.substr(at));
  const std::size_t end = at + hex.digits;
  if (hex.digits == 0 || hex.overflow || !crlf_at(in, end)) return false;
  at = end + 2;
  start_chunk(hex.value);
  return true;
}

BodyDecoder::Step BodyDecoder::next(std::string_view in) {
  std::size_t at = 0;
  // Nothing past the malformed part is used.
  const auto malformed = [&](const char* why) {
    error_ = why;
    return Step{{}, at};
  };
  while (!error_) {
    switch (state_) {
      case State::done:
        return {{}, at};
      case State::until_close:
        return {in.substr(at), in.size()};
      case State::data: {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size() - at));
        if (n == 0) return {{}, at};
        left_ -= n;
        const std::string_view data = in.substr(at, n);
        at += n;
        if (left_ == 0) state_ = chunked_ ? State::chunk_end : State::done;
        // A chunk's CRLF that came with it is used with it: a read of one
        // whole chunk, a stream's usual, is then decoded in one call.
        if (state_ == State::chunk_end && crlf_at(in, at)) {
          at += 2;
          state_ = State::chunk_size;
        }
        return {data, at};
      }
      case State::chunk_end:
        if (in.size() - at < 2) return {{}, at};
        if (!crlf_at(in, at)) return malformed("a chunk's data is not followed by CRLF");
        at += 2;
        state_ = State::chunk_size;
        [[fallthrough]];
      case State::chunk_size:
        if (take_plain_chunk_size(in, at)) break;
        [[fallthrough]];
      case State::trailer: {
        const bool size_line = state_ == State::chunk_size;
        const std::size_t limit = size_line ? kMaxChunkLine : kMaxTrailer - trailer_bytes_;
        const char* too_long =
            size_line ? "a chunk size line is too long" : "the trailer is too long";
        const std::size_t lf = in.find('\n', at);
        if (lf == std::string_view::npos)
          return in.size() - at > limit ? malformed(too_long) : Step{{}, at};
        const std::size_t length = lf + 1 - at;
        if (length > limit) return malformed(too_long);
        if (length < 2 || in[lf - 1] != '\r') return malformed("a chunk line does not end in CRLF");
        const std::string_view line = in.substr(at, length - 2);
        if (size_line) {
          if (const char* why = take_chunk_size(line)) return malformed(why);
        } else {
          trailer_bytes_ += length;
          if (line.empty()) state_ = State::done;
        }
        at += length;
        break;
      }
    }
  }
  return {{}, at};
}

bool BodyDecoder::end_of_input() {
  if (state_ == State::until_close) state_ = State::done;
  return done();
}

}  // namespace switchyard::http
