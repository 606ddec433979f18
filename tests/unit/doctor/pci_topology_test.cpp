#include "doctor/pci_topology.h"

#include <gtest/gtest.h>

#include "doctor/sysfs_pci.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using fixture::SysfsTree;

GpuPath path_of(const SysfsTree& tree, const std::string& address) {
  auto chain = read_pci_chain(tree.root(), address);
  EXPECT_TRUE(chain.ok()) << (chain.ok() ? "" : chain.error().message);
  return analyze_gpu_path(std::move(chain.value()));
}

TEST(SysfsPci, ListsAddressesAndFollowsTheSymlinkUpToTheRootPort) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  auto addresses = list_pci_addresses(tree.root());
  ASSERT_TRUE(addresses);
  EXPECT_EQ(addresses->size(), 12u);
  EXPECT_EQ(addresses->front(), "0000:00:00.0");

  auto chain = read_pci_chain(tree.root(), "0000:06:00.0");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->device.vendor_id, 0x1002);
  EXPECT_EQ(chain->device.device_id, 0x744c);
  EXPECT_TRUE(is_gpu(chain->device));
  ASSERT_EQ(chain->upstream.size(), 3u);
  EXPECT_EQ(chain->upstream[0].address, "0000:00:1c.0");
  EXPECT_EQ(chain->upstream[1].address, "0000:04:00.0");
  EXPECT_EQ(chain->upstream[2].address, "0000:05:00.0");
  EXPECT_EQ(chain->upstream[0].link.current_gts, 8.0);
  EXPECT_EQ(chain->upstream[0].link.max_width, 4);
}

TEST(SysfsPci, RecognisesAddresses) {
  EXPECT_TRUE(is_pci_address("0000:06:00.0"));
  EXPECT_TRUE(is_pci_address("10000:e0:06.0"));  // behind Intel VMD
  EXPECT_FALSE(is_pci_address("pci0000:00"));
  EXPECT_FALSE(is_pci_address("0000:06:00.8"));
  EXPECT_FALSE(is_pci_address("0000:0g:00.0"));
  EXPECT_EQ(pci_bus("0000:06:1c.0"), 0x06u);
  EXPECT_EQ(pci_device("0000:06:1c.0"), 0x1cu);
  EXPECT_EQ(pci_bus("10000:e0:06.0"), 0xe0u);
  EXPECT_EQ(pci_device("10000:e0:06.0"), 0x06u);
}

TEST(SysfsPci, MissingBusIsNotAnError) {
  SysfsTree tree;
  EXPECT_FALSE(list_pci_addresses(tree.root()));
}

TEST(SysfsPci, OnlyDisplayFunctionsFromGpuVendorsAreGpus) {
  PciFunction f;
  f.vendor_id = 0x1002;
  f.class_code = 0x030000;
  EXPECT_TRUE(is_gpu(f));
  f.class_code = 0x040300;  // HDMI audio on the same card
  EXPECT_FALSE(is_gpu(f));
  f.class_code = 0x120000;  // Instinct
  EXPECT_TRUE(is_gpu(f));
  f.vendor_id = 0x8086;  // an Intel NPU reports class 0x12 too
  EXPECT_FALSE(is_gpu(f));
  f.vendor_id = 0x1a03;  // a BMC's VGA
  f.class_code = 0x030000;
  EXPECT_FALSE(is_gpu(f));
}

TEST(PciTopology, FieldBoxChipsetCardIsNarrowAndLacksAtomics) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  GpuPath path = path_of(tree, "0000:06:00.0");

  ASSERT_EQ(path.hops.size(), 4u);
  EXPECT_EQ(path.hops[0].role, HopRole::root_port);
  EXPECT_EQ(path.hops[1].role, HopRole::card_bridge);
  EXPECT_EQ(path.hops[2].role, HopRole::card_bridge);
  EXPECT_EQ(path.hops[3].role, HopRole::gpu);
  EXPECT_EQ(path.root.attachment, Attachment::chipset);
  EXPECT_NE(path.root.reason.find("1c"), std::string::npos);

  ASSERT_TRUE(path.narrowest);
  EXPECT_EQ(path.narrowest->address, "0000:00:1c.0");
  EXPECT_EQ(path.narrowest->current.gts, 8.0);
  EXPECT_EQ(path.narrowest->current.width, 4);
  ASSERT_TRUE(path.card_max);
  EXPECT_EQ(path.card_max->gts, 16.0);
  EXPECT_EQ(path.card_max->width, 16);

  EXPECT_EQ(path.atomics.state, AtomicsState::missing);
  EXPECT_EQ(path.atomics.root_port_completes, false);
  EXPECT_EQ(path.atomics.root_port_bits, "Routing- 32bit- 64bit- 128bitCAS-");
}

TEST(PciTopology, FieldBoxCpuCardIsFullWidthWithAtomics) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  GpuPath path = path_of(tree, "0000:03:00.0");
  EXPECT_EQ(path.root.attachment, Attachment::cpu);
  ASSERT_TRUE(path.narrowest);
  EXPECT_EQ(path.narrowest->current.gts, 16.0);
  EXPECT_EQ(path.narrowest->current.width, 16);
  EXPECT_EQ(path.atomics.state, AtomicsState::ok);
  EXPECT_EQ(path.atomics.root_port_bits, "Routing+ 32bit+ 64bit+ 128bitCAS+");
}

