#include "bench/endpoint_probe.h"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/json.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "http/fetch.h"
#include "http/url.h"

namespace switchyard::bench {

namespace json = boost::json;

namespace {

// An OpenAI error body's message, else the start of the body.
std::string body_message(const std::string& body) {
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_object())
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
        return std::string(m->as_string());
  }
  return body.substr(0, std::min<std::size_t>(body.find('\n'), 160));
}

bool header_says_simulated(const http::FetchResponse& r) {
  for (const auto& [name, value] : r.headers)
    if (boost::algorithm::iequals(name, kSimulatedHeader) && is_simulator_header(value))
      return true;
  return false;
}

bool says_simulated(const json::value* v) {
  return v != nullptr && v->is_string() &&
         std::string_view(v->as_string()).find("simulated") != std::string_view::npos;
}

}  // namespace

bool is_simulator_header(std::string_view value) {
  return value.starts_with(kSimulatedValue);
}

std::string base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string tokenize_url_for(const std::string& base, const std::string& given) {
  if (given.empty()) return base + "/tokenize";
  const auto url = http::parse_url(given);
  if (url && (url->path.empty() || url->path == "/")) return base_url(given) + "/tokenize";
  return given;
}

HeaderList request_headers(const std::string& api_key, const std::vector<std::string>& headers) {
  HeaderList out;
  if (!api_key.empty()) out.emplace_back("Authorization", "Bearer " + api_key);
  for (const auto& h : headers) {
    const auto colon = h.find(':');
    auto value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    out.emplace_back(h.substr(0, colon), value);
  }
  return out;
}

Result<bool> check_request_flags(const std::vector<std::string>& headers,
                                 const std::string& tokenize_url) {
  for (const auto& h : headers)
    if (h.find(':') == std::string::npos || h.front() == ':')
      return Error{fmt::format("--header: '{}' is not 'Name: value'", h)};
  if (!tokenize_url.empty())
    if (auto url = http::parse_url(tokenize_url); !url)
      return Error{"--tokenize-url: " + url.error().message};
  return true;
}

Result<EndpointInfo> describe_endpoint(const std::string& base_url,
                                       const http::FetchResponse& models,
                                       const http::FetchResponse* props, const std::string& model) {
  const auto* response = &models;
  if (response->status == 401 || response->status == 403)
    return Error{fmt::format("{}/v1/models refused the API key ({} {}): pass the right --api-key",
                             base_url, response->status, body_message(response->body))};
  EndpointInfo info;
  info.simulated = header_says_simulated(*response);
  // Each model's names (its id, then its aliases) and meta.n_vocab.
  struct Served {
    std::vector<std::string> names;
    std::optional<long> n_vocab;
  };
  std::vector<Served> served;
  if (response->status == 200) {
    boost::system::error_code ec;
    auto v = json::parse(response->body, ec);
    const json::array* data = nullptr;
    if (!ec && v.is_object())
      if (const auto* d = v.as_object().if_contains("data"); d && d->is_array())
        data = &d->as_array();
    for (const auto& entry : data ? *data : json::array{}) {
      if (!entry.is_object()) continue;
      const auto& m = entry.as_object();
      Served one;
      if (const auto* id = m.if_contains("id"); id && id->is_string())
        one.names.emplace_back(id->as_string());
      if (const auto* aliases = m.if_contains("aliases"); aliases && aliases->is_array())
        for (const auto& a : aliases->as_array())
          if (a.is_string()) one.names.emplace_back(a.as_string());
      if (const auto* meta = m.if_contains("meta"); meta && meta->is_object()) {
        const auto& mo = meta->as_object();
        info.simulated |= says_simulated(mo.if_contains("ftype"));
        if (const auto* n = mo.if_contains("n_vocab"); n && n->is_int64())
          one.n_vocab = static_cast<long>(n->as_int64());
      }
      info.simulated |= says_simulated(m.if_contains("owned_by"));
      if (one.names.empty()) continue;
      for (const auto& name : one.names) info.models.push_back(name);
      // A gateway lists each alias again as its own entry, "alias_of" its model.
      const auto* of = m.if_contains("alias_of");
      const auto model_of = std::find_if(served.begin(), served.end(), [&](const Served& s) {
        return of && of->is_string() && s.names.front() == of->as_string();
      });
      if (model_of != served.end()) continue;
      served.push_back(std::move(one));
    }
  }
  const Served* chosen = nullptr;
  for (const auto& s : served)
    for (const auto& name : s.names)
      if (!model.empty() && name == model) chosen = &s;
  std::string listed;
  for (const auto& name : info.models) listed += (listed.empty() ? "" : ", ") + name;
  if (chosen != nullptr || (served.empty() && !model.empty())) {
    info.model = model;
  } else if (served.size() == 1) {
    // One model behind the endpoint (a bare llama-server, which lists its
    // file path and ignores the name in requests): whatever name was given
    // means that one.
    chosen = &served.front();
    info.model = chosen->names.front();
    if (!model.empty())
      info.model_note = fmt::format(
          "'{}' is not among {}/v1/models, which serves one model, {}: benchmarked that", model,
          base_url, info.model);
  } else if (served.empty()) {
    return Error{fmt::format("--model: required ({}/v1/models lists no models)", base_url)};
  } else if (model.empty()) {
    return Error{fmt::format("--model: required, {} serves {}", base_url, listed)};
  } else {
    return Error{fmt::format("unknown model '{}': {} serves {}", model, base_url, listed)};
  }
  if (chosen != nullptr) info.n_vocab = chosen->n_vocab;
  if (props != nullptr && props->status == 200) {
    boost::system::error_code ec;
    auto v = json::parse(props->body, ec);
    if (!ec && v.is_object())
      info.simulated |= says_simulated(v.as_object().if_contains("model_ftype"));
    info.simulated |= header_says_simulated(*props);
  }
  return info;
}

Result<EndpointInfo> probe_endpoint(const std::string& base_url, const HeaderList& headers,
                                    const std::string& model) {
  http::FetchRequest request;
  request.url = base_url + "/v1/models";
  request.headers = headers;
  auto models = http::fetch(request);
  if (!models) return Error{fmt::format("cannot reach {}: {}", base_url, models.error().message)};
  request.url = base_url + "/props";
  auto props = http::fetch(request);
  return describe_endpoint(base_url, *models, props ? &*props : nullptr, model);
}

Result<long> count_tokens(const std::string& tokenize_url, const HeaderList& headers,
                          const std::string& model, const std::string& text) {
  http::FetchRequest request;
  request.method = "POST";
  request.url = tokenize_url;
  request.headers = headers;
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = json::serialize(
      json::object{{"content", text}, {"prompt", text}, {"model", model}, {"add_special", false}});
  request.timeout = std::chrono::seconds(30);
  auto response = http::fetch(request);
  if (!response) return Error{fmt::format("tokenize: {}", response.error().message)};
  if (response->status != 200)
    return Error{fmt::format("{} answered {}: {}", tokenize_url, response->status,
                             body_message(response->body))};
  boost::system::error_code ec;
  auto v = json::parse(response->body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    if (const auto* c = o.if_contains("count"); c && c->is_int64())
      return static_cast<long>(c->as_int64());
    if (const auto* t = o.if_contains("tokens"); t && t->is_array())
      return static_cast<long>(t->as_array().size());
  }
  return Error{fmt::format("{}: no token list in the answer", tokenize_url)};
}

}  // namespace switchyard::bench
