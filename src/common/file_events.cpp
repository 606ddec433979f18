#include "common/file_events.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace switchyard {

namespace {

// The directory is watched for its entries only: a write to another file
// in it (the gateway's own log, say) does not wake the waiter. Each followed
// file is watched for its writes, and again when its name comes back.
constexpr std::uint32_t kEntryEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
// Not IN_ATTRIB: SQLite changes a journal's owner as it opens it (as root),
// which would wake the waiter for every connection opened.
constexpr std::uint32_t kWriteEvents = IN_MODIFY;
// The directory itself going: its watch ends (IN_IGNORED follows).
constexpr std::uint32_t kGone = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT;

}  // namespace

FileEvents::FileEvents(const std::filesystem::path& dir, std::vector<std::string> names)
    : dir_(dir),
      names_(std::move(names)),
      inotify_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
      stop_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (inotify_ < 0) return;
  watch_ = ::inotify_add_watch(inotify_, dir.c_str(),
                               kEntryEvents | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
  for (const auto& name : names_) follow(name);
}

void FileEvents::follow(const std::string& name) {
  // Fails for a file not there (yet): its creation is an entry event.
  (void)::inotify_add_watch(inotify_, (dir_ / name).c_str(), kWriteEvents);
}

FileEvents::~FileEvents() {
  if (inotify_ >= 0) ::close(inotify_);
  if (stop_ >= 0) ::close(stop_);
}

void FileEvents::stop() {
  stopped_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_, &one, sizeof one);
}

bool FileEvents::take_events() {
  if (watch_ < 0) return false;
  bool named = false;
  alignas(inotify_event) std::array<char, 4096> buffer;
  for (;;) {
    const ssize_t n = ::read(inotify_, buffer.data(), buffer.size());
    if (n <= 0) break;  // EAGAIN: none left
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer.data() + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      // A lost event (a full queue) may have been one of ours.
      if (e->mask & IN_Q_OVERFLOW) named = true;
      if (e->wd != watch_) {  // a followed file's own watch
        if (e->mask & kWriteEvents) named = true;
        continue;
      }
      if (e->mask & kGone) {
        watch_ = -1;
        named = true;
      }
      if (e->len > 0 && std::find(names_.begin(), names_.end(), e->name) != names_.end()) {
        named = true;
        if (e->mask & (IN_CREATE | IN_MOVED_TO)) follow(e->name);
      }
    }
  }
  return named;
}

FileEvents::Woken FileEvents::wait(std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds settle) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (stopped_) return Woken::stopped;
    if (take_events()) return pause(settle) == Woken::stopped ? Woken::stopped : Woken::written;
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::array<pollfd, 2> fds{pollfd{stop_, POLLIN, 0}, pollfd{inotify_, POLLIN, 0}};
    const int n = ::poll(fds.data(), watch_ >= 0 ? 2 : 1,
                         static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (fds[0].revents || stopped_) return Woken::stopped;
    if (n == 0 || (n < 0 && errno != EINTR)) return Woken::timeout;
  }
}

FileEvents::Woken FileEvents::pause(std::chrono::milliseconds d) {
  pollfd stop{stop_, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + d;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int n = ::poll(&stop, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (n > 0 || stopped_) return Woken::stopped;
    if (n == 0 || errno != EINTR) break;
  }
  return take_events() ? Woken::written : Woken::timeout;
}

}  // namespace switchyard