TEST(PciTopology, NonRootSeesOnlySixtyFourBytesAndCannotCheck) {
  SysfsTree tree(64);
  fixture::add_field_box(tree);
  GpuPath path = path_of(tree, "0000:06:00.0");
  EXPECT_EQ(path.atomics.state, AtomicsState::unchecked);
  ASSERT_EQ(path.atomics.unreadable.size(), 3u);
  EXPECT_EQ(path.atomics.unreadable[0], "root port 0000:00:1c.0");
  EXPECT_EQ(path.atomics.unreadable[1], "card switch port 0000:04:00.0");
  // Links come from sysfs attributes, which everyone may read.
  ASSERT_TRUE(path.narrowest);
  EXPECT_EQ(path.narrowest->current.width, 4);
  EXPECT_EQ(path.root.attachment, Attachment::chipset);
}

TEST(PciTopology, SwitchPortWithoutRoutingFailsAtomics) {
  SysfsTree tree;
  tree.add({"0000:00:01.0", "", 0x8086, 0xa70d, fixture::bridge_class, PortType::root_port,
            fixture::all_atomics, 0, 16.0, 16, 16.0, 16});
  tree.add({"0000:01:00.0", "0000:00:01.0", 0x1002, 0x1478, fixture::bridge_class,
            PortType::upstream_port, 0x40, atomic_op::egress_blocking, 16.0, 16, 16.0, 16});
  tree.add({"0000:02:00.0", "0000:01:00.0", 0x1002, 0x1479, fixture::bridge_class,
            PortType::downstream_port, 0, 0, 16.0, 16, 16.0, 16});
  tree.add({"0000:03:00.0", "0000:02:00.0", 0x1002, 0x744c, fixture::vga_class, PortType::endpoint,
            0, 0, 16.0, 16, 16.0, 16});
  GpuPath path = path_of(tree, "0000:03:00.0");
  EXPECT_EQ(path.atomics.state, AtomicsState::missing);
  EXPECT_EQ(path.atomics.root_port_completes, true);
  ASSERT_EQ(path.atomics.failures.size(), 2u);
  EXPECT_EQ(path.atomics.failures[0], "card switch port 0000:01:00.0 blocks AtomicOps on egress");
  EXPECT_EQ(path.atomics.failures[1], "card switch port 0000:02:00.0 does not route AtomicOps");
}

TEST(PciTopology, AmdChipsetSwitchBelowCpuRootPortCountsAsChipset) {
  // AM5: the 600 Series chipset (1022:43f4 upstream, 1022:43f5 downstream) hangs
  // below CPU root port 00:02.1; a card in a chipset slot sits below it.
  SysfsTree tree;
  tree.add({"0000:00:02.1", "", 0x1022, 0x14db, fixture::bridge_class, PortType::root_port,
            fixture::all_atomics, 0, 16.0, 4, 16.0, 4});
  tree.add({"0000:05:00.0", "0000:00:02.1", 0x1022, 0x43f4, fixture::bridge_class,
            PortType::upstream_port, 0x40, 0, 16.0, 4, 16.0, 4});
  tree.add({"0000:06:08.0", "0000:05:00.0", 0x1022, 0x43f5, fixture::bridge_class,
            PortType::downstream_port, 0x40, 0, 16.0, 4, 16.0, 4});
  fixture::add_navi_card(tree, "0000:06:08.0", 0x07, 0x744c, 16.0, 16.0, 4);
  GpuPath path = path_of(tree, "0000:09:00.0");
  EXPECT_EQ(path.root.attachment, Attachment::chipset);
  EXPECT_NE(path.root.reason.find("1022:43f4"), std::string::npos);
  EXPECT_EQ(path.hops[1].role, HopRole::platform_bridge);
  EXPECT_EQ(path.hops[3].role, HopRole::card_bridge);
  EXPECT_EQ(path.atomics.state, AtomicsState::ok);
}

TEST(PciTopology, ClassifiesIntelRootPortsByDeviceNumber) {
  auto verdict = [](const std::string& address, std::uint16_t vendor) {
    PathHop root{{}, HopRole::root_port};
    root.function.address = address;
    root.function.vendor_id = vendor;
    PathHop gpu{{}, HopRole::gpu};
    return classify_root_port({root, gpu}).attachment;
  };
  EXPECT_EQ(verdict("0000:00:01.0", 0x8086), Attachment::cpu);
  EXPECT_EQ(verdict("0000:00:06.0", 0x8086), Attachment::cpu);
  EXPECT_EQ(verdict("0000:00:1a.0", 0x8086), Attachment::chipset);
  EXPECT_EQ(verdict("0000:00:1b.4", 0x8086), Attachment::chipset);
  EXPECT_EQ(verdict("0000:00:1c.4", 0x8086), Attachment::chipset);
  EXPECT_EQ(verdict("0000:00:1d.0", 0x8086), Attachment::chipset);
  EXPECT_EQ(verdict("0000:16:1c.0", 0x8086), Attachment::cpu);  // not bus 0: a Xeon's
  EXPECT_EQ(verdict("0000:00:01.1", 0x1022), Attachment::cpu);
  EXPECT_EQ(verdict("0000:00:01.0", 0x10b5), Attachment::unknown);
}

TEST(PciTopology, GpuOnTheRootBusIsIntegrated) {
  SysfsTree tree;
  tree.add({"0000:00:02.0", "", 0x8086, 0xa780, fixture::vga_class});
  GpuPath path = path_of(tree, "0000:00:02.0");
  EXPECT_EQ(path.root.attachment, Attachment::root_complex);
  EXPECT_EQ(path.root_port(), nullptr);
  EXPECT_EQ(path.atomics.state, AtomicsState::not_applicable);
  EXPECT_FALSE(path.narrowest);
}

}  // namespace
}  // namespace switchyard::doctor
