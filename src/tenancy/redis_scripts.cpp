#include "tenancy/redis_scripts.h"

#include <fmt/format.h>

namespace switchyard::tenancy::redis_scripts {

namespace {

// Redis's clock in ms, the same for every gateway.
#define SY_NOW                     \
  "local t = redis.call('TIME')\n" \
  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

// A GCRA's theoretical arrival time, never in the past.
#define SY_TAT                                                                                \
  "local function tat_of(key)\n"                                                              \
  "  local v = tonumber(redis.call('GET', key) or now)\n"                                     \
  "  if v < now then v = now end\n"                                                           \
  "  return v\n"                                                                              \
  "end\n"                                                                                     \
  "local function store(key, tat)\n"                                                          \
  "  if tat <= now then redis.call('DEL', key) return end\n"                                  \
  "  redis.call('SET', key, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)\n" \
  "end\n"

}  // namespace

const Script take_rates{"take_rates", 3,
                        SY_NOW SY_TAT
                        "local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
                        "local cost, day = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
                        "local rt, tt = tat_of(KEYS[1]), tat_of(KEYS[2])\n"
                        "local used = tonumber(redis.call('GET', KEYS[3]) or '0')\n"
                        "local function left(limit, tat)\n"
                        "  if limit <= 0 then return 0 end\n"
                        "  local n = math.floor((60000 - (tat - now)) * limit / 60000 + 1e-9)\n"
                        "  return math.max(0, math.min(limit, n))\n"
                        "end\n"
                        "local function answer(refused, retry)\n"
                        "  return {refused, math.ceil(retry), left(rpm, rt), math.ceil(rt - now),\n"
                        "          left(tpm, tt), math.ceil(tt - now), used}\n"
                        "end\n"
                        "if rpm > 0 and rt + 60000 / rpm - now > 60000 then\n"
                        "  return answer(1, rt + 60000 / rpm - now - 60000)\n"
                        "end\n"
                        "if tpm > 0 and tt + 60000 * cost / tpm - now > 60000 then\n"
                        "  return answer(2, tt + 60000 * cost / tpm - now - 60000)\n"
                        "end\n"
                        "if day > 0 and used + cost > day then return answer(3, 0) end\n"
                        "if rpm > 0 then rt = rt + 60000 / rpm; store(KEYS[1], rt) end\n"
                        "if tpm > 0 then tt = tt + 60000 * cost / tpm; store(KEYS[2], tt) end\n"
                        "if day > 0 then\n"
                        "  used = redis.call('INCRBY', KEYS[3], cost)\n"
                        "  redis.call('PEXPIRE', KEYS[3], ARGV[5])\n"
                        "end\n"
                        "return answer(0, 0)\n"};

const Script correct_rates{
    "correct_rates", 3,
    SY_NOW
    "local function raw_tat(key)\n"
    "  return tonumber(redis.call('GET', key) or now)\n"
    "end\n"
    "local function store(key, tat)\n"
    "  if tat <= now then redis.call('DEL', key) return end\n"
    "  redis.call('SET', key, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)\n"
    "end\n"
    "local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "local dr, dt = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "if rpm > 0 and dr ~= 0 then store(KEYS[1], raw_tat(KEYS[1]) + dr * 60000 / rpm) end\n"
    "if tpm > 0 and dt ~= 0 then store(KEYS[2], raw_tat(KEYS[2]) + dt * 60000 / tpm) end\n"
    "if dt ~= 0 and redis.call('EXISTS', KEYS[3]) == 1 then\n"
    "  if redis.call('INCRBY', KEYS[3], dt) < 0 then redis.call('SET', KEYS[3], 0) end\n"
    "  redis.call('PEXPIRE', KEYS[3], ARGV[5])\n"
    "end\n"
    "return 1\n"};

// A seats zset lives as long as its last seat.
#define SY_KEEP_SEATS                                                           \
  "local function keep(key)\n"                                                  \
  "  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"            \
  "  if last[2] then\n"                                                         \
  "    redis.call('PEXPIRE', key, math.ceil(tonumber(last[2]) - now) + 1000)\n" \
  "  end\n"                                                                     \
  "end\n"

const Script acquire{
    "acquire", 2,
    SY_NOW SY_KEEP_SEATS
    "local member, ttl = ARGV[1], tonumber(ARGV[2])\n"
    "local cap, session = tonumber(ARGV[3]), ARGV[4]\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
    "if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return {1} end\n"
    "if session ~= '' then\n"
    "  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
    "  local score = redis.call('ZSCORE', KEYS[2], session)\n"
    "  if not score then\n"
    "    if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then\n"
    "      local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')\n"
    "      return {2, math.ceil(tonumber(oldest[2]) - now)}\n"
    "    end\n"
    "    score = 0\n"
    "  end\n"
    "  redis.call('ZADD', KEYS[2], math.max(tonumber(score), now + ttl), session)\n"
    "  keep(KEYS[2])\n"
    "end\n"
    "redis.call('ZADD', KEYS[1], now + ttl, member)\n"
    "redis.call('PEXPIRE', KEYS[1], ttl * 2)\n"
    "return {0}\n"};

const Script renew{"renew", 2,
                   SY_NOW SY_KEEP_SEATS
                   "local member, ttl, session = ARGV[1], tonumber(ARGV[2]), ARGV[4]\n"
                   "if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, member) == 1 then\n"
                   "  redis.call('PEXPIRE', KEYS[1], ttl * 2)\n"
                   "end\n"
                   "if session ~= '' then\n"
                   "  local score = tonumber(redis.call('ZSCORE', KEYS[2], session) or 0)\n"
                   "  redis.call('ZADD', KEYS[2], math.max(score, now + ttl), session)\n"
                   "  keep(KEYS[2])\n"
                   "end\n"
                   "return 1\n"};

const Script release{
    "release", 2,
    SY_NOW SY_KEEP_SEATS
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"
    "local session = ARGV[2]\n"
    "if session ~= '' and tonumber(ARGV[3]) <= 0 then\n"
    "  redis.call('ZREM', KEYS[2], session)\n"
    "elseif session ~= '' then\n"
    "  local score = tonumber(redis.call('ZSCORE', KEYS[2], session) or 0)\n"
    "  redis.call('ZADD', KEYS[2], math.max(score, now + tonumber(ARGV[3])), session)\n"
    "  keep(KEYS[2])\n"
    "end\n"
    "redis.call('PUBLISH', ARGV[4], ARGV[5])\n"
    "return 1\n"};

const Script heartbeat{"heartbeat", 1,
                       SY_NOW
                       "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
                       "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
                       "redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)\n"
                       "return redis.call('ZCARD', KEYS[1])\n"};

const Script put_key{"put_key", 3,
                     "local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')\n"
                     "if held >= tonumber(ARGV[2]) then return 0 end\n"
                     "redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])\n"
                     "redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])\n"
                     "redis.call('INCR', KEYS[3])\n"
                     "redis.call('PUBLISH', ARGV[4], ARGV[1])\n"
                     "return 1\n"};

}  // namespace switchyard::tenancy::redis_scripts

namespace switchyard::tenancy {

std::string redis_key(std::string_view key_name, std::string_view what) {
  return fmt::format("switchyard:{{{}}}:{}", key_name, what);
}

std::int64_t utc_day(std::int64_t unix_ms) {
  constexpr std::int64_t day_ms = 86'400'000;
  return unix_ms >= 0 ? unix_ms / day_ms : (unix_ms - day_ms + 1) / day_ms;
}

}  // namespace switchyard::tenancy
