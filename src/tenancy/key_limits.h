// What an API key may use, and what a key is called: the limits the
// tenancy module enforces, whichever store (the config's api_keys, SQLite,
// Redis) a key comes from.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::tenancy {

// What one API key may use (docs/keys.md). Unset limits do not apply.
struct KeyLimits {
  std::vector<std::string> models;  // models (canonical names) the key may use; empty: all
  // Requests per minute and tokens (prompt + completion) per minute, as
  // GCRA: a whole minute's worth may come at once, then it refills evenly.
  std::optional<std::int64_t> rpm;
  std::optional<std::int64_t> tpm;
  std::optional<std::int64_t> tokens_per_day;  // per UTC day
  // Requests in flight at once; the excess waits (up to queue.max_wait).
  std::optional<int> max_concurrency;
  // Agent sessions active at once; a session is active from its first
  // request until session_idle after its last. New sessions beyond the cap
  // wait for a seat (up to queue.max_wait).
  std::optional<int> max_sessions;
  std::chrono::milliseconds session_idle{std::chrono::minutes(5)};
  // Queue order: higher priority bands are served first; within a band, keys
  // share slots in proportion to weight (in estimated tokens).
  int priority = 0;
  double weight = 1;

  bool operator==(const KeyLimits&) const = default;
};

// A key from the config file's api_keys (the database holds the others).
struct StaticKey {
  std::string name;  // what logs and metrics say; "api_keys[i]" when not given
  std::string key;
  KeyLimits limits;

  bool operator==(const StaticKey&) const = default;
};

// A key name (static or stored): 1 to 64 letters, digits, '-', '_', '.' or
// '@', so that it is safe in logs, metrics labels and the dashboard.
bool valid_key_name(std::string_view name);
inline constexpr const char* key_name_rule = "use 1 to 64 letters, digits, '-', '_', '.' or '@'";

}  // namespace switchyard::tenancy
