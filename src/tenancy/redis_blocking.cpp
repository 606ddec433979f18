#include "tenancy/redis_blocking.h"

#include <fmt/format.h>

#include "tenancy/hiredis_reply.h"

namespace switchyard::tenancy {

void BlockingRedis::Free::operator()(redisContext* c) const {
  redisFree(c);
}

BlockingRedis::~BlockingRedis() = default;

Result<BlockingRedis> BlockingRedis::connect(const tenancy::RedisAddress& address,
                                             std::chrono::milliseconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  redisContext* c = redisConnectWithTimeout(address.host.c_str(), address.port, tv);
  if (!c) return Error{"out of memory"};
  BlockingRedis redis(c);
  if (c->err) return Error{c->errstr};
  if (redisSetTimeout(c, tv) != REDIS_OK) return Error{c->errstr[0] ? c->errstr : "set timeout"};
  if (address.db != 0) {
    auto selected = redis.command({"SELECT", std::to_string(address.db)});
    if (!selected) return selected.error();
    if (selected->is_error()) return Error{fmt::format("SELECT {}: {}", address.db, selected->str)};
  }
  return redis;
}

Result<RedisReply> BlockingRedis::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (!reply) return Error{context_->errstr[0] ? context_->errstr : "connection lost"};
  RedisReply out = from_hiredis(reply);
  freeReplyObject(reply);
  return out;
}

}  // namespace switchyard::tenancy
