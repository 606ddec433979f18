#include "doctor/box_verdicts.h"

#include <gtest/gtest.h>

#include "../support.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using namespace switchyard::testing_support;

using fixture::SysfsTree;

std::vector<Finding> judge(const SysfsTree& tree) {
  auto scan = scan_box(tree.root());
  EXPECT_TRUE(scan.ok());
  return judge_box(scan.value());
}

std::vector<const Finding*> find(const std::vector<Finding>& findings, const std::string& check,
                                 const std::string& subject = "") {
  std::vector<const Finding*> found;
  for (const auto& f : findings) {
    if (f.check == check && (subject.empty() || f.subject == subject)) found.push_back(&f);
  }
  return found;
}

TEST(BoxScan, FieldBoxHasTwoKnownGpusWithSensors) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  auto scan = scan_box(tree.root());
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->gpus.size(), 2u);  // the HDMI audio functions are not GPUs
  EXPECT_EQ(scan->gpus[0].path.gpu().address, "0000:03:00.0");
  ASSERT_NE(scan->gpus[0].model, nullptr);
  EXPECT_EQ(scan->gpus[0].gfx, "gfx1100");
  ASSERT_TRUE(scan->gpus[0].sensors);
  EXPECT_EQ(describe_sensors(*scan->gpus[0].sensors), "edge 45 °C, 61 W of 327 W, sclk 2482 MHz");
}

TEST(BoxVerdicts, FieldBoxChipsetCardGetsTheAtomicsAndLinkWarnings) {
  SysfsTree tree;
  fixture::add_field_box(tree);
  const auto findings = judge(tree);

  auto atomics = find(findings, "pcie.atomics");
  ASSERT_EQ(atomics.size(), 1u);
  EXPECT_EQ(atomics[0]->severity, Severity::warning);
  EXPECT_EQ(atomics[0]->subject, "0000:06:00.0");
  const std::string& a = atomics[0]->message;
  EXPECT_TRUE(contains(a,
                       "GPU 0000:06:00.0 sits behind chipset root port 0000:00:1c.0, which has "
                       "no AtomicOp completer"))
      << a;
  EXPECT_TRUE(contains(a, "Routing- 32bit- 64bit- 128bitCAS-")) << a;
  EXPECT_TRUE(contains(a, "fail at the first collective (HIP error 401")) << a;
  EXPECT_TRUE(contains(a,
                       "Run one instance per card, or llama.cpp's --split-mode layer (vLLM's "
                       "pipeline parallel runs RCCL collectives too)."))
      << a;

  auto links = find(findings, "pcie.link");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0]->severity, Severity::warning);
  EXPECT_EQ(links[0]->subject, "0000:06:00.0");
  const std::string& l = links[0]->message;
  EXPECT_TRUE(contains(l,
                       "trained at 8.0 GT/s x4 (≈3.9 GB/s) though the card is capable of "
                       "16.0 GT/s x16 (≈31.5 GB/s): cross-card traffic will dominate a split"))
      << l;
  EXPECT_TRUE(contains(l, "chipset root port 0000:00:1c.0, which itself tops out at 8.0 GT/s x4"))
      << l;

  auto p2p = find(findings, "pcie.p2p");
  ASSERT_EQ(p2p.size(), 1u);
  EXPECT_EQ(p2p[0]->severity, Severity::note);
  EXPECT_TRUE(contains(p2p[0]->message, "0000:06:00.0 under chipset root port 0000:00:1c.0"));

  EXPECT_EQ(count_findings(findings, Severity::warning), 2);
  EXPECT_TRUE(find(findings, "known.vllm-tp-gfx1201").empty());
}

TEST(BoxVerdicts, NonRootSaysWhatItCouldNotCheck) {
  SysfsTree tree(64);
  fixture::add_field_box(tree);
  const auto findings = judge(tree);

  auto atomics = find(findings, "pcie.atomics");
  ASSERT_EQ(atomics.size(), 2u);  // neither card's path could be checked
  for (const Finding* f : atomics) {
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(contains(f->message, "Could not check PCIe AtomicOps")) << f->message;
    EXPECT_TRUE(contains(f->message, "first 64 bytes of config space")) << f->message;
    EXPECT_TRUE(contains(f->message, "Rerun as root (sudo switchyard doctor)")) << f->message;
  }
  EXPECT_TRUE(contains(atomics[1]->message,
                       "root port 0000:00:1c.0, card switch port 0000:04:00.0 and card switch "
                       "port 0000:05:00.0"))
      << atomics[1]->message;
  // The link check needs no root.
  EXPECT_EQ(find(findings, "pcie.link", "0000:06:00.0").size(), 1u);
}

