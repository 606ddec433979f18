// `switchyard doctor`: reads the box (PCIe links, AtomicOps, peer-to-peer,
// sensors) and the backends' metrics, and says what is wrong in plain words.
// The CLI verb (src/cli/doctor_command.cpp) only fills DoctorOptions.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "doctor/backend_probe.h"

namespace switchyard::doctor {

struct DoctorOptions {
  // What stands in for /sys. Default /sys; tests point it at a fixture tree.
  // nvidia-smi only runs when this is the real /sys.
  std::filesystem::path sysfs_root = "/sys";
  // Backends to check, http://host:port (no TLS). Exclusive with fleet_config.
  // A URL whose /health answers as a Switchyard gateway stands for the
  // instances it lists.
  std::vector<std::string> urls;
  // A fleet config: every instance `url` in it is checked; supervised
  // instances (command only) through the running gateway at its `listen`,
  // else skipped with a note. Empty: none.
  std::filesystem::path fleet_config;
  // An API key of the gateway (its /health lists instances only to a key
  // when api_keys are configured). Sent as a bearer token to gateways only.
  std::optional<std::string> key;
  // Time between the two scrapes of each backend. Default 3 s; must be >= 0.
  std::chrono::milliseconds interval{3000};
  // Per-request timeout for the scrapes. Default 5 s; must be > 0.
  std::chrono::milliseconds timeout{5000};
  // The engines' --max-num-seqs when known, for the exact vLLM KV-fit check.
  std::optional<int> max_num_seqs;
  // JSON on `out` instead of text.
  bool json = false;
  // Show `nvidia-smi topo -m` when NVIDIA GPUs are present and it exists.
  bool run_nvidia_smi = true;
};

// Validates the options once, runs every check and prints the report on
// `out`. Returns 0 when nothing is wrong, 1 when warnings were printed, 2 for
// bad input (one line on `err` naming the flag or file).
int run_doctor(const DoctorOptions& options, const Fetcher& fetch, std::ostream& out,
               std::ostream& err);

}  // namespace switchyard::doctor
