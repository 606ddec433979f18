#include "common/hex.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard {
namespace {

TEST(Hex, SixteenDigitsZeroPadded) {
  std::string out(16, '?');
  write_hex64(0x0123456789abcdefull, out.data());
  EXPECT_EQ(out, "0123456789abcdef");
  write_hex64(0xa, out.data());
  EXPECT_EQ(out, "000000000000000a");
  write_hex64(~0ull, out.data());
  EXPECT_EQ(out, "ffffffffffffffff");
}

}  // namespace
}  // namespace switchyard
