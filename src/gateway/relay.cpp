#include "gateway/relay.h"

#include <boost/asio.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/stream_charge.h"
#include "openai/api_error.h"

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

openai::ResponseRewriter rewriter_for(const RequestContext& ctx) {
  const auto endpoint = *ctx.route.endpoint;
  return openai::ResponseRewriter(
      ctx.client_model, forces_usage(ctx) && !ctx.facts.include_usage,
      endpoint == Endpoint::native_completion || endpoint == Endpoint::infill
          ? openai::UsageMember::tokens_predicted
          : openai::UsageMember::usage,
      /*note_response_id=*/endpoint == Endpoint::responses);
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
                       head.headers.find("content-type").value_or("application/json"));
  for (auto name : kPassedHeaders)
    if (auto value = head.headers.find(name)) upstream.headers.add(name, *value);
  upstream.headers.add("X-Request-Id", ctx.record.id);
  // The engine continues the trace under this attempt (vLLM with
  // --otlp-traces-endpoint); untraced, the client's context passes on as it came.
  if (!traceparent.empty())
    upstream.headers.add("traceparent", std::move(traceparent));
  else if (auto parent = head.headers.find("traceparent"))
    upstream.headers.add("traceparent", *parent);
  if (auto state = head.headers.find("tracestate")) upstream.headers.add("tracestate", *state);
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

// What one engine read yields for the client: one buffer a thread, not one
// a stream, since it is written before the relay next suspends; an open
// stream then holds none (some 390 bytes each), and the thread keeps the
// largest read's (bounded by SseSplitter's longest event).
std::string& read_output() {
  thread_local std::string out;
  out.clear();
  return out;
}

}  // namespace

Relay::Relay(RequestContext& ctx, fleet::Instance& inst, http::UpstreamCall& call,
             UnansweredCalls::Entry& unanswered, const DrainCutoff& cutoff,
             obs::GatewayMetrics& metrics)
    : ctx_(ctx),
      inst_(inst),
      call_(call),
      unanswered_(unanswered),
      cutoff_(cutoff),
      metrics_(metrics),
      rewriter_(rewriter_for(ctx)),
      force_usage_(forces_usage(ctx)) {}

void Relay::answering() {
  if (unanswered_.answered()) ctx_.lease.answering();
}

std::optional<openai::Usage> Relay::charged_usage() const {
  return gateway::charged_usage(rewriter_.usage(), delivered_);
}

bool Relay::failed_here() const {
  return ran_short_ || call_.failure() == http::UpstreamFailure::local;
}

AttemptOutcome Relay::failed(const Error& e) const {
  return AttemptOutcome{true, e.message, failed_here()};
}

awaitable<std::optional<AttemptOutcome>> Relay::open(std::string traceparent,
                                                     std::shared_ptr<http::BufferBudget> buffered) {
  auto& record = ctx_.record;
  std::string rewritten;
  const http::UpstreamRequest upstream =
      engine_request(ctx_, inst_, std::move(traceparent), force_usage_, rewritten);
  auto head = co_await call_.send(upstream);
  if (!head) {
    if (record.client_gone) co_return AttemptOutcome{};
    co_return failed(head.error());
  }
  if (retryable_status(head->status)) {
    auto body = co_await call_.read_all(64 * 1024);
    co_return AttemptOutcome{true, fmt::format("{} answered {} {}", inst_.name(), head->status,
                                               body ? body->substr(0, 200) : std::string())};
  }
  status_ = head->status;
  content_type_ = head->headers.find("content-type").value_or("application/json");
  // The simulator says what it is; clients (switchyard bench) see it through the gateway.
  if (auto simulated = head->headers.find("x-simulated")) simulated_ = *simulated;
  if (content_type_.starts_with("text/event-stream")) co_return std::nullopt;

  auto body = co_await call_.read_all(kMaxBufferedResponse, std::move(buffered));
  if (!body) {
    if (record.client_gone) co_return AttemptOutcome{};
    co_return failed(body.error());
  }
  answering();
  if (ctx_.exchange.started()) {
    // Told of its model's load, the client has a stream: the engine's
    // whole answer (an error: a streamed request gets no other) ends it.
    co_await ctx_.answer(ApiError::upstream_failed(
        fmt::format("{} answered {} {}", inst_.name(), status_, body->substr(0, 200))));
    co_return AttemptOutcome{};
  }
  http::Response response = body_response(std::move(*body));
  record.status = response.status;
  record.ttfb = record.seconds_since_start();
  record.bytes_out = response.body.size();
  if (!co_await ctx_.exchange.respond(std::move(response))) record.client_gone = true;
  co_return AttemptOutcome{};
}

http::Response Relay::body_response(std::string body) {
  if (content_type_.starts_with("application/json")) rewriter_.rewrite_body(body);
  if (const auto& usage = rewriter_.usage())
    metrics_.generation().add(inst_.name(), usage->completion_tokens);
  http::Response response;
  response.status = status_;
  response.headers.add("Content-Type", content_type_);
  response.headers.add("X-Request-Id", ctx_.record.id);
  if (simulated_) response.headers.add("X-Simulated", *simulated_);
  for (auto [name, value] : ctx_.response_headers) response.headers.add(name, value);
  response.body = std::move(body);
  return response;
}

