#include "doctor/pcie_config.h"

#include <gtest/gtest.h>

#include "doctor/pcie_link.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using fixture::config_bytes;
using fixture::FakeFunction;

const FakeFunction chipset_root_port{
    "0000:00:1c.0", "", 0x8086, 0x7a38, 0x060400, PortType::root_port, 0, 0, 8.0, 4, 8.0, 4};
const FakeFunction cpu_root_port{
    "0000:00:01.0",       "", 0x8086, 0xa70d, 0x060400, PortType::root_port,
    fixture::all_atomics, 0,  16.0,   16,     32.0,     16};

TEST(PcieConfig, FindsThePcieCapabilityByWalkingTheList) {
  auto config = parse_config_space(config_bytes(cpu_root_port));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->vendor_id, 0x8086);
  EXPECT_EQ(config->device_id, 0xa70d);
  EXPECT_EQ(config->class_code, 0x060400u);
  ASSERT_EQ(config->pcie_lookup, CapabilityLookup::found);
  EXPECT_EQ(config->pcie.offset, 0x64);
  EXPECT_EQ(config->pcie.port_type, PortType::root_port);
  EXPECT_TRUE(config->pcie.atomic_routing());
  EXPECT_TRUE(config->pcie.atomic_completer32());
  EXPECT_TRUE(config->pcie.atomic_completer64());
  EXPECT_TRUE(config->pcie.atomic_cas128());
  EXPECT_EQ(speed_from_code(config->pcie.link_status & 0xf), 16.0);
  EXPECT_EQ((config->pcie.link_status >> 4) & 0x3f, 16);
  EXPECT_EQ(speed_from_code(config->pcie.link_caps & 0xf), 32.0);
}

TEST(PcieConfig, ReadsEachAtomicOpBitOnItsOwn) {
  for (std::uint32_t bit : {0x40u, 0x80u, 0x100u, 0x200u}) {
    FakeFunction f = chipset_root_port;
    f.devcap2 = bit;
    auto config = parse_config_space(config_bytes(f));
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->pcie.atomic_routing(), bit == 0x40);
    EXPECT_EQ(config->pcie.atomic_completer32(), bit == 0x80);
    EXPECT_EQ(config->pcie.atomic_completer64(), bit == 0x100);
    EXPECT_EQ(config->pcie.atomic_cas128(), bit == 0x200);
  }
}

TEST(PcieConfig, SixtyFourBytesLeaveTheCapabilityUnreadable) {
  auto config = parse_config_space(config_bytes(chipset_root_port, 64));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->readable_bytes, 64u);
  EXPECT_EQ(config->vendor_id, 0x8086);  // the header is still there
  EXPECT_EQ(config->pcie_lookup, CapabilityLookup::unreadable);
}

TEST(PcieConfig, CapabilityCutShortIsUnreadableNotAbsent) {
  // 0x64 + 0x2c = 0x90 bytes are needed to reach Device Control 2.
  auto config = parse_config_space(config_bytes(chipset_root_port, 0x80));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->pcie_lookup, CapabilityLookup::unreadable);
}

TEST(PcieConfig, NoCapabilityListMeansAbsent) {
  auto bytes = config_bytes(chipset_root_port);
  bytes[0x06] = 0;  // status: no capability list
  auto config = parse_config_space(bytes);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->pcie_lookup, CapabilityLookup::absent);
}

TEST(PcieConfig, LoopingListEndsAsAbsent) {
  auto bytes = config_bytes(chipset_root_port);
  bytes[0x51] = 0x48;  // power management points back at the vendor capability
  auto config = parse_config_space(bytes);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->pcie_lookup, CapabilityLookup::absent);
}

TEST(PcieConfig, VersionOneCapabilityHasNoDeviceCapabilities2) {
  FakeFunction f = cpu_root_port;
  auto config = parse_config_space(config_bytes(f, 4096, /*pcie_version=*/1));
  ASSERT_TRUE(config.ok());
  ASSERT_EQ(config->pcie_lookup, CapabilityLookup::found);
  EXPECT_EQ(config->pcie.device_caps2, 0u);
}

TEST(PcieConfig, TooShortIsAnError) {
  std::vector<std::uint8_t> bytes(8, 0);
  auto config = parse_config_space(bytes);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("8 bytes"), std::string::npos);
}

TEST(PcieLink, ParsesSysfsSpeedsOldAndNew) {
  EXPECT_EQ(parse_link_speed("16.0 GT/s PCIe"), 16.0);
  EXPECT_EQ(parse_link_speed("8 GT/s"), 8.0);
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_FALSE(parse_link_speed("Unknown"));
  EXPECT_FALSE(parse_link_speed(""));
  EXPECT_EQ(parse_link_width("16"), 16);
  EXPECT_FALSE(parse_link_width("0"));
  EXPECT_FALSE(parse_link_width("junk"));
}

TEST(PcieLink, BandwidthAfterLineEncoding) {
  EXPECT_NEAR(link_gbytes_per_s(8.0, 4), 3.94, 0.01);    // Gen3 x4
  EXPECT_NEAR(link_gbytes_per_s(16.0, 16), 31.5, 0.05);  // Gen4 x16
  EXPECT_NEAR(link_gbytes_per_s(2.5, 1), 0.25, 1e-9);    // 8b/10b
  EXPECT_EQ(describe_link(8.0, 4), "8.0 GT/s x4 (≈3.9 GB/s)");
}

}  // namespace
}  // namespace switchyard::doctor
