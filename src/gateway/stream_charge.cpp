#include "gateway/stream_charge.h"

namespace switchyard::gateway {

std::optional<openai::Usage> charged_usage(const std::optional<openai::Usage>& reported,
                                           std::int64_t relayed_tokens) {
  if (reported && reported->completion_tokens >= relayed_tokens) return reported;
  if (relayed_tokens == 0) return std::nullopt;
  openai::Usage charged = reported.value_or(openai::Usage{});
  charged.completion_tokens = static_cast<long>(relayed_tokens);
  return charged;
}

}  // namespace switchyard::gateway
