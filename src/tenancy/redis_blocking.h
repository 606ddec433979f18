// A blocking Redis connection for short-lived commands (`switchyard keys`),
// never for the gateway's I/O thread (tenancy/redis_client is that one).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "tenancy/redis_client.h"
#include "tenancy/redis_url.h"

struct redisContext;

namespace switchyard::tenancy {

class BlockingRedis {
 public:
  // Connects and SELECTs; `timeout` bounds the connect and each command.
  static Result<BlockingRedis> connect(const tenancy::RedisAddress& address,
                                       std::chrono::milliseconds timeout);
  BlockingRedis(BlockingRedis&&) noexcept = default;
  BlockingRedis& operator=(BlockingRedis&&) noexcept = default;
  ~BlockingRedis();

  // As RedisClient::command: a Redis error reply is a reply, not an Error.
  Result<RedisReply> command(const std::vector<std::string>& args);

 private:
  struct Free {
    void operator()(redisContext* c) const;
  };
  explicit BlockingRedis(redisContext* c) : context_(c) {}
  std::unique_ptr<redisContext, Free> context_;
};

}  // namespace switchyard::tenancy
