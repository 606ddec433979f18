#include "http/body_decoder.h"

#include <algorithm>

namespace switchyard::http {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
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

// chunk-size [ chunk-ext ], the line's CRLF removed. Returns why it is
// malformed, or null.
const char* BodyDecoder::take_chunk_size(std::string_view line) {
  std::uint64_t size = 0;
  std::size_t digits = 0;
  for (; digits < line.size(); ++digits) {
    const int v = hex_value(line[digits]);
    if (v < 0) break;
    if (size > (UINT64_MAX >> 4)) return "a chunk size is too large";
    size = size << 4 | static_cast<unsigned>(v);
  }
  if (digits == 0) return "a chunk size is not a hexadecimal number";
  const std::string_view rest = line.substr(digits);
  const auto ext = rest.find_first_not_of(" \t");
  if (ext != std::string_view::npos && rest[ext] != ';')
    return "a chunk size is followed by something other than an extension";
  left_ = size;
  state_ = size > 0 ? State::data : State::trailer;
  return nullptr;
}

// The usual size line, "<hex>\r\n" whole in `in` with at most 16 digits,
// read in one pass; anything else is left to the general path.
bool BodyDecoder::take_plain_chunk_size(std::string_view in, std::size_t& at) {
  std::uint64_t size = 0;
  std::size_t i = at;
  for (int v; i < in.size() && i - at < 16 && (v = hex_value(in[i])) >= 0; ++i)
    size = size << 4 | static_cast<unsigned>(v);
  if (i == at || in.size() - i < 2 || in[i] != '\r' || in[i + 1] != '\n') return false;
  at = i + 2;
  left_ = size;
  state_ = size > 0 ? State::data : State::trailer;
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
        if (left_ == 0) state_ = chunked_ ? State::chunk_end : State::done;
        return {in.substr(at, n), at + n};
      }
      case State::chunk_end:
        if (in.size() - at < 2) return {{}, at};
        if (in[at] != '\r' || in[at + 1] != '\n')
          return malformed("a chunk's data is not followed by CRLF");
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
