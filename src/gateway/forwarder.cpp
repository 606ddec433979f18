#include "gateway/forwarder.h"

#include <boost/asio.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/stream_charge.h"
#include "http/sse.h"
#include "http/upstream.h"
#include "openai/api_error.h"
#include "openai/response_rewrite.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using openai::ApiError;
using openai::Endpoint;

namespace {

// A non-streamed upstream body larger than this is refused (a 502) rather
// than buffered: generous for embeddings of large batches.
constexpr std::size_t kMaxBufferedResponse = std::size_t(256) << 20;

bool retryable_status(int status) {
  return status == 502 || status == 503 || status == 504;
}

// Streams whose usage the gateway always wants (the client may not ask).
bool forces_usage(const RequestContext& ctx) {
  const auto e = *ctx.route.endpoint;
  return ctx.facts.stream && (e == Endpoint::chat_completions || e == Endpoint::completions);
}

// Request headers an engine may need that the gateway passes on.
constexpr std::string_view kPassedHeaders[] = {"accept", "anthropic-version", "anthropic-beta"};

// The request as `inst` gets it: the client's body, or the body rewritten
// for the instance's model name and the usage the gateway wants (into
// `rewritten`, which the request then views); the headers an engine may
// need, the request id, the trace context (`traceparent`: this attempt's
// span, empty untraced) and the instance's own key.
http::UpstreamRequest engine_request(const RequestContext& ctx, const fleet::Instance& inst,
                                     std::string traceparent, bool force_usage,
                                     std::string& rewritten) {
  const auto& head = ctx.request.head;
  http::UpstreamRequest upstream;
  upstream.method = head.method;
  upstream.target = head.target;
  upstream.headers.add("Content-Type",
                       std::string(head.headers.find("content-type").value_or("application/json")));
  for (auto name : kPassedHeaders)
    if (auto value = head.headers.find(name))
      upstream.headers.add(std::string(name), std::string(*value));
  upstream.headers.add("X-Request-Id", ctx.record.id);
  // The engine continues the trace under this attempt (vLLM with
  // --otlp-traces-endpoint); untraced, the client's context passes on as it came.
  if (!traceparent.empty())
    upstream.headers.add("traceparent", std::move(traceparent));
  else if (auto parent = head.headers.find("traceparent"))
    upstream.headers.add("traceparent", std::string(*parent));
  if (auto state = head.headers.find("tracestate"))
    upstream.headers.add("tracestate", std::string(*state));
  // The client's key is the gateway's business, never the engine's.
  if (inst.config.api_key) upstream.headers.add("Authorization", "Bearer " + *inst.config.api_key);
  if (openai::needs_rewrite(ctx.facts, inst.served_model(), force_usage)) {
    rewritten =
        openai::rewrite_request(ctx.request.body, ctx.facts, inst.served_model(), force_usage);
    upstream.body = rewritten;
  } else {
    upstream.body = ctx.request.body;
  }
  return upstream;
}

}  // namespace

// How one attempt on one instance ended: answered (or abandoned because the
// client left), or failed before any byte reached the client.
struct Forwarder::Attempt {
  bool retry = false;
  std::string error;   // what failed, when retry
  bool local = false;  // the gateway itself ran short (fds, memory): not the instance's fault
};

namespace {

// What a relay keeps of the engine's response head.
struct ReplyHead {
  int status = 0;
  std::string content_type;
  std::optional<std::string> simulated;  // its X-Simulated header
};

}  // namespace

