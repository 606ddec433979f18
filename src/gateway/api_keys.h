// Static API keys: who may use the gateway.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"

namespace switchyard::gateway {

class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  bool enabled() const { return !keys_.empty(); }
  // Whether the request presents a known key: "Authorization: Bearer <key>"
  // (OpenAI clients) or "x-api-key: <key>" (Anthropic clients). Compares in
  // time independent of where a guess first differs.
  bool allows(const http::Headers& headers) const;
  // The key a request presents, if any.
  static std::optional<std::string_view> presented(const http::Headers& headers);

 private:
  std::vector<std::string> keys_;
};

}  // namespace switchyard::gateway
