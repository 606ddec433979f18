// Static API keys: who may use the gateway.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::gateway {

class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  bool enabled() const { return !keys_.empty(); }
  // Whether an Authorization header value ("Bearer <key>") names a known key.
  // Compares in time independent of where a guess first differs.
  bool allows(std::optional<std::string_view> authorization) const;

 private:
  std::vector<std::string> keys_;
};

}  // namespace switchyard::gateway
