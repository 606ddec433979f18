// What `switchyard serve` tells systemd under Type=notify
// (common/sd_notify.h): READY=1 once it listens and the fleet's first health
// pass is done, RELOADING=1 … READY=1 around a SIGHUP reload, STOPPING=1
// when the drain begins, each with a STATUS= line for `systemctl status`.
// Without $NOTIFY_SOCKET it sends nothing.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/sd_notify.h"
#include "fleet/instance.h"

namespace switchyard::cli {

// Whether every engine the gateway starts has had its first start: healthy,
// or failed and now restarting or down (the supervisor goes on). Parked
// instances are not started; an engine at an external URL is not waited
// for, as one that is down may never come.
bool first_health_pass_done(const std::vector<std::unique_ptr<fleet::Instance>>& instances);

// "3/4 instance(s) ready".
std::string instances_ready_text(const std::vector<std::unique_ptr<fleet::Instance>>& instances);

class ServiceNotice {
 public:
  // `instances` must outlive this. Used from the executor's thread.
  ServiceNotice(boost::asio::any_io_executor executor, SdNotifier notifier,
                const std::vector<std::unique_ptr<fleet::Instance>>& instances);

  // Listening: READY=1 as soon as first_health_pass_done() (re-checked
  // every 50 ms until then; instance changes have one subscriber, the
  // gateway).
  void listening(std::string where);
  // Around a SIGHUP reload, once ready (before, READY=1 is still to come).
  void reloading();
  void reloaded();
  // The drain begins: STOPPING=1, and READY=1 is never sent.
  void stopping();

 private:
  void check();
  void send(const std::string& state);

  SdNotifier notifier_;
  const std::vector<std::unique_ptr<fleet::Instance>>& instances_;
  boost::asio::steady_timer poll_;
  std::string where_;
  bool ready_ = false;
  bool stopping_ = false;
};

}  // namespace switchyard::cli
