// A blocking one-shot HTTP client for command-line tools (doctor, plan helpers).
// The gateway's request path never uses it: it has its own pooled async client.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace switchyard::http {

struct FetchResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct FetchRequest {
  std::string method = "GET";
  std::string url;  // http://host:port/path?query (no TLS)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{10000};  // whole exchange
};

// Performs the request; an Error names the URL and what failed (resolve,
// connect, timeout, malformed response). Any HTTP status is a success here.
Result<FetchResponse> fetch(const FetchRequest& request);

}  // namespace switchyard::http
