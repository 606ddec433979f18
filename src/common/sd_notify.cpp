#include "common/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

namespace switchyard {

namespace {

// The address of `name` and its length: a path is NUL-terminated, an
// abstract name ('@' for the leading NUL) is not.
std::pair<sockaddr_un, socklen_t> address_of(std::string_view name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() > sizeof(addr.sun_path) - (name.front() == '@' ? 0 : 1))
    throw std::runtime_error(
        fmt::format("NOTIFY_SOCKET '{}' is longer than a unix socket address", name));
  if (name.front() != '@' && name.front() != '/')
    throw std::runtime_error(
        fmt::format("NOTIFY_SOCKET '{}' is neither an absolute path nor '@name'", name));
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name.front() == '@') addr.sun_path[0] = '\0';
  const auto length = offsetof(sockaddr_un, sun_path) + name.size() + (name.front() == '@' ? 0 : 1);
  return {addr, static_cast<socklen_t>(length)};
}

}  // namespace

SdNotifier::SdNotifier(std::string_view socket_name) : name_(socket_name) {
  if (name_.empty()) return;
  address_of(name_);  // validates before a descriptor exists
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0)
    throw std::runtime_error(fmt::format("NOTIFY_SOCKET: socket(): {}", std::strerror(errno)));
}

SdNotifier SdNotifier::from_environment() {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (!name) return SdNotifier();
  SdNotifier notifier(name);
  ::unsetenv("NOTIFY_SOCKET");
  return notifier;
}

SdNotifier::SdNotifier(SdNotifier&& other) noexcept
    : name_(std::move(other.name_)), fd_(other.fd_) {
  other.fd_ = -1;
}

SdNotifier& SdNotifier::operator=(SdNotifier&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    name_ = std::move(other.name_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

SdNotifier::~SdNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> SdNotifier::notify(std::string_view state) const {
  if (fd_ < 0) return std::nullopt;
  const auto [addr, length] = address_of(name_);
  const ssize_t sent = ::sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), length);
  if (sent < 0) return fmt::format("sd_notify to {}: {}", name_, std::strerror(errno));
  return std::nullopt;
}

std::string SdNotifier::reloading() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long usec = static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
  return fmt::format("RELOADING=1\nMONOTONIC_USEC={}", usec);
}

}  // namespace switchyard
