// What the bench learns about an endpoint before loading it, with blocking
// one-shot requests: is it there, does it serve the model, how large is its
// vocabulary, does it tokenize, is it a simulator. Every failure is one line
// for a person.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace switchyard::bench {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The endpoint URL without trailing slashes.
std::string base_url(std::string url);
// The headers every request carries: --api-key as a Bearer token, then each
// --header 'Name: value'.
HeaderList request_headers(const std::string& api_key, const std::vector<std::string>& headers);

struct EndpointInfo {
  std::vector<std::string> models;  // ids and aliases /v1/models lists
  std::optional<long> n_vocab;      // data[].meta.n_vocab of the model
  bool simulated = false;           // meta.ftype / /props model_ftype says "simulated"
};

// GET {base}/v1/models (and /props). Fails on an unreachable endpoint, a
// 401/403, or a model the list does not contain.
Result<EndpointInfo> probe_endpoint(const std::string& base_url, const HeaderList& headers,
                                    const std::string& model);

// POST {tokenize_url} {"content", "prompt", "model"}: the token count of
// `text` as the engine counts it (llama.cpp's and vLLM's /tokenize shapes).
Result<long> count_tokens(const std::string& tokenize_url, const HeaderList& headers,
                          const std::string& model, const std::string& text);

}  // namespace switchyard::bench
