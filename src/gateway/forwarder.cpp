#include "gateway/forwarder.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http/sse.h"
#include "http/upstream.h"
#include "openai/api_error.h"
#include "openai/usage.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using openai::ApiError;

namespace {

// A non-streamed upstream body larger than this is refused (a 502) rather
// than buffered: generous for embeddings of large batches.
constexpr std::size_t kMaxBufferedResponse = std::size_t(256) << 20;

bool retryable_status(int status) {
  return status == 502 || status == 503 || status == 504;
}

awaitable<void> answer(http::Exchange& exchange, RequestRecord& record, const ApiError& error) {
  http::Response reply = openai::error_response(error);
  reply.headers.add("X-Request-Id", record.id);
  record.status = reply.status;
  record.bytes_out = reply.body.size();
  co_await exchange.respond(std::move(reply));
}

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", std::chrono::duration<double>(d).count());
}

}  // namespace

// How one attempt on one instance ended: answered (or abandoned because the
// client left), or failed before any byte reached the client.
struct Forwarder::Attempt {
  bool retry = false;
  std::string error;  // what failed, when retry
};

Forwarder::Forwarder(const fleet::FleetConfig& config, fleet::Fleet& fleet, WaitQueue& queue,
                     Router& router, obs::GatewayMetrics& metrics)
    : config_(config), fleet_(fleet), queue_(queue), router_(router), metrics_(metrics) {}

awaitable<void> Forwarder::forward(http::Request& request, openai::Endpoint endpoint,
                                   const openai::RequestFacts& facts, const std::string& model,
                                   http::Exchange& exchange, RequestRecord& record) {
  // Tokenizer calls are cheap and run beside generation in the engine: they
  // go to any ready instance without taking a slot.
  const bool takes_slot =
      endpoint != openai::Endpoint::tokenize && endpoint != openai::Endpoint::detokenize;
  std::optional<std::size_t> avoid;
  std::string last_error;
  std::string spliced;  // the body with the instance's model name, when it differs

  for (int attempt_no = 1; attempt_no <= config_.attempts; ++attempt_no) {
    RouteLease lease;
    std::optional<std::size_t> index;
    if (takes_slot) {
      // The common case needs no waiting, and no race with the client. A
      // retry has waited its turn already and goes ahead of the queue.
      std::optional<RouteLease> now;
      Router::Refusal why = Router::Refusal::all_slots_busy;
      if (avoid || queue_.depth(model) == 0) now = router_.acquire(model, &why, avoid);
      // Every other instance is down or ejected: waiting would not help.
      if (!now && avoid && why == Router::Refusal::no_instance_ready) break;
      if (now) {
        lease = std::move(*now);
      } else {
        metrics_.set_queue_depth(model, queue_.depth(model) + 1);
        auto waited = co_await (queue_.acquire(model, avoid) || exchange.until_client_gone());
        metrics_.set_queue_depth(model, queue_.depth(model));
        if (waited.index() == 1) {
          record.client_gone = true;
          co_return;
        }
        Admission admission = std::get<0>(std::move(waited));
        metrics_.observe_queue_wait(model, admission.waited_seconds);
        std::optional<ApiError> refusal;
        switch (admission.outcome) {
          case Admission::Outcome::granted:
            lease = std::move(admission.lease);
            break;
          case Admission::Outcome::queue_full:
            refusal = ApiError::rate_limited(
                fmt::format("the queue for '{}' is full ({} waiting); retry shortly", model,
                            config_.queue.max_length));
            break;
          case Admission::Outcome::timed_out:
            refusal = ApiError::rate_limited(
                fmt::format("no slot of '{}' came free within {}; retry shortly", model,
                            seconds_text(config_.queue.max_wait)));
            break;
          case Admission::Outcome::shutting_down:
            refusal = ApiError::unavailable("the gateway is shutting down", "shutting_down");
            break;
          case Admission::Outcome::cancelled:
            record.client_gone = true;
            co_return;
        }
        if (refusal) {
          co_await answer(exchange, record, *refusal);
          co_return;
        }
      }
      index = lease.instance();
    } else {
      index = router_.any_ready(model, avoid);
      if (!index && avoid) break;
      if (!index) {
        const ApiError error = ApiError::unavailable(
            fmt::format("no instance of '{}' is ready", model), "no_instance_ready");
        co_await answer(exchange, record, error);
        co_return;
      }
    }

    fleet::Instance& inst = *fleet_.instances()[*index];
    record.instance = inst.name();
    record.attempts = attempt_no;
    metrics_.set_in_flight(inst.name(), router_.in_flight(inst.index));

    http::UpstreamRequest upstream;
    upstream.method = request.head.method;
    upstream.target = request.head.target;
    upstream.headers.add(
        "Content-Type",
        std::string(request.head.headers.find("content-type").value_or("application/json")));
    if (auto accept = request.head.headers.find("accept"))
      upstream.headers.add("Accept", std::string(*accept));
    upstream.headers.add("X-Request-Id", record.id);
    // The client's Authorization is the gateway's business, never the engine's.
    if (inst.config.api_key)
      upstream.headers.add("Authorization", "Bearer " + *inst.config.api_key);
    if (facts.model == inst.served_model() || facts.model_length == 0) {
      upstream.body = request.body;
    } else {
      spliced = openai::replace_model(request.body, facts, inst.served_model());
      upstream.body = spliced;
    }

    Attempt outcome = co_await attempt(inst, upstream, exchange, record);
    lease = RouteLease();
    metrics_.set_in_flight(inst.name(), router_.in_flight(inst.index));
    if (!outcome.retry) co_return;

    metrics_.add_retry(model, inst.name());
    fleet_.report_failure(inst.index, outcome.error);
    spdlog::warn("request {}: attempt {} on {} failed before the first byte: {}", record.id,
                 attempt_no, inst.name(), outcome.error);
    last_error = std::move(outcome.error);
    avoid = inst.index;
  }
  const ApiError error = ApiError::bad_gateway(
      fmt::format("{} attempt(s) failed; the last: {}", record.attempts, last_error));
  co_await answer(exchange, record, error);
}

