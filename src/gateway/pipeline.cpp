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
  std::size_t entered = 0;
  while (entered < stages_.size())
    if (co_await stages_[entered++]->run(ctx) == Verdict::answered) break;
  while (entered > 0) stages_[--entered]->finish(ctx);
}

}  // namespace switchyard::gateway
