// SHA-256 (FIPS 180-4), for storing API keys as digests only, and
// HMAC-SHA256 (RFC 2104), for signing the key records shared through Redis.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchyard::tenancy {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(std::string_view data);
std::string to_hex(const Digest& digest);
Digest hmac_sha256(std::string_view key, std::string_view message);

}  // namespace switchyard::tenancy
