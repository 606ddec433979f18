// Upstream calls in flight whose client has seen nothing yet, by instance.
// When an instance is ejected its calls are cut (abort_all), so that they
// retry elsewhere now instead of waiting out timeouts.first_byte.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "http/upstream.h"

namespace switchyard::gateway {

class UnansweredCalls {
 public:
  // One call, listed until answered() or destruction.
  class Entry {
   public:
    Entry(UnansweredCalls& owner, std::size_t instance, http::UpstreamCall& call);
    ~Entry() { answered(); }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    // The client is about to see the answer: no longer cut. True the first time.
    bool answered();

   private:
    UnansweredCalls& owner_;
    std::size_t instance_;
    http::UpstreamCall* call_;
    bool listed_ = true;
  };

  // abort() only closes sockets: the calls' coroutines resume later.
  void abort_all(std::size_t instance);

 private:
  // A vector, not a node per call: it holds the requests in flight.
  std::vector<std::pair<std::size_t, http::UpstreamCall*>> calls_;
};

}  // namespace switchyard::gateway
