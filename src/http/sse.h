// Server-sent events: splitting a byte stream into whole events, and framing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard::http {

// Accumulates stream bytes and hands out complete events (each including its
// terminating blank line), so a relay forwards whole events as they complete
// and can act on event boundaries (usage, errors).
class SseSplitter {
 public:
  void feed(std::string_view bytes) { pending_.append(bytes); }
  // The next complete event, or nullopt until more bytes arrive.
  std::optional<std::string> next();
  // Bytes received that do not yet form a complete event.
  std::string_view pending() const { return pending_; }

 private:
  std::string pending_;
};

// The payload of an event's `data:` lines joined by '\n' (SSE rules: one
// optional space after the colon is dropped). Empty when there are none.
std::string sse_data(std::string_view event);

// "data: <payload>\n\n".
std::string sse_event(std::string_view payload);

}  // namespace switchyard::http
