// The drain's deadline for the requests still running. Past
// `timeouts.drain` the gateway ends them itself, before it stops the
// engines: every open upstream call is cut, and the forwarder, seeing the
// cutoff, answers in the route's dialect (a stream's error event, a 503
// before the first byte) with code `shutting_down`, and blames no engine.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "http/upstream.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

class DrainCutoff {
 public:
  // An open call, reachable by cut() until this is destroyed.
  class Watch {
   public:
    Watch(DrainCutoff& owner, http::UpstreamCall& call);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    DrainCutoff& owner_;
    http::UpstreamCall* call_;
  };

  // Cuts every open call now, `drain` (timeouts.drain) having run out; from
  // then on cut() is true and the forwarder starts no attempt.
  void cut_all(std::chrono::milliseconds drain);
  bool cut() const { return cut_; }
  // The error that ends a request the cutoff caught.
  openai::ApiError error() const;
  std::size_t open_calls() const { return calls_.size(); }

 private:
  bool cut_ = false;
  std::string why_;
  // A vector, not a node per call: it holds the calls in flight.
  std::vector<http::UpstreamCall*> calls_;
};

}  // namespace switchyard::gateway
