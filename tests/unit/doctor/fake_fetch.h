// A stand-in for http::fetch: canned answers per URL, served in order (the
// last one repeats), and a log of what was asked.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "doctor/backend_probe.h"

namespace switchyard::doctor::fixture {

class FakeFetch {
 public:
  void answer(const std::string& url, int status, std::string body) {
    answers_[url].push_back(http::FetchResponse{status, {}, std::move(body)});
  }
  void refuse(const std::string& url) { refused_.push_back(url); }

  Fetcher fetcher() {
    return [this](const http::FetchRequest& request) -> Result<http::FetchResponse> {
      requests_.push_back(request.url);
      for (const auto& prefix : refused_) {
        if (request.url.rfind(prefix, 0) == 0) {
          return Error{request.url + ": connect: Connection refused"};
        }
      }
      auto it = answers_.find(request.url);
      if (it == answers_.end()) return http::FetchResponse{404, {}, "not found"};
      std::size_t& served = served_[request.url];
      const auto& response = it->second[std::min(served, it->second.size() - 1)];
      ++served;
      return response;
    };
  }

  const std::vector<std::string>& requests() const { return requests_; }

 private:
  std::map<std::string, std::vector<http::FetchResponse>> answers_;
  std::map<std::string, std::size_t> served_;
  std::vector<std::string> refused_;
  std::vector<std::string> requests_;
};

}  // namespace switchyard::doctor::fixture
