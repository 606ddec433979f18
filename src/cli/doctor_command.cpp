// `switchyard doctor`: flags in, DoctorOptions out; the work is in src/doctor.
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "doctor/doctor.h"
#include "http/fetch.h"

namespace switchyard::cli {
namespace {

struct DoctorFlags {
  std::string sysfs_root = "/sys";
  std::vector<std::string> urls;
  std::string fleet_config;
  std::string key;
  double interval_s = 3.0;
  double timeout_s = 5.0;
  int max_num_seqs = 0;
  bool json = false;
  bool no_nvidia_smi = false;
  CLI::Option* max_num_seqs_option = nullptr;
};

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

}  // namespace

Command add_doctor_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "doctor",
      "Check the box (PCIe links, atomics, P2P, sensors) and the backends' metrics, and say what "
      "is wrong. Exit 0: nothing wrong; 1: warnings; 2: bad input.");
  auto flags = std::make_shared<DoctorFlags>();

  sub->add_option("--sysfs-root", flags->sysfs_root,
                  "Directory standing in for /sys (e.g. a copy of another machine's)")
      ->capture_default_str();
  CLI::Option* url = sub->add_option(
      "--url", flags->urls,
      "Backend to check, http://host:port (repeatable); a Switchyard gateway stands for its "
      "instances");
  CLI::Option* config = sub->add_option(
      "-c,--config", flags->fleet_config,
      "Fleet config: check every instance in it (supervised ones through the running gateway "
      "at its listen address)");
  url->excludes(config);
  sub->add_option("--key", flags->key,
                  "API key of a Switchyard gateway, for the instances its /health lists");
  sub->add_option("--interval", flags->interval_s,
                  "Seconds between the two scrapes of each backend")
      ->capture_default_str();
  sub->add_option("--timeout", flags->timeout_s, "Seconds allowed for each request")
      ->capture_default_str();
  flags->max_num_seqs_option = sub->add_option(
      "--max-num-seqs", flags->max_num_seqs,
      "The engines' --max-num-seqs, for the exact vLLM KV-fit check (vLLM does not publish it)");
  sub->add_flag("--json", flags->json, "Print JSON instead of text (fields: docs/doctor.md)");
  sub->add_flag("--no-nvidia-smi", flags->no_nvidia_smi, "Do not run nvidia-smi topo -m");

  return Command{sub, [flags] {
                   doctor::DoctorOptions options;
                   options.sysfs_root = flags->sysfs_root;
                   options.urls = flags->urls;
                   options.fleet_config = flags->fleet_config;
                   if (!flags->key.empty()) options.key = flags->key;
                   options.interval = to_ms(flags->interval_s);
                   options.timeout = to_ms(flags->timeout_s);
                   if (flags->max_num_seqs_option->count() > 0) {
                     options.max_num_seqs = flags->max_num_seqs;
                   }
                   options.json = flags->json;
                   options.run_nvidia_smi = !flags->no_nvidia_smi;
                   return doctor::run_doctor(options, http::fetch, std::cout, std::cerr);
                 }};
}

}  // namespace switchyard::cli
