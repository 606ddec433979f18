#include "gateway/unanswered_calls.h"

#include <algorithm>

namespace switchyard::gateway {

UnansweredCalls::Entry::Entry(UnansweredCalls& owner, std::size_t instance,
                              http::UpstreamCall& call)
    : owner_(owner), instance_(instance), call_(&call) {
  owner_.calls_.emplace_back(instance_, call_);
}

bool UnansweredCalls::Entry::answered() {
  if (!std::exchange(listed_, false)) return false;
  auto& calls = owner_.calls_;
  auto it = std::find(calls.begin(), calls.end(), std::pair{instance_, call_});
  *it = calls.back();
  calls.pop_back();
  return true;
}

void UnansweredCalls::abort_all(std::size_t instance) {
  for (const auto& [index, call] : calls_)
    if (index == instance) call->abort();
}

}  // namespace switchyard::gateway