TEST(BoxVerdicts, KfdFlagsAnswerTheAtomicsQuestionWithoutRoot) {
  SysfsTree tree(64);
  fixture::add_field_box(tree);
  // Node 0 is the CPU; GPU nodes carry domain and location_id (bus << 8 | devfn).
  tree.add_kfd_node(0, "cpu_cores_count 20\nsimd_count 0\n");
  tree.add_kfd_node(1,
                    "simd_count 192\ngfx_target_version 110000\nvendor_id 4098\n"
                    "device_id 29772\nlocation_id 768\ndomain 0\n");
  tree.add_kfd_node(2,
                    "simd_count 192\ngfx_target_version 110000\nvendor_id 4098\n"
                    "device_id 29772\nlocation_id 1536\ndomain 0\n");
  tree.add_kfd_link(1, 0, "type 2\nnode_from 1\nnode_to 0\nflags 1\n");
  tree.add_kfd_link(2, 0, "type 2\nnode_from 2\nnode_to 0\nflags 13\n");  // no atomics 32+64
  tree.add_kfd_link(1, 1, "type 2\nnode_from 1\nnode_to 2\nflags 17\n");  // no P2P
  const auto findings = judge(tree);

  auto cpu_card = find(findings, "pcie.atomics", "0000:03:00.0");
  ASSERT_EQ(cpu_card.size(), 1u);
  EXPECT_EQ(cpu_card[0]->severity, Severity::note);
  EXPECT_TRUE(contains(cpu_card[0]->message, "enabled PCIe atomics")) << cpu_card[0]->message;

  auto chipset_card = find(findings, "pcie.atomics", "0000:06:00.0");
  ASSERT_EQ(chipset_card.size(), 1u);
  EXPECT_EQ(chipset_card[0]->severity, Severity::warning);
  EXPECT_TRUE(contains(chipset_card[0]->message, "disabled PCIe atomics for GPU 0000:06:00.0"));
  EXPECT_TRUE(contains(chipset_card[0]->message, "HIP error 401"));

  bool kfd_p2p = false;
  for (const Finding* f : find(findings, "pcie.p2p")) {
    kfd_p2p = kfd_p2p || contains(f->message,
                                  "KFD reports no peer-to-peer DMA between GPU "
                                  "0000:03:00.0 and GPU 0000:06:00.0");
  }
  EXPECT_TRUE(kfd_p2p);
}

TEST(BoxVerdicts, FourR9700OnX8LinksGetNotesNotWarnings) {
  SysfsTree tree;
  fixture::add_r9700_box(tree);
  auto scan = scan_box(tree.root());
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->gpus.size(), 4u);
  EXPECT_EQ(scan->gpus[0].gfx, "gfx1201");
  const auto findings = judge_box(*scan);

  EXPECT_EQ(count_findings(findings, Severity::warning), 0);
  EXPECT_TRUE(find(findings, "pcie.atomics").empty());
  auto links = find(findings, "pcie.link");
  ASSERT_EQ(links.size(), 4u);
  EXPECT_EQ(links[0]->severity, Severity::note);
  EXPECT_TRUE(contains(links[0]->message,
                       "trained at 32.0 GT/s x8 (≈31.5 GB/s) though the card "
                       "is capable of 32.0 GT/s x16 (≈63.0 GB/s)"))
      << links[0]->message;
  EXPECT_TRUE(contains(links[0]->message, "gets 50% of what the card could carry"))
      << links[0]->message;
  EXPECT_TRUE(contains(links[0]->message, "a slot limit")) << links[0]->message;

  auto known = find(findings, "known.vllm-tp-gfx1201");
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0]->severity, Severity::note);
  EXPECT_TRUE(contains(known[0]->message, "4 gfx1201 GPUs (Radeon AI PRO R9700"));
  EXPECT_TRUE(contains(known[0]->message, "vllm-project/vllm#40980"));
  EXPECT_TRUE(contains(known[0]->message, "ROCm/rocm-systems#5480"));
}

TEST(BoxVerdicts, IdleSpeedDropIsOnlyANote) {
  SysfsTree tree;
  tree.add({"0000:00:01.0", "", 0x8086, 0xa70d, fixture::bridge_class, PortType::root_port,
            fixture::all_atomics, 0, 2.5, 16, 16.0, 16});
  fixture::add_navi_card(tree, "0000:00:01.0", 0x01, 0x744c, 16.0, 2.5, 16);
  const auto findings = judge(tree);
  auto links = find(findings, "pcie.link");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0]->severity, Severity::note);
  EXPECT_TRUE(contains(links[0]->message, "rerun doctor under load")) << links[0]->message;
  EXPECT_EQ(count_findings(findings, Severity::warning), 0);
}

TEST(BoxVerdicts, NarrowTrainingBelowWhatThePortSupportsIsAWarning) {
  SysfsTree tree;
  tree.add({"0000:00:01.0", "", 0x8086, 0xa70d, fixture::bridge_class, PortType::root_port,
            fixture::all_atomics, 0, 16.0, 4, 16.0, 16});
  fixture::add_navi_card(tree, "0000:00:01.0", 0x01, 0x744c, 16.0, 16.0, 4);
  const auto findings = judge(tree);
  auto links = find(findings, "pcie.link");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0]->severity, Severity::warning);
  EXPECT_TRUE(contains(links[0]->message, "trained x4 though it supports x16: reseat the card"))
      << links[0]->message;
  EXPECT_TRUE(contains(links[0]->message, "loading weights")) << links[0]->message;  // one GPU
}

TEST(BoxVerdicts, NoGpuIsSaidCalmly) {
  SysfsTree tree;
  tree.add({"0000:00:00.0", "", 0x8086, 0xa700, 0x060000});
  tree.add({"0000:00:03.0", "", 0x1af4, 0x1041, 0x020000});
  const auto findings = judge(tree);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "box.no_gpu");
  EXPECT_EQ(findings[0].severity, Severity::note);
}

TEST(BoxVerdicts, NoPciBusIsSaidCalmly) {
  SysfsTree tree;
  const auto findings = judge(tree);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "box.no_pci");
  EXPECT_EQ(findings[0].severity, Severity::note);
}

TEST(GpuModels, GfxNamesFromKfdVersions) {
  EXPECT_EQ(gfx_name(110000), "gfx1100");
  EXPECT_EQ(gfx_name(120001), "gfx1201");
  EXPECT_EQ(gfx_name(90010), "gfx90a");
  EXPECT_EQ(gfx_name(0), "");
  ASSERT_NE(find_gpu_model(0x1002, 0x7551), nullptr);
  EXPECT_EQ(find_gpu_model(0x1002, 0x7551)->gfx, "gfx1201");
  EXPECT_EQ(find_gpu_model(0x1002, 0x1234), nullptr);
}

}  // namespace
}  // namespace switchyard::doctor
