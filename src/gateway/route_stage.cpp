#include "gateway/route_stage.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <fmt/format.h>

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using openai::ApiError;

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", std::chrono::duration<double>(d).count());
}

}  // namespace

awaitable<Verdict> RouteStage::run(RequestContext& ctx) {
  switch (co_await route(ctx, /*retry=*/false, queue_options_.max_wait)) {
    case Routed::ok:
      co_return Verdict::next;
    case Routed::answered:
      co_return Verdict::answered;
    case Routed::none_left:
      break;
  }
  // Nothing is ready and nothing is on its way: waiting would not help.
  const ApiError error = ApiError::unavailable(
      fmt::format("no instance of '{}' is ready or starting; see /health", ctx.model),
      "no_instance_ready");
  co_await ctx.answer(error);
  co_return Verdict::answered;
}

void RouteStage::routed(RequestContext& ctx, const RouteDecision& decision) {
  metrics_.route_decided(router_.policy_name(), to_string(decision.reason), decision.match,
                         decision.home_waited);
  if (!routing_options_.route_header || !ctx.target) return;
  const std::string& name = router_.instance_name(*ctx.target);
  ctx.response_headers.set("X-Switchyard-Route",
                           decision.match >= 0
                               ? fmt::format("instance={}; match={:.2f}", name, decision.match)
                               : fmt::format("instance={}", name));
}

awaitable<RouteStage::Routed> RouteStage::route(RequestContext& ctx, bool retry,
                                                std::chrono::milliseconds max_wait) {
  const RouteQuery query = ctx.query();
  Router::Refusal why = Router::Refusal::all_slots_busy;
  if (!takes_slot(*ctx.route.endpoint)) {
    // Tokenizer and template calls are cheap and run beside generation in
    // the engine: any routable instance, no slot, no queue.
    ctx.target = router_.pick_any(query, &why);
    if (ctx.target) co_return Routed::ok;
    co_return Routed::none_left;
  }
  if (gates_.empty() || retry) co_return co_await route_slot(ctx, retry, max_wait, false);
  std::optional<std::chrono::milliseconds> held;
  for (auto* gate : gates_)
    if (auto bound = gate->hold(ctx)) held = std::max(held.value_or(*bound), *bound);
  const Routed routed = co_await route_slot(ctx, retry, held.value_or(max_wait), held.has_value());
  for (auto* gate : gates_) gate->routed(ctx);
  co_return routed;
}

std::optional<ApiError> RouteStage::gate_refusal(const RequestContext& ctx) const {
  for (auto* gate : gates_)
    if (auto refusal = gate->refusal(ctx)) return refusal;
  return std::nullopt;
}

awaitable<RouteStage::Routed> RouteStage::route_slot(RequestContext& ctx, bool retry,
                                                     std::chrono::milliseconds max_wait,
                                                     bool held) {
  const RouteQuery query = ctx.query();
  Router::Refusal why = Router::Refusal::all_slots_busy;
  // The common case needs no waiting, and no race with the client.
  if (retry || queue_.depth(ctx.model) == 0) {
    if (auto lease = router_.acquire(query, &why)) {
      ctx.target = lease->instance();
      ctx.lease = std::move(*lease);
      routed(ctx, ctx.lease.decision());
      co_return Routed::ok;
    }
    // A switch holding the model brings its instances: wait for them.
    if (why == Router::Refusal::no_instance_ready && !held) co_return Routed::none_left;
  }
  auto waited = co_await (queue_.acquire(query, retry, max_wait, ctx.share) ||
                          ctx.exchange.until_client_gone());
  if (waited.index() == 1) {
    ctx.record.client_gone = true;
    co_return Routed::answered;
  }
  Admission admission = std::get<0>(std::move(waited));
  metrics_.observe_queue_wait(ctx.model, admission.waited_seconds);
  ctx.record.queued += admission.waited_seconds;
  switch (admission.outcome) {
    case Admission::Outcome::granted:
      if (admission.charged) ctx.share.charged = admission.charged;
      ctx.target = admission.lease.instance();
      ctx.lease = std::move(admission.lease);
      routed(ctx, ctx.lease.decision());
      co_return Routed::ok;
    case Admission::Outcome::queue_full: {
      const ApiError error = ApiError::rate_limited(
          fmt::format("the queue for '{}' is full ({} waiting); retry shortly", ctx.model,
                      queue_options_.max_length));
      co_await ctx.answer(error);
      co_return Routed::answered;
    }
    case Admission::Outcome::timed_out:
    case Admission::Outcome::refused: {
      const ApiError error = gate_refusal(ctx).value_or(
          ApiError::rate_limited(fmt::format("no slot of '{}' came free within {}; retry shortly",
                                             ctx.model, seconds_text(max_wait))));
      co_await ctx.answer(error);
      co_return Routed::answered;
    }
    case Admission::Outcome::shutting_down: {
      const ApiError error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
      co_await ctx.answer(error);
      co_return Routed::answered;
    }
    case Admission::Outcome::key_revoked: {
      const ApiError error = ApiError::unauthorized("the API key was revoked");
      co_await ctx.answer(error);
      co_return Routed::answered;
    }
    case Admission::Outcome::cancelled:
      ctx.record.client_gone = true;
      co_return Routed::answered;
  }
  co_return Routed::answered;
}

}  // namespace switchyard::gateway
