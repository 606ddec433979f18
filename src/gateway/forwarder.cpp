#include "gateway/forwarder.h"

#include <boost/asio.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/relay.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using openai::ApiError;

awaitable<Verdict> Forwarder::run(RequestContext& ctx) {
  const auto budget_end = ctx.record.start + options_.retry_budget;
  std::string last_error;
  for (int attempt_no = 1;; ++attempt_no) {
    if (cutoff_.cut()) co_return co_await end_for_drain(ctx);
    fleet::Instance& inst = *upstreams_.instances[*ctx.target];
    ctx.record.instance = inst.name();
    ctx.record.attempts = attempt_no;
    AttemptOutcome outcome = co_await attempt(ctx, inst);
    if (!outcome.retry) {
      if (ctx.record.upstream_failed && !outcome.local)
        upstreams_.report_failure(inst.index, outcome.error);
      else if (ctx.record.status > 0 && ctx.record.status < 500 && !ctx.record.upstream_failed)
        upstreams_.report_success(inst.index);
      ctx.lease.release();
      co_return Verdict::answered;
    }
    // The drain's cutoff broke the call: the engine did nothing wrong.
    if (cutoff_.cut()) co_return co_await end_for_drain(ctx);
    // Report before the slot is released: a freed slot goes straight to a
    // waiting request, which must not land on the instance that just failed.
    if (!outcome.local) upstreams_.report_failure(inst.index, outcome.error);
    ctx.lease.release();
    metrics_.add_retry(ctx.model, inst.name());
    spdlog::warn("request {}: attempt {} on {} failed before the first byte: {}", ctx.record.id,
                 attempt_no, inst.name(), outcome.error);
    ctx.record.failed_on.push_back(inst.name());
    ctx.tried.push_back(inst.index);
    last_error = std::move(outcome.error);

    const auto now = std::chrono::steady_clock::now();
    if (attempt_no >= options_.attempts || now >= budget_end) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(budget_end - now);
    const auto routed = co_await routing_.route(ctx, /*retry=*/true, left);
    if (routed == RouteStage::Routed::answered) co_return Verdict::answered;
    if (routed == RouteStage::Routed::none_left) break;
  }
  co_return co_await answer_failed(ctx, last_error);
}

awaitable<Verdict> Forwarder::answer_failed(RequestContext& ctx, const std::string& last_error) {
  const ApiError error = ApiError::bad_gateway(
      fmt::format("{} attempt(s) failed; the last: {}", ctx.record.attempts, last_error));
  co_await ctx.answer(error);
  co_return Verdict::answered;
}

awaitable<Verdict> Forwarder::end_for_drain(RequestContext& ctx) {
  ctx.record.shut_down = true;
  ctx.lease.release();
  const ApiError error = cutoff_.error();
  co_await ctx.answer(error);
  co_return Verdict::answered;
}

awaitable<AttemptOutcome> Forwarder::attempt(RequestContext& ctx, fleet::Instance& inst) {
  auto& record = ctx.record;
  obs::ScopedSpan span(ctx.trace, "switchyard.attempt", obs::SpanKind::client);
  span.set("switchyard.instance", inst.name());
  span.set("switchyard.attempt", std::int64_t{record.attempts});
  if (inst.url) {
    span.set("server.address", inst.url->host);
    span.set("server.port", std::int64_t{inst.url->port});
  }
  http::UpstreamCall call(*inst.pool);
  const DrainCutoff::Watch cut_watch(cutoff_, call);
  UnansweredCalls::Entry unanswered(unanswered_, inst.index, call);
  Relay relay(ctx, inst, call, unanswered, cutoff_, metrics_);
  // A client that leaves aborts the upstream call at once, freeing the
  // engine's slot and ours; the relay then returns on the call's error.
  ctx.exchange.watch_client([&call, &record] {
    record.client_gone = true;
    call.abort();
  });
  AttemptOutcome outcome;
  try {
    if (auto ended = co_await relay.open(span.traceparent(), buffered_))
      outcome = std::move(*ended);
    else
      outcome = co_await relay.relay_stream();
  } catch (const std::exception& e) {
    // Nothing in the relay throws by design; a bug must not leave the watch armed.
    spdlog::error("request {}: {}", record.id, e.what());
  }
  record.usage = relay.charged_usage();
  if (record.status == 200) ctx.response_id = relay.response_id();
  ctx.exchange.unwatch_client();
  relay.answering();
  if (record.status > 0) span.set("http.response.status_code", std::int64_t{record.status});
  if (outcome.retry)
    span.fail(outcome.error);
  else if (record.upstream_failed)
    span.fail("failed mid-stream");
  else if (record.client_gone)
    span.fail("client_closed");
  co_return outcome;
}

void Forwarder::abandon_unanswered(std::size_t index) {
  unanswered_.abort_all(index);
}

}  // namespace switchyard::gateway
