#include "http/head_parser.h"

#include <boost/beast/http/error.hpp>

#include <array>
#include <charconv>
#include <cstring>

namespace switchyard::http {

namespace {

using boost::system::error_code;
using Error = boost::beast::http::error;

// tchar (RFC 9110 §5.6.2): what a method, a field name and a list's
// tokens are made of.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> token{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    token[c] = alnum || (c != 0 && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                                       std::string_view::npos);
  }
  return token;
}();

bool is_token(char c) {
  return kTokenChars[static_cast<unsigned char>(c)];
}

// The length of the run of `in` whose bytes `table` admits.
std::size_t span_of(std::string_view in, const std::array<bool, 256>& table) {
  std::size_t i = 0;
  while (i < in.size() && table[static_cast<unsigned char>(in[i])]) ++i;
  return i;
}

// The length of the run of `in` with no byte below `floor` (at most 0x80)
// and no DEL: a target's (floor 0x21) or a value's up to a tab (0x20).
// Eight bytes a step, as values and targets are the longest runs of a head.
std::size_t printable_run(std::string_view in, unsigned char floor) {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHighs = 0x8080808080808080;
  std::size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    std::uint64_t x;
    std::memcpy(&x, in.data() + i, 8);
    const std::uint64_t del = x ^ (kOnes * 0x7f);
    // Whether some byte is below `floor`, or is DEL (a zero byte of `del`).
    if ((((x - kOnes * floor) & ~x) | ((del - kOnes) & ~del)) & kHighs) break;
  }
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < floor || c == 0x7f) break;
    ++i;
  }
  return i;
}

// Whether a field value or reason phrase holds no control byte but tabs.
bool is_field_text(std::string_view in) {
  for (;;) {
    const std::size_t run = printable_run(in, 0x20);
    if (run == in.size()) return true;
    if (in[run] != '\t') return false;
    in.remove_prefix(run + 1);
  }
}

// "HTTP/1.1" → 11; nullopt when `text` is not exactly a version 1.0 or 1.1.
std::optional<unsigned> version_of(std::string_view text) {
  if (text.size() != 8 || !text.starts_with("HTTP/") || text[6] != '.') return std::nullopt;
  const char major = text[5];
  const char minor = text[7];
  if (major < '0' || major > '9' || minor < '0' || minor > '9') return std::nullopt;
  const unsigned version =
      10u * static_cast<unsigned>(major - '0') + static_cast<unsigned>(minor - '0');
  if (version < 10 || version > 11) return std::nullopt;
  return version;
}

// Digits only, no sign, within 64 bits.
std::optional<std::uint64_t> decimal_of(std::string_view digits) {
  std::uint64_t n = 0;
  const char* end = digits.data() + digits.size();
  const auto [at, ec] = std::from_chars(digits.data(), end, n);
  if (ec != std::errc() || at != end) return std::nullopt;
  return n;
}

// Whether a token (a field name, a Connection option) is `lower` (letters
// and '-', of the same length) in any case. No other tchar is a letter's or '-''s 0x20 apart,
// so or-ing 0x20 into every byte folds a token's case, eight at a time.
bool same_folded(std::string_view token, std::string_view lower) {
  std::size_t i = 0;
  for (; i + 8 <= token.size(); i += 8) {
    std::uint64_t a, b;
    std::memcpy(&a, token.data() + i, 8);
    std::memcpy(&b, lower.data() + i, 8);
    if ((a | 0x2020202020202020) != b) return false;
  }
  for (; i < token.size(); ++i)
    if ((token[i] | 0x20) != lower[i]) return false;
  return true;
}

// Most fields are told apart by their length alone.
inline bool named(std::string_view token, std::string_view lower) {
  return token.size() == lower.size() && same_folded(token, lower);
}

// Whether a Transfer-Encoding list's codings end in chunked, named once,
// read as Beast reads it: the list's tokens up to the first byte that
// neither continues nor separates them ("chunked;q=1" and "chunked\xff" end
// at "chunked"). The request's own framing check (check_request_framing)
// refuses what is left.
bool chunked_once_and_last(std::string_view list) {
  bool chunked_seen = false;
  bool last_chunked = false;
  bool need_comma = false;
  for (std::size_t i = 0;;) {
    while (i < list.size() && (list[i] == ' ' || list[i] == '\t')) ++i;
    if (i < list.size() && list[i] == ',') {
      need_comma = false;
      ++i;
      continue;
    }
    const std::size_t token = i < list.size() ? span_of(list.substr(i), kTokenChars) : 0;
    if (token == 0 || need_comma) return last_chunked;
    last_chunked = named(list.substr(i, token), "chunked");
    if (last_chunked && chunked_seen) return false;
    chunked_seen = chunked_seen || last_chunked;
    i += token;
    need_comma = true;
  }
}

}  // namespace

