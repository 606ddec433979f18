#include "gateway/drain_cutoff.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace switchyard::gateway {

DrainCutoff::Watch::Watch(DrainCutoff& owner, http::UpstreamCall& call)
    : owner_(owner), call_(&call) {
  owner_.calls_.push_back(call_);
}

DrainCutoff::Watch::~Watch() {
  auto& calls = owner_.calls_;
  auto it = std::find(calls.begin(), calls.end(), call_);
  *it = calls.back();
  calls.pop_back();
}

void DrainCutoff::cut_all(std::chrono::milliseconds drain) {
  cut_ = true;
  const auto ms = drain.count();
  why_ = fmt::format(
      "the gateway is shutting down: timeouts.drain ({}) ran out before this request finished",
      ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms));
  // abort() only closes sockets: the calls' coroutines resume later, so
  // the list does not change under this loop.
  for (auto* call : calls_) call->abort();
}

openai::ApiError DrainCutoff::error() const {
  return openai::ApiError::unavailable(why_, "shutting_down");
}

}  // namespace switchyard::gateway
