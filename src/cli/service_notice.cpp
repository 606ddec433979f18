#include "cli/service_notice.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::cli {

bool first_health_pass_done(const std::vector<std::unique_ptr<fleet::Instance>>& instances) {
  for (const auto& inst : instances)
    if (inst->config.command && inst->admin() != fleet::AdminState::parked &&
        inst->state == fleet::InstanceState::starting)
      return false;
  return true;
}

std::string instances_ready_text(const std::vector<std::unique_ptr<fleet::Instance>>& instances) {
  int ready = 0, total = 0;
  for (const auto& inst : instances) {
    if (inst->state == fleet::InstanceState::removed ||
        inst->state == fleet::InstanceState::stopped)
      continue;
    ++total;
    ready += inst->state == fleet::InstanceState::ready;
  }
  return fmt::format("{}/{} instance(s) ready", ready, total);
}

ServiceNotice::ServiceNotice(boost::asio::any_io_executor executor, SdNotifier notifier,
                             const std::vector<std::unique_ptr<fleet::Instance>>& instances)
    : notifier_(std::move(notifier)), instances_(instances), poll_(executor) {}

void ServiceNotice::listening(std::string where) {
  where_ = std::move(where);
  if (notifier_.enabled()) check();
}

void ServiceNotice::check() {
  if (stopping_) return;
  if (first_health_pass_done(instances_)) {
    ready_ = true;
    send("READY=1\nSTATUS=" + where_ + ", " + instances_ready_text(instances_));
    return;
  }
  poll_.expires_after(std::chrono::milliseconds(50));
  poll_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) check();
  });
}

void ServiceNotice::reloading() {
  if (ready_ && !stopping_) send(SdNotifier::reloading() + "\nSTATUS=reloading the config");
}

void ServiceNotice::reloaded() {
  if (ready_ && !stopping_)
    send("READY=1\nSTATUS=" + where_ + ", " + instances_ready_text(instances_));
}

void ServiceNotice::stopping() {
  stopping_ = true;
  poll_.cancel();
  send("STOPPING=1\nSTATUS=draining, then stopping the engines");
}

void ServiceNotice::send(const std::string& state) {
  if (auto error = notifier_.notify(state)) spdlog::warn("{}", *error);
}

}  // namespace switchyard::cli
