#include "common/sd_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace switchyard {
namespace {

// A datagram socket bound where systemd would listen: a path, or an
// abstract name given as "@name".
class Listener {
 public:
  explicit Listener(const std::string& name) : name_(name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    socklen_t length = offsetof(sockaddr_un, sun_path) + name.size();
    if (name[0] == '@')
      addr.sun_path[0] = '\0';
    else
      ++length;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), length), 0) << std::strerror(errno);
    timeval bound{2, 0};  // a test that gets nothing fails instead of hanging
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  }
  ~Listener() {
    ::close(fd_);
    if (name_[0] == '/') std::filesystem::remove(name_);
  }
  std::string receive() {
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n < 0 ? std::string("(nothing: ") + std::strerror(errno) + ")" : std::string(buf, n);
  }

 private:
  std::string name_;
  int fd_ = -1;
};

std::string unique_name(const char* what) {
  return std::string(what) + std::to_string(::getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

TEST(SdNotify, SendsEachStateAsOneDatagramToAPath) {
  const auto path = (std::filesystem::temp_directory_path() / unique_name("sy-notify-")).string();
  Listener systemd(path);
  const SdNotifier notifier(path);
  ASSERT_TRUE(notifier.enabled());
  EXPECT_FALSE(notifier.notify("READY=1\nSTATUS=listening").has_value());
  EXPECT_FALSE(notifier.notify("STOPPING=1").has_value());
  EXPECT_EQ(systemd.receive(), "READY=1\nSTATUS=listening");
  EXPECT_EQ(systemd.receive(), "STOPPING=1");
}

TEST(SdNotify, AnAtSignNamesTheAbstractNamespace) {
  const auto name = "@" + unique_name("sy-notify-");
  Listener systemd(name);
  const SdNotifier notifier(name);
  EXPECT_FALSE(notifier.notify("READY=1").has_value());
  EXPECT_EQ(systemd.receive(), "READY=1");
}

TEST(SdNotify, FromTheEnvironmentAndUnsetThere) {
  const auto name = "@" + unique_name("sy-notify-");
  Listener systemd(name);
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  const SdNotifier notifier = SdNotifier::from_environment();
  EXPECT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr) << "engines started later must not inherit it";
  EXPECT_EQ(notifier.socket_name(), name);
  EXPECT_FALSE(notifier.notify("READY=1").has_value());
  EXPECT_EQ(systemd.receive(), "READY=1");
}

TEST(SdNotify, WithoutNotifySocketNothingIsSent) {
  ::unsetenv("NOTIFY_SOCKET");
  const SdNotifier notifier = SdNotifier::from_environment();
  EXPECT_FALSE(notifier.enabled());
  EXPECT_FALSE(notifier.notify("READY=1").has_value());
}

TEST(SdNotify, ANameThatCannotBeAnAddressIsRefusedWithTheName) {
  try {
    SdNotifier notifier("/" + std::string(200, 'x'));
    FAIL() << "accepted a 201-byte path";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("NOTIFY_SOCKET"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SdNotifier("relative/socket"), std::runtime_error);
}

TEST(SdNotify, NobodyListeningIsAnErrorValueNotAHang) {
  const SdNotifier notifier("@" + unique_name("sy-notify-nobody-"));
  const auto error = notifier.notify("READY=1");
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("sd_notify"), std::string::npos) << *error;
}

TEST(SdNotify, ReloadingCarriesTheMonotonicClock) {
  const auto text = SdNotifier::reloading();
  EXPECT_EQ(text.rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << text;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long sent = std::stoll(text.substr(text.find('=', 12) + 1));
  EXPECT_GT(sent, 0);
  EXPECT_LE(sent, static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000);
}

}  // namespace
}  // namespace switchyard
