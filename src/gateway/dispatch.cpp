#include "gateway/dispatch.h"

#include <boost/asio.hpp>

#include "gateway/routing/policy.h"

namespace switchyard::gateway {

namespace net = boost::asio;

Dispatch::Dispatch(net::any_io_executor executor, const config::FleetConfig& config,
                   fleet::Fleet& fleet, obs::GatewayMetrics& metrics)
    : executor_(executor),
      fleet_(fleet),
      metrics_(metrics),
      router_(fleet.instances(), make_routing_policy(config.routing)),
      queue_(executor, router_, config.queue) {
  if (!config.profiles.empty())
    profiles_ = std::make_unique<ProfileControl>(executor, config, fleet, router_, queue_, metrics);
  if (ModelControl::wanted(config))
    models_ = std::make_unique<ModelControl>(executor, config, fleet, router_, queue_, metrics);
  router_.on_release([this](std::size_t index, const std::string& model) {
    queue_.dispatch(model, index);
    if (profiles_) profiles_->slot_released(index);
    if (models_) models_->slot_released(index);
    if (router_.in_flight(index) == 0 && retiring_.erase(index)) stop_instance(index);
  });
}

std::vector<SwitchGate*> Dispatch::gates() const {
  std::vector<SwitchGate*> gates;
  if (profiles_) gates.push_back(profiles_.get());
  if (models_) gates.push_back(models_.get());
  return gates;
}

SwitchGate* Dispatch::reload(const config::FleetConfig& config,
                             const std::vector<std::size_t>& removed) {
  for (auto i : removed) {
    if (router_.in_flight(i) == 0)
      stop_instance(i);
    else
      retiring_.insert(i);
  }
  if (models_) {
    models_->reload(config);
    return nullptr;
  }
  if (!ModelControl::wanted(config)) return nullptr;
  models_ = std::make_unique<ModelControl>(executor_, config, fleet_, router_, queue_, metrics_);
  return models_.get();
}

void Dispatch::stop_instance(std::size_t index) {
  net::co_spawn(executor_, fleet_.stop_instance(index), net::detached);
}

}  // namespace switchyard::gateway
