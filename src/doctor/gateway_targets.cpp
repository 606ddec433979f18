#include "doctor/gateway_targets.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <cctype>

namespace switchyard::doctor {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string string_field(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

GatewayLookup lookup_gateway(const std::string& url, const std::optional<std::string>& key,
                             const Fetcher& fetch, std::chrono::milliseconds timeout) {
  GatewayLookup out;
  http::FetchRequest request;
  request.url = url + "/health";
  request.timeout = timeout;
  if (key) request.headers.emplace_back("Authorization", "Bearer " + *key);
  auto response = fetch(request);
  if (!response) {
    out.error = response.error().message;
    return out;
  }
  out.reachable = true;
  for (const auto& [name, value] : response->headers) {
    if (iequal(name, "server") && iequal(value, "switchyard")) out.gateway = true;
  }
  boost::system::error_code ec;
  const auto body = boost::json::parse(response->body, ec);
  if (ec || !body.is_object()) return out;
  const auto* instances = body.as_object().if_contains("instances");
  const auto* models = body.as_object().if_contains("models");
  if (!instances || !instances->is_array() || !models || !models->is_array()) return out;
  out.gateway = out.detail = true;
  for (const auto& item : instances->as_array()) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    out.instances.push_back({string_field(o, "name"), string_field(o, "model"),
                             string_field(o, "state"), string_field(o, "url")});
  }
  return out;
}

advisor::Finding gateway_finding(const std::string& url, const GatewayLookup& lookup,
                                 bool key_given) {
  if (!lookup.detail) {
    return {advisor::Severity::warning, "gateway.detail", url,
            key_given ? fmt::format("{} is a Switchyard gateway, but its /health did not list the "
                                    "instances for this --key: the key is not one of its "
                                    "api_keys.",
                                    url)
                      : fmt::format("{} is a Switchyard gateway whose /health lists its instances "
                                    "only to an API key: pass --key KEY to check the engines "
                                    "behind it.",
                                    url)};
  }
  std::string list;
  for (const auto& inst : lookup.instances) {
    list += fmt::format("{}{} ({}, {})", list.empty() ? "" : "; ", inst.name, inst.state,
                        inst.url.empty() ? "no address yet" : inst.url);
  }
  return {advisor::Severity::note, "gateway.instances", url,
          fmt::format("{} is a Switchyard gateway with {} instance{}: {}. Each is checked below.",
                      url, lookup.instances.size(), lookup.instances.size() == 1 ? "" : "s",
                      list.empty() ? "none" : list)};
}

std::string listen_url(const std::string& listen) {
  std::string host = listen, port;
  if (const auto colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // A wildcard listen is reached at loopback.
  if (host.empty() || host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + (port.empty() ? "" : ":" + port);
}

}  // namespace switchyard::doctor
