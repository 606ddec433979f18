// Plain HTTP messages as the rest of the program sees them: no Beast types.
#pragma once

#include <boost/container/small_vector.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::http {

// An ordered header list with case-insensitive lookup. Names and values are
// kept back to back in one buffer that holds a typical message's headers
// without allocating (a string per name and value was a measurable share of
// the gateway's allocations per request); a dozen entries, so a linear
// search beats a map. Views returned by find() or iteration are valid until
// the list is next changed.
class Headers {
 public:
  struct Entry {
    std::string_view name;
    std::string_view value;
  };

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Entry;

    const_iterator() = default;
    Entry operator*() const { return (*headers_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++index_;
      return before;
    }
    bool operator==(const const_iterator& other) const { return index_ == other.index_; }

   private:
    friend class Headers;
    const_iterator(const Headers* headers, std::size_t index) : headers_(headers), index_(index) {}
    const Headers* headers_ = nullptr;
    std::size_t index_ = 0;
  };

  void add(std::string_view name, std::string_view value);
  // Replaces every entry named `name` with one entry.
  void set(std::string_view name, std::string_view value);
  void remove(std::string_view name);
  // The first value named `name`, or nullopt.
  std::optional<std::string_view> find(std::string_view name) const;

  std::size_t size() const { return spans_.size(); }
  bool empty() const { return spans_.empty(); }
  Entry operator[](std::size_t i) const {
    const Span& s = spans_[i];
    const char* at = text_.data() + s.at;
    return {{at, s.name_size}, {at + s.name_size, s.value_size}};
  }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, spans_.size()}; }

 private:
  struct Span {
    std::uint32_t at;  // offset of the name in text_; the value follows it
    std::uint32_t name_size;
    std::uint32_t value_size;
  };
  boost::container::small_vector<char, 256> text_;
  boost::container::small_vector<Span, 10> spans_;
  // A name's bit: its length and first letter, folded (names equal but for
  // case share it).
  static std::uint64_t name_bit(std::string_view name) {
    const unsigned first = name.empty() ? 0 : static_cast<unsigned char>(name[0]) | 0x20;
    return std::uint64_t{1} << ((name.size() * 7 + first) % 64);
  }
  // The bits of the names added (remove leaves them): most finds are for a
  // name the list lacks (a request's optional headers), told without a pass.
  std::uint64_t names_ = 0;
};

bool iequals(std::string_view a, std::string_view b);
// `s` without the spaces and tabs around it (OWS, RFC 9110 §5.6.3).
inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls `each` with every element of a comma-separated list (RFC 9110
// §5.6.1), OWS trimmed, empty ones included (Content-Length's rule counts
// them). Stops at and returns the first result of `each` that converts to
// true (an error, a reason to stop); otherwise a value-initialized result.
template <class Each>
auto for_each_list_element(std::string_view list, Each each) -> decltype(each(list)) {
  for (;;) {
    const auto comma = list.find(',');
    if (auto stop = each(trim_ows(list.substr(0, comma)))) return stop;
    if (comma == std::string_view::npos) return {};
    list.remove_prefix(comma + 1);
  }
}

// What is known once the request line and headers are in, before the body.
struct RequestHead {
  std::string method;  // upper case, as sent: "GET", "POST"
  std::string target;  // origin-form: "/v1/models?x=1"
  Headers headers;
  std::optional<std::uint64_t> content_length;
  std::string remote;  // the peer's "address:port"
  // What the handler's screen() noted for its handle() (Handler); 0: nothing.
  std::uint64_t screen_note = 0;

  // The target without its query string.
  std::string_view path() const;
};

// The value of a hexadecimal digit; -1 for any other character. A table:
// every relayed chunk's size is read with it.
inline constexpr auto kHexValues = [] {
  std::array<signed char, 256> values{};
  values.fill(-1);
  for (int d = 0; d < 10; ++d) values['0' + d] = static_cast<signed char>(d);
  for (int d = 0; d < 6; ++d) {
    values['a' + d] = static_cast<signed char>(10 + d);
    values['A' + d] = static_cast<signed char>(10 + d);
  }
  return values;
}();
inline int hex_value(char c) {
  return kHexValues[static_cast<unsigned char>(c)];
}

// The value of the query parameter `name` in a request target
// ("/props?model=a%20b" → "a b"), the first when repeated; nullopt when absent.
std::optional<std::string> query_param(std::string_view target, std::string_view name);

struct Request {
  RequestHead head;
  std::string body;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
};

// "application/json" response with the given body.
Response json_response(int status, std::string body);

}  // namespace switchyard::http
