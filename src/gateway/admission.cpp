#include "gateway/admission.h"

namespace switchyard::gateway {

using openai::ApiError;

boost::asio::awaitable<Verdict> Admit::run(RequestContext& ctx) {
  if (!draining_) co_return Verdict::next;
  // Requests already in flight or queued finish; new ones go elsewhere.
  const ApiError error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
  co_await ctx.answer(error,
                      /*close=*/true);
  co_return Verdict::answered;
}

}  // namespace switchyard::gateway
