// Waiting for a few files of one directory to be written (inotify), so that
// a thread that follows them sleeps while they are quiet instead of waking
// on a timer to look. Events are a hint, not a record: a caller still reads
// the files to learn what changed, and keeps a timeout as its backstop for
// writes inotify does not report (another host's, on a network filesystem).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace switchyard {

class FileEvents {
 public:
  enum class Woken { written, timeout, stopped };

  // Follows the entries of `dir` named in `names` (created, written,
  // renamed, removed). Without inotify (no instance or watch left) it
  // follows nothing: watching() is false and wait() waits out its timeout.
  FileEvents(const std::filesystem::path& dir, std::vector<std::string> names);
  ~FileEvents();
  FileEvents(const FileEvents&) = delete;
  FileEvents& operator=(const FileEvents&) = delete;

  // Whether writes wake wait(): false without inotify, and once the
  // directory itself is removed or moved.
  bool watching() const { return watch_ >= 0; }
  // Until one of the files is written since the last call, `timeout` passes
  // or stop(); written when a write had come before the call. After a write,
  // `settle` more whatever is written: a write wakes it as it starts, and
  // what it is part of (a commit: several writes) ends a little later.
  Woken wait(std::chrono::milliseconds timeout, std::chrono::milliseconds settle = {});
  // `d` whatever is written, then whether anything was (written or timeout),
  // or stopped at once.
  Woken pause(std::chrono::milliseconds d);
  // Ends the current and every later wait() and pause(); from any thread.
  void stop();

 private:
  // Reads the events there are without blocking: whether one named a file.
  bool take_events();
  // Watches `name`'s writes, its file as it is now.
  void follow(const std::string& name);

  const std::filesystem::path dir_;
  const std::vector<std::string> names_;
  int inotify_ = -1;
  int watch_ = -1;
  int stop_ = -1;                     // an eventfd, so that a stop ends a wait at once
  std::atomic<bool> stopped_{false};  // and at its timeout, should the eventfd fail
};

}  // namespace switchyard
