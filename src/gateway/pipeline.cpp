#include "gateway/pipeline.h"

namespace switchyard::gateway {

boost::asio::awaitable<void> RequestContext::answer(const openai::ApiError& error, bool close) {
  http::Response reply = openai::error_response(error, route.dialect);
  if (close) reply.headers.add("Connection", "close");
  reply.headers.add("X-Request-Id", record.id);
  for (auto [name, value] : response_headers) reply.headers.add(name, value);
  record.status = reply.status;
  record.error_code = error.code;
  record.bytes_out = reply.body.size();
  if (!co_await exchange.respond(std::move(reply))) record.client_gone = true;
}

boost::asio::awaitable<void> Pipeline::run(RequestContext& ctx) {
  for (Stage* stage : stages_)
    if (co_await stage->run(ctx) == Verdict::answered) break;
}

}  // namespace switchyard::gateway
