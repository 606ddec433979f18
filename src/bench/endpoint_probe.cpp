#include "bench/endpoint_probe.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include "http/fetch.h"

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

bool says_simulated(const json::value* v) {
  return v != nullptr && v->is_string() &&
         std::string_view(v->as_string()).find("simulated") != std::string_view::npos;
}

}  // namespace

std::string base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
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

Result<EndpointInfo> probe_endpoint(const std::string& base_url, const HeaderList& headers,
                                    const std::string& model) {
  http::FetchRequest request;
  request.url = base_url + "/v1/models";
  request.headers = headers;
  auto response = http::fetch(request);
  if (!response)
    return Error{fmt::format("cannot reach {}: {}", base_url, response.error().message)};
  if (response->status == 401 || response->status == 403)
    return Error{fmt::format("{} refused the API key ({} {}): pass the right --api-key",
                             request.url, response->status, body_message(response->body))};
  EndpointInfo info;
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
      bool this_model = false;
      if (const auto* id = m.if_contains("id"); id && id->is_string()) {
        info.models.emplace_back(id->as_string());
        this_model |= id->as_string() == model;
      }
      if (const auto* aliases = m.if_contains("aliases"); aliases && aliases->is_array())
        for (const auto& a : aliases->as_array())
          if (a.is_string()) {
            info.models.emplace_back(a.as_string());
            this_model |= a.as_string() == model;
          }
      if (const auto* meta = m.if_contains("meta"); meta && meta->is_object()) {
        const auto& mo = meta->as_object();
        info.simulated |= says_simulated(mo.if_contains("ftype"));
        if (const auto* n = mo.if_contains("n_vocab"); this_model && n && n->is_int64())
          info.n_vocab = static_cast<long>(n->as_int64());
      }
      info.simulated |= says_simulated(m.if_contains("owned_by"));
    }
    bool listed = false;
    for (const auto& name : info.models) listed |= name == model;
    if (!info.models.empty() && !listed) {
      std::string served;
      for (const auto& name : info.models) served += (served.empty() ? "" : ", ") + name;
      return Error{fmt::format("unknown model '{}': {} serves {}", model, base_url, served)};
    }
  }
  http::FetchRequest props;
  props.url = base_url + "/props";
  props.headers = headers;
  if (auto p = http::fetch(props); p && p->status == 200) {
    boost::system::error_code ec;
    auto v = json::parse(p->body, ec);
    if (!ec && v.is_object())
      info.simulated |= says_simulated(v.as_object().if_contains("model_ftype"));
  }
  return info;
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
