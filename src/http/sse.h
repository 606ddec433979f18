// Server-sent events: splitting a byte stream into whole events, and framing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::http {

// Accumulates stream bytes and hands out complete events (each including its
// terminating blank line), so a relay forwards whole events as they complete
// and can act on event boundaries (usage, errors). Each byte is looked at
// about once however the stream is cut into pieces, and an event may not
// grow past `max_event`: an upstream that never ends its event must not hold
// unbounded memory or make every read rescan what came before.
class SseSplitter {
 public:
  static constexpr std::size_t kDefaultMaxEvent = std::size_t{1} << 20;

  explicit SseSplitter(std::size_t max_event = kDefaultMaxEvent) : max_event_(max_event) {}
  // Ignored once overflowed().
  void feed(std::string_view bytes);
  // The next complete event, or nullopt until more bytes arrive (for good
  // once overflowed()). A view into the splitter, valid until the next feed():
  // a relay forwards events without copying each one.
  std::optional<std::string_view> next();
  // Bytes received that do not yet form a complete event.
  std::string_view pending() const { return std::string_view(buffer_).substr(start_); }
  // Whether an event was longer than max_event: the stream cannot be relayed
  // event by event any more and the caller should fail it.
  bool overflowed() const { return overflowed_; }
  // Bytes examined so far while looking for event ends (a measure of work,
  // for tests that it stays linear).
  std::size_t bytes_scanned() const { return scanned_; }

 private:
  std::size_t max_event_;
  std::string buffer_;
  std::size_t start_ = 0;  // where the pending event begins in buffer_
  std::size_t scan_ = 0;   // where to look for its end next; before it, none
  std::size_t scanned_ = 0;
  bool overflowed_ = false;
};

// The payload of an event's `data:` lines joined by '\n' (SSE rules: one
// optional space after the colon is dropped). Empty when there are none.
std::string sse_data(std::string_view event);

// "data: <payload>\n\n".
std::string sse_event(std::string_view payload);

}  // namespace switchyard::http
