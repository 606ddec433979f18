// What the bench learns about an endpoint before loading it, with blocking
// one-shot requests: is it there, does it serve the model, how large is its
// vocabulary, does it tokenize, is it a simulator. Every failure is one line
// for a person.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "http/fetch.h"

namespace switchyard::bench {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The endpoint URL without trailing slashes.
std::string base_url(std::string url);
// The headers every request carries: --api-key as a Bearer token, then each
// --header 'Name: value'.
HeaderList request_headers(const std::string& api_key, const std::vector<std::string>& headers);
// Checks what request_headers and count_tokens take from the command line:
// each --header is 'Name: value', --tokenize-url (empty: none) is a URL.
Result<bool> check_request_flags(const std::vector<std::string>& headers,
                                 const std::string& tokenize_url);

// The header switchyard's simulator puts on every response, and its value.
inline constexpr std::string_view kSimulatedHeader = "X-Simulated";
inline constexpr std::string_view kSimulatedValue = "switchyard-sim";
bool is_simulator_header(std::string_view value);

struct EndpointInfo {
  std::vector<std::string> models;  // ids and aliases /v1/models lists
  // The name to send in requests: --model when listed (or nothing is
  // listed), else the id of the one model the endpoint serves.
  std::string model;
  // Set when --model was not used as given: one line saying what was.
  std::string model_note;
  std::optional<long> n_vocab;  // data[].meta.n_vocab of the model
  // meta.ftype / /props model_ftype says "simulated", or a response carried
  // X-Simulated: switchyard-sim.
  bool simulated = false;
};

// GET {base}/v1/models (and /props). Fails on an unreachable endpoint, a
// 401/403, a model the list does not contain while it lists several, or no
// `model` ("" : not given) while it lists none or several. An endpoint that
// serves one model (llama-server lists its file path) takes any name.
Result<EndpointInfo> probe_endpoint(const std::string& base_url, const HeaderList& headers,
                                    const std::string& model);

// What probe_endpoint concludes from the answers of GET /v1/models and GET
// /props (`props` null when it could not be fetched).
Result<EndpointInfo> describe_endpoint(const std::string& base_url,
                                       const http::FetchResponse& models,
                                       const http::FetchResponse* props, const std::string& model);

// Where to count tokens: `given` (--tokenize-url) as it is when it has a
// path, with /tokenize added when it is a base URL, {base}/tokenize when
// it is empty.
std::string tokenize_url_for(const std::string& base, const std::string& given);

// POST {tokenize_url} {"content", "prompt", "model"}: the token count of
// `text` as the engine counts it (llama.cpp's and vLLM's /tokenize shapes).
Result<long> count_tokens(const std::string& tokenize_url, const HeaderList& headers,
                          const std::string& model, const std::string& text);

}  // namespace switchyard::bench