awaitable<bool> Relay::start_stream() {
  answering();
  ctx_.record.status = status_;
  started_ = true;
  bool ok = true;
  // A request held for its model's load may have had its head already.
  if (!ctx_.exchange.started()) {
    http::Headers headers = ctx_.stream_headers(content_type_);
    if (simulated_) headers.add("X-Simulated", *simulated_);
    ok = co_await ctx_.exchange.start_stream(status_, std::move(headers));
  }
  ctx_.record.ttfb = ctx_.record.seconds_since_start();
  if (ctx_.trace) ctx_.trace->event(obs::RequestTrace::root, "first_token");
  co_return ok;
}

// Per read, once started: no coroutine unless the client's socket is full.
bool Relay::send_now(std::string_view bytes) {
  if (!ctx_.exchange.send_chunk_now(bytes)) return false;
  ctx_.record.bytes_out += bytes.size();
  return true;
}

awaitable<bool> Relay::send(std::string_view bytes) {
  // Not `!started_ && !co_await start_stream()`: GCC 12 built that into a
  // coroutine resumed after it had ended (SIGILL in the forwarder's tests).
  if (!started_) {
    const bool ok = co_await start_stream();
    if (!ok) co_return false;
  }
  if (!send_now(bytes)) co_return false;
  if (ctx_.exchange.flushed()) co_return true;
  co_return co_await ctx_.exchange.flush();
}

awaitable<AttemptOutcome> Relay::end_broken(const Error& broke) {
  // Nothing of the engine's reached the client (its stream's first write
  // may have failed): another instance may still answer.
  if (ctx_.record.bytes_out == 0) co_return failed(broke);
  std::string tail;
  rewriter_.finish_stream(tail);
  AttemptOutcome outcome;
  if (cutoff_.cut()) {
    ctx_.record.shut_down = true;
    tail += openai::stream_error_events(cutoff_.error(), ctx_.route.dialect);
  } else {
    spdlog::warn("request {}: instance {} failed mid-stream: {}", ctx_.record.id, inst_.name(),
                 broke.message);
    ctx_.record.upstream_failed = true;
    outcome.error = broke.message;
    outcome.local = failed_here();
    const ApiError error = ApiError::upstream_failed(
        fmt::format("instance {} failed mid-stream: {}", inst_.name(), broke.message));
    tail += openai::stream_error_events(error, ctx_.route.dialect);
  }
  if (co_await send(tail)) co_await ctx_.exchange.end_stream();
  co_return outcome;
}

bool Relay::take(http::BodyPieces pieces, std::chrono::steady_clock::time_point now) {
  try {
    // Before the stream starts, what the coroutine will send is held here:
    // starting may suspend, and other streams then use the thread's buffer.
    std::string& out = started_ ? read_output() : first_;
    std::int64_t outputs = 0;  // in this read's events
    // An event shaped like the last delta is rewritten where it starts;
    // the others once the splitter has found their end.
    const auto known = [&](std::string_view rest) {
      const std::size_t length = rewriter_.rewrite_known_event(rest, out);
      outputs += length > 0;
      return length;
    };
    for (auto piece : pieces)
      splitter_.split(piece, known, [&](std::string_view event) {
        outputs += rewriter_.rewrite_event(event, out);
      });
    obs::GenerationMeter::add(*generated_, outputs, now);
    if (splitter_.overflowed()) {
      // An event that never ends cannot be relayed event by event.
      call_.abort();
      broke_ = Error{fmt::format("{} sent an event longer than {} bytes", inst_.name(),
                                 http::SseSplitter::kDefaultMaxEvent)};
      return false;
    }
    unsent_outputs_ += outputs;
    if (out.empty()) return true;
    if (!started_) return false;
    if (!send_now(out)) {
      ctx_.record.client_gone = true;
      return false;
    }
    if (!ctx_.exchange.flushed()) return false;
    delivered_ += std::exchange(unsent_outputs_, 0);
    return true;
  } catch (const std::exception& e) {  // nothing here throws by design; memory may run out
    ran_short(e);
    return false;
  }
}

void Relay::ran_short(const std::exception& e) {
  call_.abort();
  ran_short_ = true;
  broke_ = Error{fmt::format("the gateway could not relay the stream: {}", e.what())};
}

awaitable<bool> Relay::deliver() {
  bool sent;
  try {
    if (!started_) {
      sent = co_await send(first_);
      std::string().swap(first_);
    } else {
      sent = co_await ctx_.exchange.flush();
    }
  } catch (const std::exception& e) {  // as in take(): memory may run out
    ran_short(e);
    co_return false;
  }
  if (sent) delivered_ += std::exchange(unsent_outputs_, 0);
  co_return sent;
}

awaitable<AttemptOutcome> Relay::relay_stream() {
  auto& record = ctx_.record;
  generated_ = &metrics_.generation().series(inst_.name());
  for (;;) {
    // Reads go on inside the call while take() relays them.
    const auto read = co_await call_.read_some(*this);
    if (!read) broke_ = read.error();
    if (record.client_gone) co_return AttemptOutcome{};
    if (!broke_) {
      if (read->empty()) break;
      if (!co_await deliver() && !broke_) {
        record.client_gone = true;
        co_return AttemptOutcome{};
      }
    }
    if (broke_) co_return co_await end_broken(*broke_);
  }
  // A held-back finish chunk, then bytes after the last blank line as they came.
  std::string rest;
  rewriter_.finish_stream(rest);
  rest.append(splitter_.pending());
  bool sent = true;
  if (!rest.empty() || !started_) sent = co_await send(rest);
  if (sent) sent = co_await ctx_.exchange.end_stream();
  if (!sent) record.client_gone = true;
  co_return AttemptOutcome{};
}

}  // namespace switchyard::gateway
