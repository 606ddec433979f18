#include "doctor/doctor.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <system_error>

#include "doctor/box_verdicts.h"
#include "doctor/doctor_report.h"
#include "doctor/fleet_targets.h"
#include "doctor/gateway_targets.h"
#include "doctor/nvidia_smi.h"

namespace switchyard::doctor {
namespace {

constexpr int exit_bad_input = 2;

// http://host[:port][/prefix] — what http::fetch can reach.
bool plausible_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  const std::string rest = url.substr(scheme.size());
  return !rest.empty() && rest.front() != '/' && rest.front() != ':';
}

bool is_real_sys(const std::filesystem::path& root) {
  std::error_code ec;
  return std::filesystem::equivalent(root, "/sys", ec);
}

void add_unique(std::vector<std::string>& urls, std::string url) {
  url = trim_slash(std::move(url));
  if (std::find(urls.begin(), urls.end(), url) == urls.end()) urls.push_back(std::move(url));
}

// A --url that is a Switchyard gateway stands for the instances behind it; anything else (an
// engine, an unreachable address) is checked as it is.
void expand_gateway(const std::string& url, const DoctorOptions& options, const Fetcher& fetch,
                    std::vector<std::string>& urls, std::vector<Finding>& notes) {
  const GatewayLookup gateway = lookup_gateway(url, options.key, fetch, options.timeout);
  if (!gateway.gateway) {
    add_unique(urls, url);
    return;
  }
  notes.push_back(gateway_finding(url, gateway, options.key.has_value()));
  for (const auto& inst : gateway.instances) {
    if (!inst.url.empty()) add_unique(urls, inst.url);
  }
}

// Supervised instances have no url in the file: the gateway running the config knows them.
void add_supervised(const FleetTargets& targets, const DoctorOptions& options, const Fetcher& fetch,
                    std::vector<std::string>& urls, std::vector<Finding>& notes) {
  if (targets.supervised.empty()) return;
  const std::string gateway_url = listen_url(targets.listen);
  const GatewayLookup gateway = lookup_gateway(gateway_url, options.key, fetch, options.timeout);
  if (gateway.gateway)
    notes.push_back(gateway_finding(gateway_url, gateway, options.key.has_value()));
  for (std::size_t i = 0; i < targets.supervised.size(); ++i) {
    const std::string& name = targets.supervised[i];
    const auto inst = std::find_if(gateway.instances.begin(), gateway.instances.end(),
                                   [&](const GatewayInstance& g) { return g.name == name; });
    if (inst != gateway.instances.end() && !inst->url.empty()) {
      add_unique(urls, inst->url);
      continue;
    }
    Finding skipped = targets.skipped[i];
    if (!gateway.reachable) {
      skipped.message += fmt::format(
          " No gateway answered at {} ({}): start it with switchyard "
          "serve -c {}, or pass the instance's address with --url.",
          gateway_url, gateway.error, options.fleet_config.string());
    } else if (!gateway.gateway) {
      skipped.message +=
          fmt::format(" {} (the config's listen) is not a Switchyard gateway.", gateway_url);
    } else if (gateway.detail) {
      skipped.message +=
          fmt::format(" The gateway at {} {}.", gateway_url,
                      inst == gateway.instances.end() ? "does not list it (a different config?)"
                                                      : "has not started it yet");
    }
    notes.push_back(std::move(skipped));
  }
}

}  // namespace

int run_doctor(const DoctorOptions& options, const Fetcher& fetch, std::ostream& out,
               std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_directory(options.sysfs_root, ec)) {
    err << "--sysfs-root " << options.sysfs_root.string() << ": not a directory\n";
    return exit_bad_input;
  }
  if (!options.urls.empty() && !options.fleet_config.empty()) {
    err << "--url and -c cannot be combined: pass backends one way\n";
    return exit_bad_input;
  }
  for (const auto& url : options.urls) {
    if (!plausible_http_url(url)) {
      err << "--url " << url << ": expected http://host:port (TLS is not supported)\n";
      return exit_bad_input;
    }
  }
  if (options.interval.count() < 0) {
    err << "--interval: must be 0 or more seconds\n";
    return exit_bad_input;
  }
  if (options.timeout.count() <= 0) {
    err << "--timeout: must be more than 0 seconds\n";
    return exit_bad_input;
  }
  if (options.max_num_seqs && *options.max_num_seqs <= 0) {
    err << "--max-num-seqs: must be at least 1\n";
    return exit_bad_input;
  }

  DoctorReport report;
  std::vector<std::string> urls;
  for (const auto& url : options.urls) {
    expand_gateway(trim_slash(url), options, fetch, urls, report.fleet_notes);
  }
  if (!options.fleet_config.empty()) {
    auto targets = read_fleet_targets(options.fleet_config);
    if (!targets) {
      err << targets.error().message << '\n';
      return exit_bad_input;
    }
    urls = std::move(targets->urls);
    add_supervised(*targets, options, fetch, urls, report.fleet_notes);
  }

  auto box = scan_box(options.sysfs_root);
  if (!box) {
    err << "--sysfs-root " << box.error().message << '\n';
    return exit_bad_input;
  }
  report.box = std::move(box.value());
  report.box_findings = judge_box(report.box);

  const bool nvidia =
      std::any_of(report.box.gpus.begin(), report.box.gpus.end(),
                  [](const ScannedGpu& g) { return g.path.gpu().vendor_id == 0x10de; });
  if (options.run_nvidia_smi && nvidia && is_real_sys(options.sysfs_root) &&
      nvidia_smi_available()) {
    report.nvidia_smi_topology = nvidia_smi_topology();
  }

  if (!urls.empty()) {
    ProbeOptions probe;
    probe.interval = options.interval;
    probe.timeout = options.timeout;
    probe.max_num_seqs = options.max_num_seqs;
    report.backends = probe_backends(urls, fetch, probe);
  }

  if (options.json) {
    out << boost::json::serialize(to_json(report)) << '\n';
  } else {
    write_text(report, out);
  }
  return report.exit_code();
}

}  // namespace switchyard::doctor
