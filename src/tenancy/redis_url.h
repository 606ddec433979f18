// Where the shared limits live: `redis: redis://host:port/db` in the fleet
// config (docs/keys.md, "Several gateways").
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace switchyard::tenancy {

struct RedisAddress {
  std::string host;  // a name or an IP address; [v6] without its brackets
  int port = 6379;
  int db = 0;  // SELECTed on every connection

  bool operator==(const RedisAddress&) const = default;
};

// "redis://host[:port][/db]". Errors name `field` and what is wrong with it.
// No user/password and no TLS (rediss://): the shared limits are meant for a
// Redis on the gateways' own network.
Result<RedisAddress> parse_redis_url(std::string_view url, std::string_view field = "redis");

}  // namespace switchyard::tenancy
