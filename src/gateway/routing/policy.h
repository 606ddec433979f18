// How the router chooses among the instances that could take a request.
// The router decides which instances qualify (the model's, routable, not
// tried before) and which of them have a free slot; a policy picks one of
// the free ones, and may look at the busy ones (their load counts toward
// the mean a bounded-load rule compares against).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/fleet_config.h"
#include "gateway/route_query.h"

namespace switchyard::gateway {

struct Candidate {
  std::size_t index;   // the instance's index in the fleet
  int in_flight;       // the gateway's requests on it now
  int slots;           // requests it runs at once
  bool free = true;    // whether it may take one more now (a policy picks only these)
  long kv_tokens = 0;  // tokens its KV cache holds (n_ctx × slots, vLLM's pool); 0: unknown
  std::uint64_t generation = 0;  // changes when its engine restarts (its cache is gone)
  // For logs; points into the fleet. Not a view: the router reads no
  // instance's name to fill a candidate.
  const std::string* name = nullptr;
  // Prompt tokens (estimated, the cached part left out) of its requests
  // that have not started answering: an engine evaluates a new prompt only
  // beside or after those, so a free slot behind a 32K-token prefill is
  // seconds away from a first token.
  long prefilling = 0;
  // Prompt tokens (estimated) of the shortest request it runs; 0 when idle.
  // A long prefill placed beside a request holds up its every token (an
  // engine's step carries the running requests' next tokens with the next
  // chunk of the prompt): the shortest suffers most.
  long shortest_running = 0;
};

// Why a policy chose what it chose (the label of
// switchyard_route_decisions_total{reason}).
enum class RouteReason {
  balanced,       // a load-balancing policy's choice: no affinity involved
  hit,            // the instance holding the longest cached prefix, or the session's home
  bounded_out,    // the best instance was over the load bound (or busy): the next best
  cold,           // nothing cached anywhere (or a new session): least load
  session_moved,  // the session's home is gone: a new home, kept from now on
};

const char* to_string(RouteReason reason);

struct RouteDecision {
  std::size_t position = 0;  // in the candidates span
  RouteReason reason = RouteReason::balanced;
  // Share of the prompt's blocks the chosen instance was last sent; < 0
  // when the policy does not track prefixes.
  double match = -1;
  // Set when the request should rather wait for its home, until then
  // (routing.home_wait): no instance is chosen, `position` means nothing.
  std::optional<std::chrono::steady_clock::time_point> wait_until;
  // Seconds the request waited for its home before this decision
  // (routing.home_wait); nullopt: it did not wait.
  std::optional<double> home_waited;
};

// What an instance delivered for one request, reported when it ends.
struct RouteFeedback {
  long prompt_tokens = 0;
  long cached_tokens = 0;  // of the prompt, as the engine reports them
  long completion_tokens = 0;
  double seconds = 0;    // from the slot's grant to the end of the answer
  double expected = -1;  // the decision's match
  // From a streamed answer's first event to its end; < 0 for an answer
  // sent whole.
  double decode_seconds = -1;
};

// Single-threaded, like the router that calls it.
class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  // The label of the decisions metric ("least-outstanding", ...).
  virtual const char* name() const = 0;
  // `candidates` (fleet order) holds at least one free instance; the
  // decision's position is a free one, unless it says to wait (wait_until).
  virtual RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) = 0;
  // A request routed to `instance` ended with an answer whose usage was known.
  virtual void finished(const Candidate& instance, const RouteFeedback& feedback) = 0;
  // A request that waited stopped waiting without being routed (its client
  // left, its wait timed out): what the policy kept for it may go.
  virtual void left(const RouteQuery&) {}
  // How much of what `query` needs `instance` holds by this policy's own
  // score (0..1: the share of its prompt's blocks last sent there, 1 for a
  // session's home), routing nothing; 0 for policies without affinity. The
  // wait queue's prefix handoff reads it (gateway/wait_queue.h).
  virtual double match(const RouteQuery&, const Candidate&) { return 0; }
};

std::unique_ptr<RoutingPolicy> make_routing_policy(const config::RoutingOptions& options);
// `policy` with the default options.
std::unique_ptr<RoutingPolicy> make_routing_policy(config::RoutingPolicy policy);

}  // namespace switchyard::gateway
