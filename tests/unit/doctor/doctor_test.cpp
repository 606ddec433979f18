#include "doctor/doctor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include "../support.h"
#include "doctor/box_scan.h"
#include "fake_fetch.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using namespace switchyard::testing_support;

using namespace std::chrono_literals;

struct Outcome {
  int exit_code;
  std::string out;
  std::string err;
};

Outcome run(DoctorOptions options, fixture::FakeFetch* fake = nullptr) {
  options.run_nvidia_smi = false;
  fixture::FakeFetch none;
  std::ostringstream out, err;
  const int code = run_doctor(options, (fake ? fake : &none)->fetcher(), out, err);
  return {code, out.str(), err.str()};
}

TEST(Doctor, FieldBoxWarnsAndExitsOne) {
  fixture::SysfsTree tree;
  fixture::add_field_box(tree);
  DoctorOptions options;
  options.sysfs_root = tree.root();
  const Outcome r = run(options);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "GPU 0000:06:00.0  Radeon RX 7900 XT / 7900 XTX / 7900 GRE (Navi 31) "
                       "[1002:744c] gfx1100"))
      << r.out;
  // Lines wrap at 100 columns; match within one line.
  EXPECT_TRUE(
      contains(r.out, "path      chipset root port 0000:00:1c.0 → card switch 0000:04:00.0"))
      << r.out;
  EXPECT_TRUE(
      contains(r.out, "WARNING  GPU 0000:06:00.0 sits behind chipset root port 0000:00:1c.0,"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2 warnings, 1 note: exit 1")) << r.out;
}

TEST(Doctor, JsonCarriesTheSameVerdicts) {
  fixture::SysfsTree tree;
  fixture::add_field_box(tree);
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.json = true;
  const Outcome r = run(options);
  EXPECT_EQ(r.exit_code, 1);
  boost::system::error_code ec;
  const auto doc = boost::json::parse(r.out, ec);
  ASSERT_FALSE(ec) << r.out;
  const auto& o = doc.as_object();
  EXPECT_EQ(o.at("exit_code").as_int64(), 1);
  EXPECT_EQ(o.at("summary").at("warnings").as_int64(), 2);
  const auto& gpus = o.at("gpus").as_array();
  ASSERT_EQ(gpus.size(), 2u);
  const auto& chipset = gpus[1].as_object();
  EXPECT_EQ(chipset.at("address").as_string(), "0000:06:00.0");
  EXPECT_EQ(chipset.at("attachment").as_string(), "chipset");
  EXPECT_EQ(chipset.at("root_port").as_string(), "0000:00:1c.0");
  EXPECT_EQ(chipset.at("atomics").at("state").as_string(), "missing");
  EXPECT_EQ(chipset.at("narrowest_link").at("width").as_int64(), 4);
  EXPECT_EQ(chipset.at("card_max").at("gts").as_double(), 16.0);
  EXPECT_EQ(chipset.at("path").as_array()[0].at("atomic_ops").at("completer32").as_bool(), false);
  EXPECT_EQ(gpus[0].at("sensors").at("power_cap_w").as_double(), 327.0);
  bool atomics_warning = false;
  for (const auto& f : o.at("findings").as_array()) {
    atomics_warning = atomics_warning || (f.at("check").as_string() == "pcie.atomics" &&
                                          f.at("severity").as_string() == "warning");
  }
  EXPECT_TRUE(atomics_warning);
}

TEST(Doctor, FourR9700BoxHasOnlyNotes) {
  fixture::SysfsTree tree;
  fixture::add_r9700_box(tree);
  DoctorOptions options;
  options.sysfs_root = tree.root();
  const Outcome r = run(options);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "vllm-project/vllm#40980")) << r.out;
}

TEST(Doctor, ThisMachineWithoutGpusIsCalm) {
  auto scan = scan_box("/sys");
  ASSERT_TRUE(scan.ok());
  if (!scan->gpus.empty()) GTEST_SKIP() << "this machine has GPUs";
  DoctorOptions options;  // the real /sys
  const Outcome r = run(options);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  if (scan->pci_visible) {
    EXPECT_TRUE(contains(r.out, "No GPU found on the PCI bus")) << r.out;
  } else {
    EXPECT_TRUE(contains(r.out, "No PCI bus is visible")) << r.out;
  }
  EXPECT_TRUE(contains(r.out, "0 warnings")) << r.out;
}

