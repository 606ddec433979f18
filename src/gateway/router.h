// The slot ledger: counts what the gateway has in flight on each instance
// and hands out slots. Engines' own metrics lag; these counts do not, so an
// instance is never sent more requests than it has slots. Instance health,
// admin state and slots are read from the fleet's one instance table; which
// qualifying instance gets a request is the routing policy's choice.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleet/instance.h"
#include "gateway/route_query.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"
#include "openai/usage.h"

namespace switchyard::gateway {

class Router;

// One request counted on one instance; released when destroyed. A lease may
// outlive its router (a coroutine frame destroyed at shutdown after the
// gateway): it then releases nothing.
class RouteLease {
 public:
  RouteLease() = default;
  RouteLease(std::shared_ptr<Router*> router, std::size_t instance, RouteDecision decision,
             long prompt_tokens = 0, long prefill_tokens = 0)
      : router_(std::move(router)),
        instance_(instance),
        decision_(decision),
        granted_(std::chrono::steady_clock::now()),
        prompt_tokens_(prompt_tokens),
        prefill_tokens_(prefill_tokens) {}
  RouteLease(RouteLease&& o) noexcept = default;
  RouteLease& operator=(RouteLease&& o) noexcept;
  ~RouteLease();

  explicit operator bool() const { return router_ != nullptr; }
  std::size_t instance() const { return instance_; }
  // Why the policy chose the instance; kept after release().
  const RouteDecision& decision() const { return decision_; }
  // When the slot was granted (epoch for an empty lease); kept after release().
  std::chrono::steady_clock::time_point granted() const { return granted_; }
  // The engine has started answering: its prompt no longer counts as
  // waiting to be evaluated (Candidate::prefilling).
  void answering();
  // Gives the slot back now (as destruction would).
  void release();

 private:
  std::shared_ptr<Router*> router_;  // null when empty; points to null once the router is gone
  std::size_t instance_ = 0;
  RouteDecision decision_;
  std::chrono::steady_clock::time_point granted_{};
  long prompt_tokens_ = 0;   // its prompt's estimated tokens (Candidate::shortest_running)
  long prefill_tokens_ = 0;  // counted in the router's prefilling until answering()
};

using InstanceTable = std::vector<std::unique_ptr<fleet::Instance>>;

// Single-threaded: used from the gateway's I/O thread only.
class Router {
 public:
  // `instances` (the fleet's table, which may grow on reload) must outlive
  // the router.
  Router(const InstanceTable& instances, std::unique_ptr<RoutingPolicy> policy);
  ~Router() { *self_ = nullptr; }
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Why acquire() found nothing for a query.
  enum class Refusal {
    all_slots_busy,     // an instance could take it, once a slot frees: wait
    not_ready_yet,      // none routable, but one is starting or restarting: wait
    no_instance_ready,  // none routable and none on its way: waiting would not help
    waiting_for_home,   // the policy keeps it for its busy home until home_wait_until()
  };

  // Counts a request on the instance the policy picks among the query's
  // model's routable instances with a free slot, never one it has tried.
  // The lease says why (its decision).
  std::optional<RouteLease> acquire(const RouteQuery& query, Refusal* why = nullptr);
  // A routable instance of the query's model without taking a slot
  // (tokenizer calls run beside generation): the fewest requests per slot,
  // in rotation. Not the policy's choice: a tokenizer call fills no cache
  // and starts no session, so the affinity policies must not record it.
  std::optional<std::size_t> pick_any(const RouteQuery& query, Refusal* why = nullptr);

  // What the instance of `lease` (granted, released or not) delivered for
  // its request, for the policy to learn from (rates, cache hits);
  // `first_byte`, when a streamed answer's first event went out (none for
  // an answer sent whole).
  void finished(const RouteLease& lease, const openai::Usage& usage,
                std::optional<std::chrono::steady_clock::time_point> first_byte = std::nullopt);
  // A request that waited in the queue stopped waiting without a slot
  // (RoutingPolicy::left).
  void left(const RouteQuery& query) { policy_->left(query); }
  // The KV cache of the instance, in tokens, as its engine reports it
  // elsewhere than /props (vLLM's /metrics: routing/engine_kv.h), for the
  // prefix index's bound; a size read from /props comes first.
  void set_kv_tokens(std::size_t index, long tokens);
  // The policy's score for sending `query` to instance `index`
  // (RoutingPolicy::match), whether it has a free slot or not; takes none.
  double match(const RouteQuery& query, std::size_t index);
  // After a refusal with waiting_for_home: when the request stops waiting
  // for its home (acquire() then spills it to another instance).
  std::chrono::steady_clock::time_point home_wait_until() const { return home_wait_until_; }
  // The policy's name, the label of the decisions metric.
  const char* policy_name() const { return policy_->name(); }