awaitable<Forwarder::Attempt> Forwarder::attempt(fleet::Instance& inst,
                                                 http::UpstreamRequest& upstream,
                                                 http::Exchange& exchange, RequestRecord& record) {
  http::UpstreamCall call(*inst.pool);
  // A client that leaves aborts the upstream call at once, freeing the
  // engine's slot and ours; relay() then returns on the call's error.
  exchange.watch_client([&call, &record] {
    record.client_gone = true;
    call.abort();
  });
  Attempt outcome = co_await relay(inst, call, upstream, exchange, record);
  exchange.unwatch_client();
  co_return outcome;
}

awaitable<Forwarder::Attempt> Forwarder::relay(fleet::Instance& inst, http::UpstreamCall& call,
                                               const http::UpstreamRequest& upstream,
                                               http::Exchange& exchange, RequestRecord& record) {
  // Never throws: attempt() must stop watching the client before `call` goes.
  try {
    auto head = co_await call.send(upstream);
    if (!head) {
      if (record.client_gone) co_return Attempt{};
      co_return Attempt{true, head.error().message};
    }
    if (retryable_status(head->status)) {
      auto body = co_await call.read_all(64 * 1024);
      co_return Attempt{true, fmt::format("{} answered {} {}", inst.name(), head->status,
                                          body ? body->substr(0, 200) : std::string())};
    }
    const std::string content_type(head->headers.find("content-type").value_or("application/json"));

    if (!content_type.starts_with("text/event-stream")) {
      auto body = co_await call.read_all(kMaxBufferedResponse);
      if (!body) {
        if (record.client_gone) co_return Attempt{};
        co_return Attempt{true, body.error().message};
      }
      record.usage = openai::find_usage(*body);
      http::Response reply;
      reply.status = head->status;
      reply.headers.add("Content-Type", content_type);
      reply.headers.add("X-Request-Id", record.id);
      reply.body = std::move(*body);
      record.status = reply.status;
      record.ttfb = record.seconds_since_start();
      record.bytes_out = reply.body.size();
      co_await exchange.respond(std::move(reply));
      co_return Attempt{};
    }

    // The client's stream starts with the first whole event, so an engine
    // that fails before producing one is retried invisibly; after that a
    // failure ends the stream with an error event at an event boundary.
    bool started = false;
    const auto start_client_stream = [&]() -> awaitable<bool> {
      http::Headers headers;
      headers.add("Content-Type", content_type);
      headers.add("Cache-Control", "no-cache");
      headers.add("X-Accel-Buffering", "no");
      headers.add("X-Request-Id", record.id);
      record.status = head->status;
      started = true;
      const bool ok = co_await exchange.start_stream(head->status, std::move(headers));
      record.ttfb = record.seconds_since_start();
      co_return ok;
    };
    http::SseSplitter splitter;
    for (;;) {
      auto piece = co_await call.read_some();
      if (!piece) {
        if (record.client_gone) co_return Attempt{};
        if (!started) co_return Attempt{true, piece.error().message};
        spdlog::warn("request {}: instance {} failed mid-stream: {}", record.id, inst.name(),
                     piece.error().message);
        fleet_.report_failure(inst.index, piece.error().message);
        const ApiError error = ApiError::upstream_failed(
            fmt::format("instance {} failed mid-stream: {}", inst.name(), piece.error().message));
        const std::string tail =
            http::sse_event(openai::error_body(error)) + http::sse_event("[DONE]");
        record.bytes_out += tail.size();
        if (co_await exchange.send_chunk(tail)) co_await exchange.end_stream();
        co_return Attempt{};
      }
      if (piece->empty()) break;
      splitter.feed(*piece);
      while (auto event = splitter.next()) {
        if (auto usage = openai::find_usage(http::sse_data(*event))) record.usage = usage;
        if (!started && !co_await start_client_stream()) co_return Attempt{};
        record.bytes_out += event->size();
        if (!co_await exchange.send_chunk(*event)) co_return Attempt{};
      }
    }
    if (!started && !co_await start_client_stream()) co_return Attempt{};
    const std::string rest(splitter.pending());
    if (!rest.empty() && !co_await exchange.send_chunk(rest)) co_return Attempt{};
    co_await exchange.end_stream();
  } catch (const std::exception& e) {
    spdlog::error("request {}: {}", record.id, e.what());
  }
  co_return Attempt{};
}

}  // namespace switchyard::gateway
