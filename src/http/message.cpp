#include "http/message.h"

#include <algorithm>
#include <cstring>

namespace switchyard::http {

namespace {

// HTTP tokens are ASCII; folding inline keeps header lookups off libc's
// locale-aware tolower, which was a call per character on the hot path.
constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Most bytes match as written; two that differ match only as the two
    // cases of one letter (0x20 apart, as '@' and '`' are too).
    const char x = a[i], y = b[i];
    if (x != y && ((x ^ y) != 0x20 || ascii_lower(x) < 'a' || ascii_lower(x) > 'z')) return false;
  }
  return true;
}

void Headers::add(std::string_view name, std::string_view value) {
  const std::size_t at = text_.size();
  text_.resize(at + name.size() + value.size(), boost::container::default_init);
  std::memcpy(text_.data() + at, name.data(), name.size());
  std::memcpy(text_.data() + at + name.size(), value.data(), value.size());
  spans_.push_back(Span{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(name.size()),
                        static_cast<std::uint32_t>(value.size())});
  names_ |= name_bit(name);
}

void Headers::set(std::string_view name, std::string_view value) {
  remove(name);
  add(name, value);
}

void Headers::remove(std::string_view name) {
  // The removed bytes stay in text_ unreferenced: lists are short-lived.
  spans_.erase(std::remove_if(spans_.begin(), spans_.end(),
                              [&](const Span& s) {
                                return iequals({text_.data() + s.at, s.name_size}, name);
                              }),
               spans_.end());
}

std::optional<std::string_view> Headers::find(std::string_view name) const {
  if (!(names_ & name_bit(name))) return std::nullopt;
  for (const Span& s : spans_) {
    if (s.name_size == name.size() && iequals({text_.data() + s.at, s.name_size}, name))
      return std::string_view(text_.data() + s.at + s.name_size, s.value_size);
  }
  return std::nullopt;
}

std::string_view RequestHead::path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

namespace {

// application/x-www-form-urlencoded: "%2F" → "/", "+" → " "; a '%' not
// followed by two hex digits stays as it is.
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> query_param(std::string_view t, std::string_view name) {
  const auto q = t.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  for (std::string_view rest = t.substr(q + 1); !rest.empty();) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (percent_decoded(pair.substr(0, eq)) != name) continue;
    return eq == std::string_view::npos ? std::string() : percent_decoded(pair.substr(eq + 1));
  }
  return std::nullopt;
}

Response json_response(int status, std::string body) {
  Response r;
  r.status = status;
  r.headers.add("Content-Type", "application/json; charset=utf-8");
  r.body = std::move(body);
  return r;
}

}  // namespace switchyard::http
