#include "gateway/route_stage.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <fmt/compile.h>
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

// How a wait for a slot ended, as its span says.
const char* outcome_name(Admission::Outcome outcome) {
  switch (outcome) {
    case Admission::Outcome::granted:
      return "granted";
    case Admission::Outcome::queue_full:
      return "queue_full";
    case Admission::Outcome::timed_out:
      return "timed_out";
    case Admission::Outcome::cancelled:
      return "cancelled";
    case Admission::Outcome::shutting_down:
      return "shutting_down";
    case Admission::Outcome::key_revoked:
      return "key_revoked";
    case Admission::Outcome::refused:
      return "refused";
  }
  return "unknown";
}

}  // namespace

std::string RouteStage::timed_out_message(const RequestContext& ctx,
                                          std::chrono::milliseconds waited) const {
  if (ctx.waited_for_key == std::chrono::steady_clock::duration::zero() ||
      waited >= queue_options_.max_wait)
    return fmt::format("no slot of '{}' came free within {}; retry shortly", ctx.model,
                       seconds_text(waited));
  return fmt::format(
      "no slot of '{}' came free within {} (queue.max_wait, of which {} went waiting for the "
      "key's max_concurrency or a session seat); retry shortly",
      ctx.model, seconds_text(queue_options_.max_wait),
      seconds_text(std::chrono::ceil<std::chrono::milliseconds>(ctx.waited_for_key)));
}

Stage::Decision RouteStage::check(RequestContext& ctx) {
  // A gate's hold() may start a switch: asked once, in route(). A refused
  // first try takes nothing: route() tries again, then waits.
  Router::Refusal why = Router::Refusal::all_slots_busy;
  if (gates_.empty() && takes_slot(*ctx.route.endpoint) &&
      take_free_slot(ctx, ctx.query(), /*retry=*/false, why))
    return {};
  return {this, std::nullopt};
}

bool RouteStage::take_free_slot(RequestContext& ctx, const RouteQuery& query, bool retry,
                                Router::Refusal& why) {
  // A retry goes ahead of the queue; a first try only when no one waits.
  if (!retry && queue_.depth(ctx.model) != 0) return false;
  auto lease = router_.acquire(query, &why);
  if (!lease) return false;
  granted(ctx, std::move(*lease));
  return true;
}

