// The cards' memory as serve reads it when fleet.yaml declares no `gpus:`: a
// fake sysfs with amdgpu's KFD topology, nvidia-smi's CSV, and the config that
// adopts them only when they cover every GPU its instances name.
#include "doctor/card_memory.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cli/fleet_memory.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using fixture::SysfsTree;

constexpr std::uint64_t GiB = 1ull << 30;

// The field box's two 7900 XTX (GPU functions 0000:03:00.0 and 0000:06:00.0)
// as KFD nodes 1 and 2 after the CPU's node 0, with `vram` bytes each.
void add_kfd_cards(SysfsTree& tree, std::uint64_t vram) {
  fixture::add_field_box(tree);
  tree.add_kfd_node(0, "cpu_cores_count 20\nsimd_count 0\n");
  tree.add_kfd_node(1, "simd_count 192\nlocation_id 768\ndomain 0\n");
  tree.add_kfd_node(2, "simd_count 192\nlocation_id 1536\ndomain 0\n");
  for (const char* address : {"0000:03:00.0", "0000:06:00.0"})
    std::ofstream(tree.device_dir(address) / "mem_info_vram_total") << vram << "\n";
}

TEST(CardMemory, AmdCardsAreTheKfdGpuNodesInOrderWithTheirVram) {
  SysfsTree tree(64);
  add_kfd_cards(tree, 24 * GiB);
  const auto cards = read_amd_card_memory(tree.root());
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[0].id, "0");
  EXPECT_EQ(cards[1].id, "1");
  EXPECT_EQ(cards[1].bytes, 24 * GiB);
  EXPECT_NE(cards[1].source.find("0000:06:00.0/mem_info_vram_total"), std::string::npos);
}

TEST(CardMemory, NoKfdTopologyNoAmdCards) {
  SysfsTree tree(64);
  fixture::add_field_box(tree);
  EXPECT_TRUE(read_amd_card_memory(tree.root()).empty());
}

TEST(CardMemory, NvidiaSmiCsvInMiB) {
  const auto cards = parse_nvidia_card_memory("0, 24576\n1, 24576\n");
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[1].id, "1");
  EXPECT_EQ(cards[1].bytes, 24 * GiB);
  EXPECT_TRUE(parse_nvidia_card_memory("0, [N/A]\n").empty());
  EXPECT_TRUE(parse_nvidia_card_memory("1, 24576\n").empty());  // an index missing
}

config::FleetConfig two_on_demand(const std::string& second_gpu) {
  config::FleetConfig config;
  for (const auto& [name, gpu] :
       {std::pair<std::string, std::string>{"coder", "0"}, {"vision", second_gpu}}) {
    config::InstanceConfig inst;
    inst.name = name;
    inst.gpus = gpu;
    config.instances.push_back(inst);
  }
  return config;
}

TEST(CardMemory, TheBoxsCardsBecomeTheConfigsWhenTheyCoverItsGpus) {
  const std::vector<CardMemory> box{{"0", 24 * GiB, "sysfs"}, {"1", 24 * GiB, "sysfs"}};
  auto config = two_on_demand("1");
  const auto line = cli::adopt_box_cards(config, box);
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("GPU 1 24.0 GiB (sysfs)"), std::string::npos) << *line;
  ASSERT_EQ(config.gpus.size(), 2u);
  EXPECT_EQ(config.gpus[1].memory, 24 * GiB);

  auto elsewhere = two_on_demand("2");
  EXPECT_NE(cli::adopt_box_cards(elsewhere, box)->find("instances name GPU 2"), std::string::npos);
  EXPECT_TRUE(elsewhere.gpus.empty());

  auto declared = two_on_demand("1");
  declared.gpus = {{"0", 16 * GiB}, {"1", 16 * GiB}};
  EXPECT_FALSE(cli::adopt_box_cards(declared, box));
  EXPECT_EQ(declared.gpus[0].memory, 16 * GiB);  // declared wins
}

}  // namespace
}  // namespace switchyard::doctor