TEST(Doctor, BadInputExitsTwoWithOneLineNamingTheFlag) {
  DoctorOptions no_root;
  no_root.sysfs_root = "/nonexistent/sys";
  Outcome r = run(no_root);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "--sysfs-root /nonexistent/sys: not a directory\n");
  EXPECT_TRUE(r.out.empty());

  fixture::SysfsTree tree;
  DoctorOptions bad_url;
  bad_url.sysfs_root = tree.root();
  bad_url.urls = {"https://10.0.0.5:8080"};
  r = run(bad_url);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "--url https://10.0.0.5:8080: expected http://host:port (TLS is not supported)\n");

  DoctorOptions bad_fleet;
  bad_fleet.sysfs_root = tree.root();
  bad_fleet.fleet_config = "/nonexistent/fleet.yaml";
  r = run(bad_fleet);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "-c /nonexistent/fleet.yaml: cannot read the file\n");

  DoctorOptions both = bad_fleet;
  both.urls = {"http://127.0.0.1:8000"};
  r = run(both);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--url and -c")) << r.err;

  DoctorOptions negative;
  negative.sysfs_root = tree.root();
  negative.interval = -1ms;
  r = run(negative);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--interval")) << r.err;
}

TEST(Doctor, BackendWarningsSetTheExitCode) {
  fixture::SysfsTree tree;  // no PCI bus: only the backend speaks
  fixture::FakeFetch fake;
  const std::string url = "http://127.0.0.1:8000";
  fake.answer(url + "/metrics", 200, "vllm:num_preemptions_total{model_name=\"m\"} 10\n");
  fake.answer(url + "/metrics", 200, "vllm:num_preemptions_total{model_name=\"m\"} 14\n");
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.urls = {url + "/"};
  options.interval = 10ms;
  const Outcome r = run(options, &fake);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "http://127.0.0.1:8000  vllm")) << r.out;
  // The verdict names the backend it is about.
  EXPECT_TRUE(contains(r.out, "WARNING  http://127.0.0.1:8000: vLLM preempted 4 requests"))
      << r.out;
}

TEST(Doctor, FleetConfigChecksUrlsAndNamesWhatItSkips) {
  fixture::SysfsTree tree;
  std::string path = (tree.root() / "fleet.yaml").string();
  std::ofstream(path) << "instances:\n"
                         "  - name: ext\n    url: http://127.0.0.1:8080\n"
                         "  - name: card1\n    command: llama-server --port ${PORT}\n";
  fixture::FakeFetch fake;
  fake.answer("http://127.0.0.1:8080/metrics", 200,
              "llamacpp:tokens_predicted_total 5\nllamacpp:predicted_tokens_seconds 50\n"
              "llamacpp:requests_processing 0\n");
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.fleet_config = path;
  options.interval = 0ms;
  const Outcome r = run(options, &fake);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "http://127.0.0.1:8080  llama.cpp")) << r.out;
  EXPECT_TRUE(contains(r.out, "Instance card1 is supervised")) << r.out;
}

// Nine requests at 0.1 s and one at 30 s in the window: mean 3.09 s, p90 0.10 s (rank 9 of 10
// lands at the top of the 0.1 s bucket). Doctor says why the mean is above the p90.
TEST(Doctor, TtftMeanAboveP90IsExplained) {
  fixture::SysfsTree tree;
  fixture::FakeFetch fake;
  const std::string url = "http://127.0.0.1:8000";
  auto histogram = [](int fast, int slow, double sum) {
    return fmt::format(
        "vllm:num_requests_running{{model_name=\"m\"}} 0\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} {}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"1.0\"}} {}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"40.0\"}} {}\n"
        "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {}\n"
        "vllm:time_to_first_token_seconds_sum {}\n"
        "vllm:time_to_first_token_seconds_count {}\n",
        fast, fast, fast + slow, fast + slow, sum, fast + slow);
  };
  fake.answer(url + "/metrics", 200, histogram(0, 0, 0));
  fake.answer(url + "/metrics", 200, histogram(9, 1, 30.9));
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.urls = {url};
  options.interval = 0ms;
  const Outcome r = run(options, &fake);
  EXPECT_TRUE(contains(r.out, "TTFT mean 3.09 s")) << r.out;
  EXPECT_TRUE(contains(r.out, "TTFT p90 0.10 s")) << r.out;
  EXPECT_TRUE(contains(r.out, "TTFT mean 3.09 s is above its p90 0.10 s")) << r.out;
  EXPECT_TRUE(contains(r.out, "the slowest 10% averaged at least 30.00 s")) << r.out;
}

}  // namespace
}  // namespace switchyard::doctor