awaitable<Verdict> RouteStage::run(RequestContext& ctx) {
  // One bound for both waits: what admit spent waiting for the key is gone.
  const auto left = std::max(
      std::chrono::milliseconds(0),
      queue_options_.max_wait - std::chrono::ceil<std::chrono::milliseconds>(ctx.waited_for_key));
  switch (co_await route(ctx, /*retry=*/false, left)) {
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

void RouteStage::finish(RequestContext& ctx) {
  const auto& usage = ctx.record.usage;
  if (usage)
    queue_.correct(ctx.model, ctx.key_name, ctx.share,
                   usage->prompt_tokens + usage->completion_tokens);
  for (SwitchGate* gate : gates_) gate->finished(ctx);
  // The router learns rates from whole answers only: a stream cut short is
  // charged its relayed tokens (stream_charge.h), not a rate.
  if (!usage || ctx.record.outcome() != RequestRecord::Outcome::ok) return;
  // A stream's first byte came after its prompt's prefill: the router's
  // prefill and decode rates learn from both halves.
  std::optional<std::chrono::steady_clock::time_point> first_byte;
  if (ctx.facts.stream && ctx.record.ttfb >= 0)
    first_byte = ctx.record.start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(ctx.record.ttfb));
  router_.finished(ctx.lease, *usage, first_byte);
}

void RouteStage::granted(RequestContext& ctx, RouteLease lease) {
  ctx.target = lease.instance();
  ctx.lease = std::move(lease);
  const RouteDecision& decision = ctx.lease.decision();
  metrics_.route_decided(router_.policy_name(), to_string(decision.reason), decision.match,
                         decision.home_waited);
  if (ctx.trace) {
    const auto root = obs::RequestTrace::root;
    ctx.trace->set(root, "switchyard.route.policy", std::string(router_.policy_name()));
    ctx.trace->set(root, "switchyard.route.reason", std::string(to_string(decision.reason)));
    if (decision.match >= 0) ctx.trace->set(root, "switchyard.route.match", decision.match);
  }
  if (!routing_options_.route_header) return;
  // Formatted in place, not into a string: once a request.
  fmt::memory_buffer value;
  const std::string& name = router_.instance_name(*ctx.target);
  if (decision.match >= 0)
    fmt::format_to(std::back_inserter(value), FMT_COMPILE("instance={}; match={:.2f}"), name,
                   decision.match);
  else
    fmt::format_to(std::back_inserter(value), FMT_COMPILE("instance={}"), name);
  ctx.response_headers.set("X-Switchyard-Route", std::string_view(value.data(), value.size()));
}

awaitable<RouteStage::Routed> RouteStage::route(RequestContext& ctx, bool retry,
                                                std::chrono::milliseconds max_wait) {
  const RouteQuery query = ctx.query();
  Router::Refusal why = Router::Refusal::all_slots_busy;
  const bool slot_call = takes_slot(*ctx.route.endpoint);
  if (!slot_call) {
    // Tokenizer, template and state calls are cheap and run beside
    // generation in the engine: any routable instance, no slot, no queue.
    ctx.target = router_.pick_any(query, &why);
    if (ctx.target) co_return Routed::ok;
    if (gates_.empty() || retry) co_return Routed::none_left;
    // Its model may be unloaded or loading: held below as a slot call is.
  }
  if (gates_.empty() || retry) co_return co_await route_slot(ctx, retry, max_wait, false);
  std::optional<std::chrono::milliseconds> held;
  for (auto* gate : gates_)
    if (auto bound = gate->hold(ctx)) held = std::max(held.value_or(*bound), *bound);
  Routed routed = Routed::none_left;
  if (held)
    routed = co_await route_held(ctx, *held);
  else if (slot_call)
    routed = co_await route_slot(ctx, retry, max_wait, false);
  for (auto* gate : gates_) gate->routed(ctx);
  // The wait took a slot, which a call beside generation does not keep.
  if (!slot_call) ctx.lease.release();
  co_return routed;
}

awaitable<RouteStage::Routed> RouteStage::route_held(RequestContext& ctx,
                                                     std::chrono::milliseconds bound) {
  obs::ScopedSpan span(ctx.trace, "switchyard.switch_hold");
  if (!ctx.facts.stream || hold_progress_.count() <= 0)
    co_return co_await route_slot(ctx, false, bound, true);
  auto ended = co_await (route_slot(ctx, false, bound, true) || tell_progress(ctx));
  if (ended.index() == 0) co_return std::get<0>(ended);
  ctx.record.client_gone = true;  // telling it failed
  co_return Routed::answered;
}

// While a streamed request is held for a model load or a profile switch, an
// SSE comment line every `hold_progress_` keeps clients and proxies from
// timing out on a silent connection (`: loading coder 12 s`). The first one
// starts the stream (200): what ends the request after that is an error
// event (RequestContext::answer), not a status. Its writes never await, so
// `||` can stop it only at its timer. Returns when the client is gone.
awaitable<void> RouteStage::tell_progress(RequestContext& ctx) const {
  net::steady_timer timer(co_await net::this_coro::executor);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    timer.expires_after(hold_progress_);
    const auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    if (ec) co_return;  // stopped: the wait ended
    auto& exchange = ctx.exchange;
    if (!exchange.started() &&
        !exchange.start_stream_now(200, ctx.stream_headers("text/event-stream")))
      co_return;
    const auto waited =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
    // A client not reading its comments gets no more of them.
    if (!exchange.flushed()) continue;
    const std::string line = fmt::format(": loading {} {} s\n\n", ctx.model, waited.count());
    ctx.record.bytes_out += line.size();
    if (!exchange.send_chunk_now(line)) co_return;
  }
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
  if (take_free_slot(ctx, query, retry, why)) co_return Routed::ok;
  // A switch holding the model brings its instances: wait for them.
  if (why == Router::Refusal::no_instance_ready && !held) co_return Routed::none_left;
  // Waiting for a slot, or for an instance still loading its model.
  obs::ScopedSpan span(ctx.trace, why == Router::Refusal::no_instance_ready
                                      ? "switchyard.load_wait"
                                      : "switchyard.queue_wait");
  auto waited = co_await (queue_.acquire(query, retry, max_wait, ctx.share) ||
                          ctx.exchange.until_client_gone());
  if (waited.index() == 1) {
    ctx.record.client_gone = true;
    span.fail("client_closed");
    co_return Routed::answered;
  }
  Admission admission = std::get<0>(std::move(waited));
  span.set("switchyard.wait.outcome", std::string(outcome_name(admission.outcome)));
  if (admission.outcome != Admission::Outcome::granted) span.fail(outcome_name(admission.outcome));
  metrics_.observe_queue_wait(ctx.model, admission.waited_seconds);
  ctx.record.queued += admission.waited_seconds;
  switch (admission.outcome) {
    case Admission::Outcome::granted:
      if (admission.charged) ctx.share.charged = admission.charged;
      granted(ctx, std::move(admission.lease));
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
      const ApiError error =
          gate_refusal(ctx).value_or(ApiError::rate_limited(timed_out_message(ctx, max_wait)));
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
