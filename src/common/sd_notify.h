// systemd's readiness protocol (sd_notify(3)) without libsystemd: each state
// change is one datagram of newline-separated assignments ("READY=1",
// "RELOADING=1", "STOPPING=1", "STATUS=…") sent to the unix socket named by
// $NOTIFY_SOCKET, in the abstract namespace when the name starts with '@'.
// Not run by systemd as Type=notify, there is no such socket and every call
// does nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

class SdNotifier {
 public:
  // Disabled: notify() does nothing.
  SdNotifier() = default;
  // Sends to `socket_name` (a path, or '@' and an abstract name); an empty
  // name disables. Throws std::runtime_error when the name cannot be a unix
  // socket address (too long, or a relative path) or no socket can be made.
  explicit SdNotifier(std::string_view socket_name);
  // $NOTIFY_SOCKET, which is then unset so that the engines the gateway
  // starts do not inherit it and speak for the service.
  static SdNotifier from_environment();

  SdNotifier(SdNotifier&& other) noexcept;
  SdNotifier& operator=(SdNotifier&& other) noexcept;
  SdNotifier(const SdNotifier&) = delete;
  SdNotifier& operator=(const SdNotifier&) = delete;
  ~SdNotifier();

  bool enabled() const { return fd_ >= 0; }
  const std::string& socket_name() const { return name_; }
  // Sends `state`; nullopt, or why it could not be sent. Never blocks: the
  // datagram is dropped when the socket's buffer is full.
  std::optional<std::string> notify(std::string_view state) const;

  // "RELOADING=1" with the MONOTONIC_USEC= systemd asks a reload to carry.
  static std::string reloading();

 private:
  std::string name_;
  int fd_ = -1;
};

}  // namespace switchyard