  // Called whenever a slot frees, and when a request's prompt is evaluated
  // (the instance's free slots start the next one sooner); the wait queue
  // hands the slot on from there.
  void on_release(std::function<void(std::size_t index, const std::string& model)> callback) {
    on_release_ = std::move(callback);
  }

  const std::string& instance_name(std::size_t index) const { return instances_[index]->name(); }

  int in_flight(std::size_t index) const {
    return index < load_.size() ? load_[index].in_flight : 0;
  }
  // Requests sent to it, ever.
  std::uint64_t started(std::size_t index) const {
    return index < load_.size() ? load_[index].started : 0;
  }

 private:
  friend class RouteLease;
  // What the router counts on one instance, by fleet index.
  struct Load {  // what a candidate reads, first
    int in_flight = 0;
    long prefilling = 0;  // Candidate::prefilling
    // The shortest prompt (estimated tokens) of its requests in flight
    // (Candidate::shortest_running), and all of them, as many as its slots.
    long shortest = 0;
    long kv_tokens = 0;  // set_kv_tokens()
    std::vector<long> running;
    std::uint64_t started = 0;
  };
  // Candidates built, and what was seen of the instances left out.
  struct Candidates {
    std::vector<Candidate> routable;  // fleet order
    bool coming = false;              // of the others, one is starting or restarting
    bool asleep = false;              // of the routable, one is asleep by its engine's word
  };
  // One model's instances, and its routable ones as a slot-taking
  // request's candidates, kept between requests: built again when an
  // instance changed (fleet::route_revision) and kept up to date with what
  // the router counts on each (loaded()), so that a request does not visit
  // a fleet of hundreds.
  struct ModelInstances {
    std::vector<std::size_t> all;  // fleet indexes, fleet order
    Candidates kept;               // free when a slot is
    static constexpr std::uint64_t kStale = ~std::uint64_t{0};
    std::uint64_t revision = kStale;  // fleet::route_revision when kept was built
  };
  // Where an instance's candidate is kept, by fleet index.
  struct Kept {
    ModelInstances* model = nullptr;  // null: not routable when last built
    std::size_t position = 0;
  };

  void answering(std::size_t index, long prefill_tokens);
  void release(std::size_t index, long prompt_tokens);
  // The query's routable candidates in fleet order, each free when it has
  // a slot (all free when `need_slot` is false); `why` says why none is
  // free. Empty when none is free. Valid until the router's next call.
  std::span<const Candidate> candidates(const RouteQuery& query, bool need_slot, Refusal& why);
  // Writes into `out` the candidates of `instances` that are routable and
  // that `narrowing` (instances tried, one only) does not rule out.
  void build(Candidates& out, const std::vector<std::size_t>& instances,
             const RouteQuery* narrowing, bool need_slot) const;
  void keep(ModelInstances& model);
  // The router changed what it counts on instance `index`: its kept
  // candidate follows.
  void loaded(std::size_t index);
  // Those of `candidates` awake, while one of them has a free slot.
  std::span<const Candidate> without_sleepers(std::span<const Candidate> candidates);
  Candidate candidate(const fleet::Instance& inst, bool need_slot) const;
  void fill(Candidate& c, const fleet::Instance& inst, bool need_slot) const;
  // The model's instances. An instance's model never changes (a reload adds
  // a new instance), so the table is indexed as it grows, and a request
  // visits its model's instances only.
  ModelInstances& instances_of(std::string_view model);
  Load& load(std::size_t index);
  // Looks a model up by a view of its name, without a copy.
  struct ModelHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };

  const InstanceTable& instances_;
  std::unique_ptr<RoutingPolicy> policy_;
  std::vector<Load> load_;  // grows with the table
  Load idle_;               // an instance beyond load_: nothing counted on it yet
  // Values are not moved by the map's growth: kept_ points to them.
  std::unordered_map<std::string, ModelInstances, ModelHash, std::equal_to<>> by_model_;
  ModelInstances no_instances_;     // a model the fleet does not serve
  std::size_t indexed_ = 0;         // instances_'s entries in by_model_
  std::vector<Kept> kept_;          // by fleet index
  Candidates narrowed_;             // a narrowed query's, or one that takes no slot
  std::vector<Candidate> scratch_;  // reused by without_sleepers()
  Rotation any_rotation_;           // pick_any()'s
  std::chrono::steady_clock::time_point home_wait_until_{};
  std::shared_ptr<Router*> self_;  // shared with leases
  std::function<void(std::size_t, const std::string&)> on_release_;
};

}  // namespace switchyard::gateway
