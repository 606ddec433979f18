#include "doctor/gpu_matrix.h"

#include <gtest/gtest.h>

#include <sstream>

#include "../support.h"
#include "doctor/doctor_report.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using namespace switchyard::testing_support;

using fixture::SysfsTree;

BoxScan scan(const SysfsTree& tree) {
  auto s = scan_box(tree.root());
  EXPECT_TRUE(s.ok());
  return s.value();
}

// The field box: one card on the CPU's root port, one on the chipset's.
TEST(GpuMatrix, FieldBoxPairCrossesTheChipsetWithoutAtomics) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  tree.add_drm("0000:03:00.0", 1);
  tree.add_drm("0000:06:00.0", 2);
  const BoxScan box = scan(tree);
  const GpuMatrix m = gpu_matrix(box);
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].address, "0000:03:00.0");
  EXPECT_EQ(m.gpus[0].runtime, "HIP");
  EXPECT_EQ(m.gpus[0].index, 0);
  EXPECT_EQ(m.gpus[1].index, 1);
  EXPECT_EQ(m.gpus[0].render_node, "/dev/dri/renderD129");
  EXPECT_EQ(m.gpus[1].render_node, "/dev/dri/renderD130");
  ASSERT_EQ(m.pairs.size(), 1u);
  const GpuPair& p = m.pairs[0];
  EXPECT_EQ(p.path, PairPath::chipset);
  EXPECT_EQ(p.peer_to_peer.ok, false);
  EXPECT_EQ(p.atomics.ok, false);
  EXPECT_TRUE(contains(p.atomics.why, "0000:06:00.0")) << p.atomics.why;

  DoctorReport report;
  report.box = box;
  std::ostringstream out;
  write_text(report, out);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "GPU x GPU (like nvidia-smi topo -m)")) << text;
  EXPECT_TRUE(contains(text, "    GPU0  X     CS    0000:03:00.0  HIP 0  /dev/dri/renderD129"))
      << text;
  EXPECT_TRUE(contains(text, "    GPU1  CS    X     0000:06:00.0  HIP 1  /dev/dri/renderD130"))
      << text;
  EXPECT_TRUE(contains(text, "GPU0-GPU1  through the chipset")) << text;
  const auto j = to_json(report);
  EXPECT_EQ(j.at("gpu_matrix").at("pairs").as_array()[0].at("path").as_string(), "CS");
  EXPECT_EQ(j.at("gpu_matrix").at("gpus").as_array()[1].at("index").as_int64(), 1);
}

// Four cards on CPU root ports of one host bridge; KFD decides the HIP order
// and the peer-to-peer verdict.
TEST(GpuMatrix, R9700BoxPairsAcrossRootPortsWithKfdOrderAndP2p) {
  SysfsTree tree;
  fixture::add_r9700_box(tree);
  // GPUs at buses 03, 06, 09, 0c; KFD numbers them in another order.
  const int location[] = {0x0c00, 0x0300, 0x0600, 0x0900};
  tree.add_kfd_node(0, "cpu_cores_count 16\nsimd_count 0\n");
  for (int n = 1; n <= 4; ++n)
    tree.add_kfd_node(n,
                      "simd_count 128\ngfx_target_version 120001\nvendor_id 4098\n"
                      "device_id 30033\nlocation_id " +
                          std::to_string(location[n - 1]) + "\ndomain 0\n");
  tree.add_kfd_link(2, 1, "type 2\nnode_from 2\nnode_to 3\nflags 1\n");   // 03 → 06: P2P
  tree.add_kfd_link(2, 2, "type 2\nnode_from 2\nnode_to 4\nflags 17\n");  // 03 → 09: none
  const GpuMatrix m = gpu_matrix(scan(tree));
  ASSERT_EQ(m.gpus.size(), 4u);
  EXPECT_EQ(m.gpus[0].address, "0000:03:00.0");
  EXPECT_EQ(m.gpus[0].index, 1);  // KFD node 2; node 1 is bus 0c
  EXPECT_EQ(m.gpus[3].address, "0000:0c:00.0");
  EXPECT_EQ(m.gpus[3].index, 0);
  EXPECT_EQ(m.gpus[0].order, "KFD node order");
  EXPECT_EQ(m.pairs.size(), 6u);
  EXPECT_EQ(m.pair(0, 1)->path, PairPath::host_bridge);
  EXPECT_EQ(m.pair(0, 1)->peer_to_peer.ok, true);
  EXPECT_EQ(m.pair(0, 2)->peer_to_peer.ok, false);
  EXPECT_TRUE(contains(m.pair(0, 2)->peer_to_peer.why, "no peer-to-peer"));
  EXPECT_EQ(m.pair(0, 1)->atomics.ok, true);
}

}  // namespace
}  // namespace switchyard::doctor
