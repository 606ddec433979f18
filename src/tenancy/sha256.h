// SHA-256 (FIPS 180-4), for storing API keys as digests only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchyard::tenancy {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(std::string_view data);
std::string to_hex(const Digest& digest);

}  // namespace switchyard::tenancy
