// Model residency (docs/models.md): on-demand instances are loaded when a
// request needs their model and unloaded to make room, after their ttl, or
// by the operator. A load that needs room chooses what to unload
// (profiles/eviction.h) and in what order models get the cards
// (profiles/swap_order.h); an instance with work is drained first (admin
// cause model_evicting: it takes nothing new, its requests finish), so a
// running request is never cut unless switching.on_drain_timeout is abort.
// The drain, stop and start are a profile switch's (profiles/transition.h).
//
// Single-threaded (the gateway's executor). What it does to instances is a
// ResidencyEnv and time comes from a clock passed in, so it is tested with
// fakes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/fleet_config.h"
#include "fleet/instance.h"
#include "profiles/eviction.h"
#include "profiles/transition.h"

namespace switchyard::profiles {

using steady_time = std::chrono::steady_clock::time_point;

// What residency does to instances, beyond the steps' (its causes are
// model_evicting and model_unloaded).
class ResidencyEnv : public InstanceControl {
 public:
  // The fleet's instance table, by index.
  virtual const std::vector<std::unique_ptr<fleet::Instance>>& instances() const = 0;
};

// What happened to a model, for metrics, logs and /models/sse.
struct ResidencyEvent {
  enum class Kind { loading, loaded, unloaded, failed } kind = Kind::loading;
  std::string model;
  std::string instance;
  std::string reason;  // loads: request, admin, prestart; unloads: ttl, evicted, admin; failed: why
  double seconds = 0;  // loaded: the load's time
};

const char* to_string(ResidencyEvent::Kind kind);

// One model as /v1/models shows it.
struct ModelState {
  std::string model;
  std::string value;  // loaded, loading, unloaded, sleeping
  bool failed = false;
  std::string problem;  // the failed load's reason ("engine exited with status 1")
  std::optional<int> exit_code;
};

// A model's state from its always-on instances (a fleet with no on-demand
// instance has no residency to ask).
ModelState always_on_state(const std::string& model,
                           const std::vector<std::unique_ptr<fleet::Instance>>& instances);

class ModelResidency {
 public:
  using Clock = std::function<steady_time()>;
  // `env` must outlive this. Every on-demand instance starts unloaded.
  ModelResidency(boost::asio::any_io_executor executor, const config::FleetConfig& config,
                 ResidencyEnv& env, Clock clock);
  ~ModelResidency();

  // A reload: `config`'s models, cards, swapping options and memory figures
  // apply from now on, and to the instances the fleet has now (a reload's
  // new on-demand instances start unloaded). A load under way keeps the
  // victims it chose.
  void reload(const config::FleetConfig& config);

  // Whether the model has an on-demand instance.
  bool manages(const std::string& model) const;
  // Whether one of its instances takes requests now.
  bool routable(const std::string& model) const;
  // A request for `model` waits to be routed (`request` identifies it until
  // left()); it may start a load.
  void waiting(const void* request, const std::string& model);
  // ... routed, answered or gone.
  void left(const void* request);
  // A request on this instance started or ended (recency, ttl, drains).
  void used(std::size_t index);

  // The operator's load and unload: nullopt, or why not (unknown model,
  // already running, not running, no room that could be made).
  std::optional<std::string> load(const std::string& model);
  std::optional<std::string> unload(const std::string& model);

  // Loads the on-demand instances marked `prestart` (reason prestart), in
  // the config's order, each where it fits beside what is present without
  // unloading anything; one that does not fit is logged and left unloaded.
  void prestart();
  // Decides now: ttl unloads, cancelled loads, the next loads.
  void step();

  std::vector<ModelState> models() const;
  ModelState model(const std::string& name) const;
  // Bytes per GPU held by present instances, by the figures in use.
  std::map<std::string, std::uint64_t> memory_in_use() const;
  // The expected time of a model's load (measured, else switching.switch_cost).
  double expected_load_seconds(const std::string& model) const;
  // Called on every load, unload and failure.
  void on_event(std::function<void(const ResidencyEvent&)> callback);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace switchyard::profiles
