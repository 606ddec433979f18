// The request path as a short chain of stages, after Envoy's filter chain
// without its machinery: each stage looks at the request's context and
// either lets the next one run or answers the request itself.
//
//   screen (head) → authenticate (head) → account → feed → ledger
//   → authenticate → resolve → stored responses → admit → route → forward
//
// screen and authenticate run on the headers alone, before the body is read
// (Gateway::screen); the rest run on the whole request (Pipeline::run).
// A request also ends through the chain: when a stage answers (or the last
// one is done), every stage that ran is finished in reverse order, as
// Envoy's encoder path runs back through its filters. A stage gives back
// what it took (a key's seat, the queue's charge) and records
// what happened (the ledger row, the access line): account runs first so
// that its finish, the access line, comes last.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/console_feed.h"
#include "gateway/key_ticket.h"
#include "gateway/queue_share.h"
#include "gateway/request_record.h"
#include "gateway/route_query.h"
#include "gateway/router.h"
#include "gateway/routes.h"
#include "http/exchange.h"
#include "obs/request_trace.h"
#include "openai/api_error.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

// Everything known of one request as it passes the stages. Lives on the
// request's coroutine frame; stages keep no pointers into it past their turn.
struct RequestContext {
  RequestContext(http::Request& r, http::Exchange& e, const Route& route_)
      : request(r), exchange(e), route(route_) {}

  http::Request& request;
  http::Exchange& exchange;
  const Route& route;
  RequestRecord record;
  // The request's spans when tracing is on (gateway/request_tracing); the
  // stages add a child span per wait and attempt (obs::ScopedSpan).
  std::optional<obs::RequestTrace> trace;
  // Headers every answer to this request carries, whichever stage answers
  // (rate-limit state, the route taken); stages add to it as they learn.
  http::Headers response_headers;

  // Set by authenticate: the API key's name; empty without keys.
  std::string key_name;

  // Set by resolve.
  openai::RequestFacts facts;
  std::string model;         // the canonical model the request runs on
  std::string client_model;  // the name the client asked for (what responses say)
  std::string session;       // the agent session (gateway/session_id.h); empty when none
  // Set by the dashboard's stage (gateway/feed_stage.h): the request in the
  // list of running ones, declared after what it points to (it leaves the
  // list first).
  ConsoleFeed::Running listed;

  // Set by the stored-responses stage when the request refers to a response
  // an instance holds (gateway/stored_responses.h): only that one serves it.
  std::optional<std::size_t> home;

  // Set by admit: the key's place in the queue, and what it took of the
  // key's limits (given back when the request ends).
  QueueShare share;
  KeyTicket ticket;
  // How long it waited in admit for its key's max_concurrency or a session
  // seat: the route stage's queue wait gets queue.max_wait less this, so a
  // request waits at most queue.max_wait in all.
  std::chrono::steady_clock::duration waited_for_key{};

  // Set by route, and again by forward for each retry.
  RouteLease lease;                   // the slot, for calls that take one
  std::optional<std::size_t> target;  // the instance chosen
  std::vector<std::size_t> tried;     // instances an attempt failed on

  // Set by forward: the id of the response its answer made (the Responses API).
  std::string response_id;

  RouteQuery query() const {
    return RouteQuery{
        model,
        &facts,
        key_name,
        session,
        std::span<const std::size_t>(tried),
        std::string_view(request.body)
            .substr(std::min(facts.prompt.offset, request.body.size()), facts.prompt.length),
        home};
  }

  // Answers with `error` in the route's dialect and records it; on a stream
  // already started (a held request told of its model's load), as the error
  // events that end it.
  boost::asio::awaitable<void> answer(const openai::ApiError& error, bool close = false);
  // The head of a stream of `content_type` to the client.
  http::Headers stream_headers(std::string_view content_type) const;
};

enum class Verdict {
  next,      // the following stage runs
  answered,  // the request is answered (or its client gone): the chain stops
};

class WaitingStage;

// A stage decides in a plain call (check): most only check or note
// something of the request, and a coroutine frame each would be spent for
// nothing. A stage that may wait (for a seat, a slot, an engine) is a
// WaitingStage: its check() decides what needs no waiting, and otherwise
// names it, so that the pipeline awaits its coroutine run().
class Stage {
 public:
  // What check() decided: the next stage runs (neither set), the request is
  // answered with `error`, or `waits`' run() decides.
  struct Decision {
    WaitingStage* waits = nullptr;
    std::optional<openai::ApiError> error;
    static Decision answer(openai::ApiError error) { return {nullptr, std::move(error)}; }
  };

  virtual ~Stage() = default;
  virtual Decision check(RequestContext& ctx) = 0;
  // The request ended, however it did, after this stage's check() was
  // entered. Never awaits: the answer is out (or the client gone).
  virtual void finish(RequestContext&) {}
};

class WaitingStage : public Stage {
 public:
  // Unless overridden, every request goes to run().
  Decision check(RequestContext&) override { return {this, std::nullopt}; }
  virtual boost::asio::awaitable<Verdict> run(RequestContext& ctx) = 0;
};

// The stages in order. Runs them until one answers, then finishes every
// stage that ran, last first; never throws.
class Pipeline {
 public:
  // The stages must outlive the pipeline.
  explicit Pipeline(std::vector<Stage*> stages) : stages_(std::move(stages)) {}
  boost::asio::awaitable<void> run(RequestContext& ctx);

 private:
  std::vector<Stage*> stages_;
};

}  // namespace switchyard::gateway