awaitable<Verdict> Forwarder::run(RequestContext& ctx) {
  const auto budget_end = ctx.record.start + options_.retry_budget;
  std::string last_error;
  for (int attempt_no = 1;; ++attempt_no) {
    if (cutoff_.cut()) co_return co_await end_for_drain(ctx);
    fleet::Instance& inst = *upstreams_.instances[*ctx.target];
    ctx.record.instance = inst.name();
    ctx.record.attempts = attempt_no;
    Attempt outcome = co_await attempt(ctx, inst);
    if (!outcome.retry) {
      if (ctx.record.status > 0 && ctx.record.status < 500 && !ctx.record.upstream_failed)
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

awaitable<Forwarder::Attempt> Forwarder::attempt(RequestContext& ctx, fleet::Instance& inst) {
  auto& record = ctx.record;
  auto& exchange = ctx.exchange;
  obs::ScopedSpan span(ctx.trace, "switchyard.attempt", obs::SpanKind::client);
  span.set("switchyard.instance", inst.name());
  span.set("switchyard.attempt", std::int64_t{record.attempts});
  if (inst.url) {
    span.set("server.address", inst.url->host);
    span.set("server.port", std::int64_t{inst.url->port});
  }

  const bool force_usage = forces_usage(ctx);
  const auto endpoint = *ctx.route.endpoint;
  openai::ResponseRewriter rewriter(
      ctx.client_model, force_usage && !ctx.facts.include_usage,
      endpoint == Endpoint::native_completion || endpoint == Endpoint::infill
          ? openai::UsageMember::tokens_predicted
          : openai::UsageMember::usage,
      /*note_response_id=*/endpoint == Endpoint::responses);

  http::UpstreamCall call(*inst.pool);
  const DrainCutoff::Watch cut_watch(cutoff_, call);
  // Output tokens relayed to the client: what a stream cut short is charged.
  std::int64_t delivered = 0;
  // Abandoned if the instance is ejected before the client has a byte.
  unanswered_.push_back({inst.index, &call});
  bool listed = true;
  const auto answering = [&] {
    if (!std::exchange(listed, false)) return;
    ctx.lease.answering();
    // A vector, not a node per request: it holds the requests in flight.
    auto it = std::find(unanswered_.begin(), unanswered_.end(), Unanswered{inst.index, &call});
    *it = unanswered_.back();
    unanswered_.pop_back();
  };
  // A client that leaves aborts the upstream call at once, freeing the
  // engine's slot and ours; the relay then returns on the call's error.
  exchange.watch_client([&call, &record] {
    record.client_gone = true;
    call.abort();
  });
  const auto failed = [&](const Error& e) {
    return Attempt{true, e.message, call.failure() == http::UpstreamFailure::local};
  };
  // What the relay keeps of the engine's response head (the head itself,
  // its headers some 430 bytes, is gone once read).
  ReplyHead reply;

  // The relay, in two coroutines so that every return passes the unwatch
  // below, and so that an open stream's loop holds nothing of what sending
  // the request and reading the response's head took: a coroutine's frame
  // holds all its locals for as long as it runs (docs/reliability.md, "Idle
  // streams"). The first sends the request, reads the response's head into
  // `reply` and relays a body whole; nullopt: a stream follows.
  const auto open = [&]() -> awaitable<std::optional<Attempt>> {
    std::string rewritten;
    const http::UpstreamRequest upstream =
        engine_request(ctx, inst, span.traceparent(), force_usage, rewritten);
    auto reply_head = co_await call.send(upstream);
    if (!reply_head) {
      if (record.client_gone) co_return Attempt{};
      co_return failed(reply_head.error());
    }
    if (retryable_status(reply_head->status)) {
      auto body = co_await call.read_all(64 * 1024);
      co_return Attempt{true, fmt::format("{} answered {} {}", inst.name(), reply_head->status,
                                          body ? body->substr(0, 200) : std::string())};
    }
    reply.status = reply_head->status;
    reply.content_type = reply_head->headers.find("content-type").value_or("application/json");
    // The simulator says what it is; clients (switchyard bench) see it through the gateway.
    if (auto simulated = reply_head->headers.find("x-simulated")) reply.simulated = *simulated;
    if (reply.content_type.starts_with("text/event-stream")) co_return std::nullopt;

    auto body = co_await call.read_all(kMaxBufferedResponse, buffered_);
    if (!body) {
      if (record.client_gone) co_return Attempt{};
      co_return failed(body.error());
    }
    answering();
    if (exchange.started()) {
      // Told of its model's load, the client has a stream: the engine's
      // whole answer (an error: a streamed request gets no other) ends it.
      co_await ctx.answer(ApiError::upstream_failed(
          fmt::format("{} answered {} {}", inst.name(), reply.status, body->substr(0, 200))));
      co_return Attempt{};
    }
    if (reply.content_type.starts_with("application/json")) rewriter.rewrite_body(*body);
    if (const auto& usage = rewriter.usage())
      metrics_.generation().add(inst.name(), usage->completion_tokens);
    http::Response response;
    response.status = reply.status;
    response.headers.add("Content-Type", reply.content_type);
    response.headers.add("X-Request-Id", record.id);
    if (reply.simulated) response.headers.add("X-Simulated", *reply.simulated);
    for (auto [name, value] : ctx.response_headers) response.headers.add(name, value);
    response.body = std::move(*body);
    record.status = response.status;
    record.ttfb = record.seconds_since_start();
    record.bytes_out = response.body.size();
    if (!co_await exchange.respond(std::move(response))) record.client_gone = true;
    co_return Attempt{};
  };

  // The stream, event by event.
  const auto relay_stream = [&]() -> awaitable<Attempt> {
    // The client's stream starts with the first whole event, so an engine
    // that fails before producing one is retried invisibly; after that a
    // failure ends the stream with an error event at an event boundary.
    bool started = false;
    const auto start = [&]() -> awaitable<bool> {
      answering();
      record.status = reply.status;
      started = true;
      bool ok = true;
      // A request held for its model's load may have had its head already.
      if (!exchange.started()) {
        http::Headers headers = ctx.stream_headers(reply.content_type);
        if (reply.simulated) headers.add("X-Simulated", *reply.simulated);
        ok = co_await exchange.start_stream(reply.status, std::move(headers));
      }
      record.ttfb = record.seconds_since_start();
      if (ctx.trace) ctx.trace->event(obs::RequestTrace::root, "first_token");
      co_return ok;
    };
    // Per read, once started: no coroutine unless the client's socket is full.
    const auto send_now = [&](std::string_view bytes) {
      record.bytes_out += bytes.size();
      return exchange.send_chunk_now(bytes);
    };
    const auto send = [&](std::string_view bytes) -> awaitable<bool> {
      if (!started && !co_await start()) co_return false;
      if (!send_now(bytes)) co_return false;
      if (exchange.flushed()) co_return true;
      co_return co_await exchange.flush();
    };
    // The end of a started stream whose engine failed (or that the drain's
    // cutoff broke): what is held back, then an error event.
    const auto end_broken = [&](const Error& broke) -> awaitable<void> {
      std::string tail;
      rewriter.finish_stream(tail);
      if (cutoff_.cut()) {
        record.shut_down = true;
        tail += openai::stream_error_events(cutoff_.error(), ctx.route.dialect);
        if (co_await send(tail)) co_await exchange.end_stream();
        co_return;
      }
      spdlog::warn("request {}: instance {} failed mid-stream: {}", record.id, inst.name(),
                   broke.message);
      if (call.failure() != http::UpstreamFailure::local)
        upstreams_.report_failure(inst.index, broke.message);
      record.upstream_failed = true;
      const ApiError error = ApiError::upstream_failed(
          fmt::format("instance {} failed mid-stream: {}", inst.name(), broke.message));
      tail += openai::stream_error_events(error, ctx.route.dialect);
      if (co_await send(tail)) co_await exchange.end_stream();
    };
    http::SseSplitter splitter;
    std::string out;  // what one read yields for the client: sent in one write
    for (;;) {
      auto pieces = co_await call.read_some();
      std::optional<Error> broke;
      std::int64_t outputs = 0;  // in this read's events
      if (!pieces) {
        broke = pieces.error();
      } else if (!pieces->empty()) {
        out.clear();
        for (auto piece : *pieces)
          splitter.split(piece, [&](std::string_view event) {
            outputs += rewriter.rewrite_event(event, out);
          });
        metrics_.generation().add(inst.name(), outputs);
        if (splitter.overflowed()) {
          // An event that never ends cannot be relayed event by event.
          call.abort();
          broke = Error{fmt::format("{} sent an event longer than {} bytes", inst.name(),
                                    http::SseSplitter::kDefaultMaxEvent)};
        }
      }
      if (broke) {
        if (record.client_gone) co_return Attempt{};
        if (!started) co_return failed(*broke);
        co_await end_broken(*broke);
        co_return Attempt{};
      }
      if (pieces->empty()) break;
      if (out.empty()) continue;
      bool sent;
      if (started)  // nearly every read: written at once, no coroutine
        sent = send_now(out);
      else
        sent = co_await send(out);
      if (sent && !exchange.flushed()) sent = co_await exchange.flush();
      if (!sent) {
        record.client_gone = true;
        co_return Attempt{};
      }
      delivered += outputs;
    }
    // A held-back finish chunk, then bytes after the last blank line as they came.
    std::string rest;
    rewriter.finish_stream(rest);
    rest.append(splitter.pending());
    if ((!rest.empty() || !started) && !co_await send(rest)) {
      record.client_gone = true;
      co_return Attempt{};
    }
    if (!co_await exchange.end_stream()) record.client_gone = true;
    co_return Attempt{};
  };
  Attempt outcome;
  try {
    if (auto ended = co_await open())
      outcome = std::move(*ended);
    else
      outcome = co_await relay_stream();
  } catch (const std::exception& e) {
    // Nothing in the relay throws by design; a bug must not leave the watch armed.
    spdlog::error("request {}: {}", record.id, e.what());
  }
  record.usage = charged_usage(rewriter.usage(), delivered);
  if (record.status == 200) ctx.response_id = rewriter.response_id();
  exchange.unwatch_client();
  answering();
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
  // abort() only closes sockets; the calls' coroutines resume later.
  for (const auto& [instance, call] : unanswered_)
    if (instance == index) call->abort();
}

}  // namespace switchyard::gateway
