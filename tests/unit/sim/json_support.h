// Helpers for the engine format tests: parse a JSON object, list its keys,
// name a stream's SSE events.
#pragma once

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace switchyard::sim::test_json {

inline boost::json::object object(std::string_view text) {
  return boost::json::parse(text).as_object();
}

// The keys of a JSON object, in order.
inline std::vector<std::string> keys(const boost::json::object& o) {
  std::vector<std::string> out;
  for (const auto& kv : o) out.emplace_back(kv.key());
  return out;
}

// The `event:` names of an SSE stream, in order.
inline std::vector<std::string> events(const std::string& stream) {
  std::vector<std::string> names;
  for (std::size_t at = stream.find("event: "); at != std::string::npos;
       at = stream.find("event: ", at + 1))
    names.push_back(stream.substr(at + 7, stream.find('\n', at) - at - 7));
  return names;
}

}  // namespace switchyard::sim::test_json
