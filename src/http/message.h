// Plain HTTP messages as the rest of the program sees them: no Beast types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::http {

// An ordered header list with case-insensitive lookup. Small (a dozen
// entries), so a vector beats a map.
class Headers {
 public:
  using Entry = std::pair<std::string, std::string>;

  void add(std::string name, std::string value);
  // Replaces every entry named `name` with one entry.
  void set(std::string_view name, std::string value);
  void remove(std::string_view name);
  // The first value named `name`, or nullopt.
  std::optional<std::string_view> find(std::string_view name) const;

  const std::vector<Entry>& entries() const { return entries_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

bool iequals(std::string_view a, std::string_view b);

// What is known once the request line and headers are in, before the body.
struct RequestHead {
  std::string method;  // upper case, as sent: "GET", "POST"
  std::string target;  // origin-form: "/v1/models?x=1"
  Headers headers;
  std::optional<std::uint64_t> content_length;
  std::string remote;  // the peer's "address:port"

  // The target without its query string.
  std::string_view path() const;
};

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
