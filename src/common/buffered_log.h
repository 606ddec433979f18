// The log as a file or pipe receives it: lines collect in the C library's
// stdout buffer and go out in one write when it fills or on flush, instead
// of one write(2) per line (an access-log line per request was a measurable
// share of the gateway's cost, docs/performance.md). Warnings and errors are
// written at once. The owner flushes soon after the first line of a batch
// (BufferedLogHook), so quiet periods show up and a quiet process is not
// woken to flush nothing.
#pragma once

#include <functional>

namespace switchyard {

// Makes the default logger write to stdout this way, with the same line format.
void use_buffered_stdout_log();

// While it lives, `on_first_line` is called when a line goes into the empty
// buffer (the first since the last flush), from the thread that logs and
// under the log's lock: it must only hand the flush on (post it). Does
// nothing while the log is not buffered. One at a time.
class BufferedLogHook {
 public:
  explicit BufferedLogHook(std::function<void()> on_first_line);
  ~BufferedLogHook();
  BufferedLogHook(const BufferedLogHook&) = delete;
  BufferedLogHook& operator=(const BufferedLogHook&) = delete;
};

}  // namespace switchyard
