#include "doctor/backend_probe.h"

#include <fmt/format.h>

#include <thread>

namespace switchyard::doctor {
namespace {

using clock = std::chrono::steady_clock;

struct Target {
  std::string url;
  Scrape first;
  Scrape second;
  clock::time_point first_at;
  clock::time_point second_at;
  std::optional<std::string> models;
  std::optional<std::string> error;  // set when the backend could not be reached
};

// The body of a 200 answer; nullopt for any other status or a transport error
// on an endpoint after /metrics (it may simply not exist on this engine).
std::optional<std::string> get(const Fetcher& fetch, const std::string& url,
                               std::chrono::milliseconds timeout) {
  http::FetchRequest request;
  request.url = url;
  request.timeout = timeout;
  request.headers = {{"Accept", "*/*"}};
  auto response = fetch(request);
  if (!response || response->status != 200) return std::nullopt;
  return std::move(response->body);
}

// /metrics first: it decides whether the backend is reachable at all and its
// answer time anchors the measurement window.
bool scrape(const Fetcher& fetch, Target& target, Scrape& into, clock::time_point& at,
            std::chrono::milliseconds timeout) {
  http::FetchRequest request;
  request.url = target.url + "/metrics";
  request.timeout = timeout;
  auto response = fetch(request);
  at = clock::now();
  if (!response) {
    target.error = response.error().message;
    return false;
  }
  if (response->status == 200) into.metrics = std::move(response->body);
  into.props = get(fetch, target.url + "/props", timeout);
  into.slots = get(fetch, target.url + "/slots", timeout);
  return true;
}

}  // namespace

std::vector<BackendReport> probe_backends(const std::vector<std::string>& urls,
                                          const Fetcher& fetch, const ProbeOptions& options) {
  std::vector<Target> targets;
  for (const auto& url : urls) targets.push_back(Target{url, {}, {}, {}, {}, {}, {}});

  for (auto& t : targets) {
    if (scrape(fetch, t, t.first, t.first_at, options.timeout)) {
      t.models = get(fetch, t.url + "/v1/models", options.timeout);
    }
  }
  std::this_thread::sleep_for(options.interval);
  for (auto& t : targets) {
    if (!t.error) scrape(fetch, t, t.second, t.second_at, options.timeout);
  }

  std::vector<BackendReport> reports;
  for (auto& t : targets) {
    if (t.error) {
      BackendReport report;
      report.url = t.url;
      report.reachable = false;
      report.findings.push_back({Severity::warning, "backend.unreachable", t.url,
                                 fmt::format("Cannot reach {}: {}", t.url, *t.error)});
      reports.push_back(std::move(report));
      continue;
    }
    BackendObservation obs;
    obs.url = t.url;
    obs.first = std::move(t.first);
    obs.second = std::move(t.second);
    obs.window_seconds = std::chrono::duration<double>(t.second_at - t.first_at).count();
    obs.models = std::move(t.models);
    obs.max_num_seqs = options.max_num_seqs;
    reports.push_back(analyze_backend(obs));
  }
  return reports;
}

}  // namespace switchyard::doctor
