// The Lua scripts of the shared limits (tenancy/shared_limits): each check
// or change of one key's limits is one script, so it is atomic across every
// gateway. Scripts read Redis's own clock (TIME), one clock for all
// gateways. Their KEYS are the key's names under `switchyard:{name}:` (the
// braces keep one key's state in one Redis Cluster slot).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace switchyard::tenancy::redis_scripts {

struct Script {
  std::string_view name;  // for messages
  int keys;               // how many KEYS it takes
  std::string_view text;
};

// rpm and tpm as GCRA (tat in ms, a minute's worth at once) and the day's
// token counter: takes 1 request and `cost` tokens when all fit, else
// nothing. KEYS: rpm tat, tpm tat, day counter. ARGV: rpm (0: none), tpm,
// cost, tokens per day, day counter TTL ms. Returns {refused (0 ok, 1 rpm,
// 2 tpm, 3 day), retry ms, rpm remaining, rpm reset ms, tpm remaining,
// tpm reset ms, tokens used today}.
extern const Script take_rates;
// A reservation corrected: KEYS as take_rates; ARGV: rpm, tpm, request
// delta, token delta, day TTL ms. Returns 1.
extern const Script correct_rates;
// A running slot and, with a session, its seat. KEYS: running zset, seats
// zset. ARGV: member, lease TTL ms, max_concurrency (0: none), session (""
// none), max_sessions. Expired leases are pruned first. Returns {0} when
// taken, {1} when max_concurrency is reached, {2, ms until the oldest seat
// frees} when max_sessions is.
extern const Script acquire;
// Held leases renewed to now + TTL. KEYS, ARGV as acquire's first four.
extern const Script renew;
// A slot given back; the session's seat then lasts session_idle, and
// `message` is published on `channel` (waiters on other gateways ask
// again). KEYS as acquire; ARGV: member, session, session_idle ms, channel,
// message.
extern const Script release;
// This gateway's heartbeat; returns how many gateways beat within the TTL.
// KEYS: the gateways zset. ARGV: gateway id, TTL ms.
extern const Script heartbeat;
// A key record stored unless Redis holds it at this version or a higher one
// (tenancy/key_records.h). KEYS: records hash, versions hash, the change
// counter. ARGV: name, version, encoded record, channel. Returns 1 when
// stored (the counter bumped and the name published), else 0.
extern const Script put_key;

}  // namespace switchyard::tenancy::redis_scripts

namespace switchyard::tenancy {

// "switchyard:{alice}:rpm": the Redis key of one of a key's counters.
std::string redis_key(std::string_view key_name, std::string_view what);
// The UTC day (days since 1970) for the day-budget counter's name.
std::int64_t utc_day(std::int64_t unix_ms);

}  // namespace switchyard::tenancy
