// One attempt's exchange with an engine: the request sent as the instance
// gets it, and its answer relayed to the client, a body whole or a stream
// event by event, with the model named as the client asked and the usage
// noted on the way. A stream starts for the client with its first whole
// event, so an engine that fails before one is retried invisibly; after
// that a failure ends the stream with an error event at an event boundary.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/drain_cutoff.h"
#include "gateway/pipeline.h"
#include "gateway/unanswered_calls.h"
#include "http/sse.h"
#include "http/upstream.h"
#include "obs/gateway_metrics.h"
#include "obs/generation_meter.h"
#include "openai/response_rewrite.h"

namespace switchyard::gateway {

// How one attempt ended.
struct AttemptOutcome {
  bool retry = false;  // failed before any byte reached the client: try elsewhere
  // What failed: when retry, or when the engine broke off a started stream
  // (ctx.record.upstream_failed).
  std::string error;
  bool local = false;  // the gateway itself ran short (fds, memory): not the instance's fault
};

class Relay final : private http::PieceSink {
 public:
  // All references must outlive the relay; `call` is the attempt's, on `inst`.
  Relay(RequestContext& ctx, fleet::Instance& inst, http::UpstreamCall& call,
        UnansweredCalls::Entry& unanswered, const DrainCutoff& cutoff,
        obs::GatewayMetrics& metrics);

  // Sends the request, reads the answer's head and relays a body whole;
  // nullopt: a stream follows (relay_stream). Two coroutines, so that an
  // open stream's loop holds nothing of what sending the request took (a
  // frame holds all its locals for as long as it runs: docs/reliability.md,
  // "Idle streams"). Neither throws by design. `traceparent`: the attempt's
  // span, empty untraced; `buffered`: what all non-streamed bodies being
  // relayed may hold at once.
  boost::asio::awaitable<std::optional<AttemptOutcome>> open(
      std::string traceparent, std::shared_ptr<http::BufferBudget> buffered);
  // The stream, event by event: each read relayed where it completes
  // (take), this coroutine resumed only to start the client's stream, to
  // wait for the client to take a write, and at the end.
  boost::asio::awaitable<AttemptOutcome> relay_stream();

  // The client is about to see the answer: the call is no longer cut when
  // its instance is ejected, and its prompt no longer counts as prefilling.
  void answering();
  // What the request is charged (stream_charge.h).
  std::optional<openai::Usage> charged_usage() const;
  const std::string& response_id() const { return rewriter_.response_id(); }

 private:
  // The client's response: the body rewritten, the usage noted.
  http::Response body_response(std::string body);
  boost::asio::awaitable<bool> start_stream();
  bool send_now(std::string_view bytes);
  // One read of the stream: its events rewritten and, once the client's
  // stream has started, written to it. False when the coroutine must go
  // on: the stream to start (its events held in first_), a write to
  // finish, broke_, or the client gone.
  bool take(http::BodyPieces pieces, std::chrono::steady_clock::time_point now) override;
  // What take() left to the coroutine: the stream's start, or a write's end.
  boost::asio::awaitable<bool> deliver();
  boost::asio::awaitable<bool> send(std::string_view bytes);
  // A stream whose engine failed (or that the drain's cutoff broke, or
  // that the gateway could not relay): retried while nothing of it reached
  // the client; else what is held back, then an error event.
  boost::asio::awaitable<AttemptOutcome> end_broken(const Error& broke);
  AttemptOutcome failed(const Error& e) const;
  // Whether the gateway itself ran short (AttemptOutcome::local).
  bool failed_here() const;
  // Memory ran out while the stream was relayed: the call is ended, not
  // blamed on the engine.
  void ran_short(const std::exception& e);

  RequestContext& ctx_;
  fleet::Instance& inst_;
  http::UpstreamCall& call_;
  UnansweredCalls::Entry& unanswered_;
  const DrainCutoff& cutoff_;
  obs::GatewayMetrics& metrics_;
  openai::ResponseRewriter rewriter_;
  bool force_usage_;
  // What is kept of the engine's response head (the head itself, its
  // headers some 430 bytes, is gone once read).
  int status_ = 0;
  std::string content_type_;
  std::optional<std::string> simulated_;  // its X-Simulated header
  bool started_ = false;                  // the client's stream has begun
  std::int64_t delivered_ = 0;            // output tokens relayed to the client
  // The stream's state between reads (take).
  http::SseSplitter splitter_;
  obs::GenerationMeter::Series* generated_ = nullptr;
  std::string first_;                // what starts the client's stream
  std::int64_t unsent_outputs_ = 0;  // in the read being written
  std::optional<Error> broke_;       // the stream failed: the engine, or take()
  bool ran_short_ = false;           // take() could not relay a read
};

}  // namespace switchyard::gateway
