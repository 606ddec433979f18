#include "gateway/pipeline.h"

namespace switchyard::gateway {

boost::asio::awaitable<void> RequestContext::answer(const openai::ApiError& error, bool close) {
  record.status = error.status;
  record.error_code = error.code;
  if (exchange.started()) {
    const std::string events = openai::stream_error_events(error, route.dialect);
    record.bytes_out += events.size();
    if (!co_await exchange.send_chunk(events) || !co_await exchange.end_stream())
      record.client_gone = true;
    co_return;
  }
  http::Response reply = openai::error_response(error, route.dialect);
  if (close) reply.headers.add("Connection", "close");
  reply.headers.add("X-Request-Id", record.id);
  for (auto [name, value] : response_headers) reply.headers.add(name, value);
  record.bytes_out = reply.body.size();
  if (!co_await exchange.respond(std::move(reply))) record.client_gone = true;
}

http::Headers RequestContext::stream_headers(std::string_view content_type) const {
  http::Headers headers;
  headers.add("Content-Type", content_type);
  headers.add("Cache-Control", "no-cache");
  headers.add("X-Accel-Buffering", "no");
  headers.add("X-Request-Id", record.id);
  for (auto [name, value] : response_headers) headers.add(name, value);
  return headers;
}

boost::asio::awaitable<void> Pipeline::run(RequestContext& ctx) {
  std::size_t entered = 0;
  while (entered < stages_.size()) {
    const Stage::Decision decision = stages_[entered++]->check(ctx);
    if (decision.waits) {
      if (co_await decision.waits->run(ctx) == Verdict::answered) break;
    } else if (decision.error) {
      co_await ctx.answer(*decision.error);
      break;
    }
  }
  while (entered > 0) stages_[--entered]->finish(ctx);
}

}  // namespace switchyard::gateway
