// Key records shared through Redis (docs/keys.md, "Several gateways"): how a
// record is written there, and which of two copies of one record wins. Redis
// holds what the state database holds, the digest and never the key:
//
//   switchyard:{keys}:records   hash, key name → encode_record()
//   switchyard:{keys}:versions  hash, key name → the record's version
//   switchyard:{keys}:version   a counter bumped by every change
//   channel switchyard:keys     the name of each changed record
//
// A record is only ever replaced by a higher version (redis_scripts::put_key),
// so a gateway publishing an old copy cannot undo a newer change.
//
// Whoever may write to Redis could add a record with a digest of their
// choosing, which would mint an API key on every gateway. With a
// `redis_secret` shared by the gateways each record carries an HMAC-SHA256
// over its name and text (a last line "sig=<hex>"), and a record without a
// valid one is refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tenancy/key_store.h"

namespace switchyard::tenancy {

namespace key_records {
inline constexpr std::string_view records = "switchyard:{keys}:records";
inline constexpr std::string_view versions = "switchyard:{keys}:versions";
inline constexpr std::string_view version = "switchyard:{keys}:version";
inline constexpr std::string_view channel = "switchyard:keys";
}  // namespace key_records

// One record as text (its name is the hash field); last_used stays local.
// Signed when `secret` is not empty.
std::string encode_record(const KeyRecord& record, std::string_view secret = {});
// The record `name` from encode_record()'s text; an error names the field.
// With a `secret`, a record whose signature is missing or not valid is an
// error too.
Result<KeyRecord> decode_record(std::string_view name, std::string_view text,
                                std::string_view secret = {});

// Each name once, from `local` (this state database) or `remote` (Redis),
// whichever has the higher version; on a tie Redis's, so every gateway
// picks the same one. Sorted by name, as KeyStore::list().
std::vector<KeyRecord> merge_records(const std::vector<KeyRecord>& local,
                                     const std::vector<KeyRecord>& remote);

// The EVAL command that stores `record` unless Redis has it at its version
// or a higher one; its reply is 1 when stored (and published), else 0.
std::vector<std::string> put_record_command(const KeyRecord& record, std::string_view secret = {});

}  // namespace switchyard::tenancy
