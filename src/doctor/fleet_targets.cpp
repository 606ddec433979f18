#include "doctor/fleet_targets.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace switchyard::doctor {
namespace {

// Config load is start-up work, where exceptions are allowed; yaml-cpp throws,
// and this is the one place that turns that into an Error.
Result<bool> collect(const YAML::Node& instances, const std::string& where, FleetTargets& out) {
  if (!instances.IsSequence()) return Error{where + " is not a list"};
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const YAML::Node& instance = instances[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!instance.IsMap()) return Error{at + " is not a mapping"};
    const std::string name =
        instance["name"] ? instance["name"].as<std::string>() : fmt::format("#{}", i);
    if (instance["url"]) {
      const std::string url = trim_slash(instance["url"].as<std::string>());
      if (std::find(out.urls.begin(), out.urls.end(), url) == out.urls.end())
        out.urls.push_back(url);
    } else if (instance["command"]) {
      out.supervised.push_back(name);
      out.skipped.push_back(
          {Severity::note, "fleet.supervised", name,
           fmt::format("Instance {} is supervised (it has a command, no url): doctor can only "
                       "check running URLs, which the gateway at the config's listen address "
                       "gives once `switchyard serve` runs it.",
                       name)});
    } else {
      return Error{at + " has neither url nor command"};
    }
  }
  return true;
}

}  // namespace

Result<FleetTargets> read_fleet_targets(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return Error{fmt::format("-c {}: cannot read the file", file.string())};
  std::stringstream text;
  text << in.rdbuf();

  FleetTargets targets;
  try {
    const YAML::Node root = YAML::Load(text.str());
    bool any = false;
    if (root.IsMap() && root["listen"] && root["listen"].IsScalar()) {
      targets.listen = root["listen"].as<std::string>();
    }
    if (root.IsMap() && root["instances"]) {
      auto ok = collect(root["instances"], "instances", targets);
      if (!ok) return Error{fmt::format("-c {}: {}", file.string(), ok.error().message)};
      any = true;
    }
    if (root.IsMap() && root["profiles"] && root["profiles"].IsMap()) {
      for (const auto& profile : root["profiles"]) {
        if (!profile.second.IsMap() || !profile.second["instances"]) continue;
        const std::string where = "profiles." + profile.first.as<std::string>() + ".instances";
        auto ok = collect(profile.second["instances"], where, targets);
        if (!ok) return Error{fmt::format("-c {}: {}", file.string(), ok.error().message)};
        any = true;
      }
    }
    if (!any) return Error{fmt::format("-c {}: no instances list", file.string())};
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("-c {}: {}", file.string(), e.what())};
  }
  return targets;
}

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace switchyard::doctor
