#include "plan/byte_size.h"

#include <gtest/gtest.h>
#include "../support.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

TEST(PlanByteSize, GIsBinaryAndGbIsDecimal) {
  EXPECT_EQ(parse_byte_size("32G").value(), 32 * kGiB);
  EXPECT_EQ(parse_byte_size("32GiB").value(), 32 * kGiB);
  EXPECT_EQ(parse_byte_size("32Gi").value(), 32 * kGiB);
  EXPECT_EQ(parse_byte_size("32g").value(), 32 * kGiB);
  EXPECT_EQ(parse_byte_size("32GB").value(), 32'000'000'000u);
  EXPECT_EQ(parse_byte_size("32gb").value(), 32'000'000'000u);
  EXPECT_EQ(parse_byte_size("23.5G").value(), 47 * kGiB / 2);
  EXPECT_EQ(parse_byte_size("512M").value(), 512u << 20);
  EXPECT_EQ(parse_byte_size("512MB").value(), 512'000'000u);
  EXPECT_EQ(parse_byte_size("1T").value(), kGiB * 1024);
  EXPECT_EQ(parse_byte_size("4K").value(), 4096u);
  EXPECT_EQ(parse_byte_size("0").value(), 0u);
  EXPECT_EQ(parse_byte_size("0G").value(), 0u);
}

TEST(PlanByteSize, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "32", "G", "abc", "32Q", "32GiBs", "-4G", "1.2.3G", "32 G"}) {
    EXPECT_FALSE(parse_byte_size(bad)) << bad;
  }
  auto unitless = parse_byte_size("32");
  ASSERT_FALSE(unitless);
  EXPECT_NE(unitless.error().message.find("needs a unit"), std::string::npos);
  EXPECT_FALSE(parse_byte_size("99999999999999T"));
}

TEST(PlanByteSize, GpuSpecs) {
  auto four = parse_gpu_spec("4x32G");
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(four->count, 4u);
  EXPECT_EQ(four->bytes_each, 32 * kGiB);
  auto decimal = parse_gpu_spec("2X24GB");
  ASSERT_TRUE(decimal);
  EXPECT_EQ(decimal->count, 2u);
  EXPECT_EQ(decimal->bytes_each, 24'000'000'000u);
  auto one = parse_gpu_spec("48G");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->count, 1u);
  auto mixed = parse_gpu_spec("24G,2x32G");
  ASSERT_TRUE(mixed) << mixed.error().message;
  EXPECT_EQ(mixed->count, 3u);
  EXPECT_EQ(mixed->bytes_each, 24 * kGiB);
  EXPECT_EQ(mixed->cards, (std::vector<uint64_t>{32 * kGiB, 32 * kGiB, 24 * kGiB}));
  EXPECT_TRUE(mixed->mixed());
  EXPECT_FALSE(four->mixed());
  for (const char* bad : {"4x", "x32G", "0x32G", "4x0G", "4x0", "4x32", "fourx32G", "-1x32G",
                          "4x4x32G", "24G,", ",24G", "24G,,32G", "24G,32"}) {
    EXPECT_FALSE(parse_gpu_spec(bad)) << bad;
  }
}

TEST(PlanByteSize, FormatsForPeople) {
  EXPECT_EQ(format_bytes(640), "640 B");
  EXPECT_EQ(format_bytes(32768), "32.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(132.0 * kGiB), "132.0 GiB");
  EXPECT_EQ(format_bytes(-2.0 * kGiB), "-2.00 GiB");
}

}  // namespace
}  // namespace switchyard::plan