std::size_t HeadParser::parse(std::string_view in, error_code& ec) {
  ec = {};
  got_some_ = got_some_ || !in.empty();
  const std::size_t end = std::min<std::size_t>(in.size(), header_limit_);
  // A request's method is checked as it arrives: a client speaking
  // something else (TLS, say) is told at once, not when a line ends.
  for (std::size_t i = scanned_; method_ && !method_seen_ && i < end; ++i) {
    method_seen_ = in[i] == ' ';
    if (!method_seen_ && !is_token(in[i])) {
      ec = Error::bad_method;
      return 0;
    }
  }
  for (;;) {
    const void* lf =
        scanned_ < end ? std::memchr(in.data() + scanned_, '\n', end - scanned_) : nullptr;
    if (!lf) {
      scanned_ = static_cast<std::uint32_t>(end);
      ec = in.size() >= header_limit_ ? Error::header_limit : Error::need_more;
      return 0;
    }
    const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(lf) - in.data());
    scanned_ = static_cast<std::uint32_t>(at + 1);
    if (at == line_start_ || in[at - 1] != '\r') {
      ec = Error::bad_line_ending;
      return 0;
    }
    const auto line = in.substr(line_start_, at - 1 - line_start_);
    line_start_ = scanned_;
    if (line.empty() && start_line_done_) {
      done_ = true;
      return line_start_;
    }
    ec = parse_line(line);
    if (ec) return 0;
  }
}

error_code HeadParser::parse_line(std::string_view line) {
  if (start_line_done_) return parse_field(line);
  start_line_done_ = true;
  return method_ ? parse_request_line(line) : parse_status_line(line);
}

error_code HeadParser::parse_request_line(std::string_view line) {
  // method SP request-target SP HTTP-version
  const std::size_t method_end = span_of(line, kTokenChars);
  if (method_end == 0 || method_end == line.size() || line[method_end] != ' ')
    return Error::bad_method;
  const auto rest = line.substr(method_end + 1);
  const std::size_t target_end = printable_run(rest, 0x21);
  if (target_end == 0 || target_end == rest.size() || rest[target_end] != ' ')
    return Error::bad_target;
  const auto version = version_of(rest.substr(target_end + 1));
  if (!version) return Error::bad_version;
  version_ = static_cast<std::uint16_t>(*version);
  method_->assign(line.substr(0, method_end));
  target_->assign(rest.substr(0, target_end));
  return {};
}

error_code HeadParser::parse_status_line(std::string_view line) {
  // HTTP-version SP 3DIGIT SP reason-phrase
  const auto version = version_of(line.substr(0, 8));
  if (!version || line.size() < 9 || line[8] != ' ') return Error::bad_version;
  version_ = static_cast<std::uint16_t>(*version);
  const auto code = line.substr(9, 4);
  if (code.size() < 4 || code[3] != ' ') return Error::bad_status;
  const auto status = decimal_of(code.substr(0, 3));
  if (!status) return Error::bad_status;
  status_ = static_cast<std::uint16_t>(*status);
  const auto reason = line.substr(13);
  if (!is_field_text(reason)) return Error::bad_reason;
  return {};
}

error_code HeadParser::parse_field(std::string_view line) {
  // field-name ":" OWS field-value OWS; a line that starts with white space
  // (obs-fold, or space after the start line) names no field.
  const std::size_t colon = span_of(line, kTokenChars);
  if (colon == 0 || colon == line.size() || line[colon] != ':') return Error::bad_field;
  const auto name = line.substr(0, colon);
  const auto raw = line.substr(colon + 1);
  if (!is_field_text(raw)) return Error::bad_value;
  const auto value = trim_ows(raw);
  if (auto ec = note_field(name, value)) return ec;
  headers_.add(name, value);
  return {};
}

// What the fields that frame the message or govern the connection say,
// with Beast's rules for their conflicts.
error_code HeadParser::note_field(std::string_view name, std::string_view value) {
  if (named(name, "connection") || named(name, "proxy-connection")) {
    return for_each_list_element(value, [this](std::string_view token) -> error_code {
      if (token.empty()) return {};
      if (span_of(token, kTokenChars) != token.size()) return Error::bad_value;
      close_ = close_ || named(token, "close");
      keep_alive_ = keep_alive_ || named(token, "keep-alive");
      return {};
    });
  }
  if (named(name, "content-length")) {
    if (chunked_) return Error::bad_content_length;
    return for_each_list_element(value, [this](std::string_view digits) -> error_code {
      const auto length = decimal_of(digits);
      if (!length) return Error::bad_content_length;
      if (content_length_ && *content_length_ != *length) return Error::multiple_content_length;
      content_length_ = length;
      return {};
    });
  }
  if (named(name, "transfer-encoding")) {
    if (chunked_ || content_length_) return Error::bad_transfer_encoding;
    chunked_ = chunked_once_and_last(value);
  }
  return {};
}

}  // namespace switchyard::http
