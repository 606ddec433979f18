// Chooses the instance for a request and counts what the gateway has in
// flight on each. Engines' own metrics lag; these counts do not, so an
// instance is never sent more requests than it has slots.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleet/fleet_config.h"

namespace switchyard::gateway {

class Router;

// One request counted on one instance; released when destroyed. A lease may
// outlive its router (a coroutine frame destroyed at shutdown after the
// gateway): it then releases nothing.
class RouteLease {
 public:
  RouteLease() = default;
  RouteLease(std::shared_ptr<Router*> router, std::size_t instance)
      : router_(std::move(router)), instance_(instance) {}
  RouteLease(RouteLease&& o) noexcept = default;
  RouteLease& operator=(RouteLease&& o) noexcept;
  ~RouteLease();

  explicit operator bool() const { return router_ != nullptr; }
  std::size_t instance() const { return instance_; }

 private:
  void release();
  std::shared_ptr<Router*> router_;  // null when empty; points to null once the router is gone
  std::size_t instance_ = 0;
};

// Single-threaded: used from the gateway's I/O thread only.
class Router {
 public:
  explicit Router(fleet::RoutingPolicy policy)
      : policy_(policy), self_(std::make_shared<Router*>(this)) {}
  ~Router() { *self_ = nullptr; }
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Instances are added once, in fleet order; `index` is the fleet index.
  void add_instance(std::size_t index, std::string model, int slots);
  void set_ready(std::size_t index, bool ready);
  void set_slots(std::size_t index, int slots);

  // Why acquire() found nothing.
  enum class Refusal { no_instance_ready, all_slots_busy };

  // Counts a request on the best ready instance of `model` with a free slot,
  // never `avoid` (the instance a retried request just failed on).
  std::optional<RouteLease> acquire(const std::string& model, Refusal* why = nullptr,
                                    std::optional<std::size_t> avoid = std::nullopt);
  // Any ready instance of `model` but `avoid`, without taking a slot
  // (tokenizer calls).
  std::optional<std::size_t> any_ready(const std::string& model,
                                       std::optional<std::size_t> avoid = std::nullopt);

  // Called whenever a slot frees; the wait queue hands it on from there.
  void on_release(std::function<void(std::size_t index, const std::string& model)> callback) {
    on_release_ = std::move(callback);
  }

  int in_flight(std::size_t index) const { return entries_.at(index).in_flight; }
  const std::string& model(std::size_t index) const { return entries_.at(index).model; }
  bool ready(std::size_t index) const { return entries_.at(index).ready; }

 private:
  friend class RouteLease;
  void release(std::size_t index);

  struct Entry {
    std::string model;
    int slots = 1;
    bool ready = false;
    int in_flight = 0;
  };
  fleet::RoutingPolicy policy_;
  std::vector<Entry> entries_;
  std::size_t next_ = 0;           // round-robin cursor
  std::shared_ptr<Router*> self_;  // shared with leases
  std::function<void(std::size_t, const std::string&)> on_release_;
};

}  // namespace switchyard::gateway
