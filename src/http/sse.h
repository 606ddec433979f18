// Server-sent events: splitting a byte stream into whole events, and framing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::http {

// Splits stream bytes into complete events (each including its terminating
// blank line), so a relay forwards whole events as they complete and can act
// on event boundaries (usage, errors). An event that lies within one piece
// of input is handed out as a view of it, not copied; only an event cut
// across pieces is gathered here. Each byte is looked at about once however
// the stream is cut into pieces, and an event may not grow past `max_event`:
// an upstream that never ends its event must not hold unbounded memory or
// make every piece rescan what came before.
class SseSplitter {
 public:
  static constexpr std::size_t kDefaultMaxEvent = std::size_t{1} << 20;

  explicit SseSplitter(std::size_t max_event = kDefaultMaxEvent) : max_event_(max_event) {}

  // Calls on_event(std::string_view event) for each event `bytes` completes;
  // each view is valid during its call. Does nothing once overflowed().
  template <class OnEvent>
  void split(std::string_view bytes, OnEvent&& on_event) {
    split(
        bytes, [](std::string_view) { return std::size_t{0}; }, on_event);
  }
  // As split(), but at each event's start `known(rest)` is asked first with
  // the bytes from there: a length > 0 says it took a whole event of that
  // length (whose end it knew without a search), which is then skipped.
  template <class Known, class OnEvent>
  void split(std::string_view bytes, Known&& known, OnEvent&& on_event) {
    begin(bytes);
    for (;;) {
      if (start_ == scan_ && start_ < view_.size()) {
        if (const std::size_t n = known(view_.substr(start_))) {
          start_ = scan_ = start_ + n;
          continue;
        }
      }
      const auto event = next();
      if (!event) break;
      on_event(*event);
    }
  }
  // Bytes received that do not yet form a complete event.
  std::string_view pending() const { return std::string_view(carry_).substr(start_); }
  // Whether an event was longer than max_event: the stream cannot be relayed
  // event by event any more and the caller should fail it.
  bool overflowed() const { return overflowed_; }
  // Bytes examined so far while looking for event ends (a measure of work,
  // for tests that it stays linear).
  std::size_t bytes_scanned() const { return scanned_; }

 private:
  void begin(std::string_view bytes);
  // The next complete event, or nullopt once there is none; then what is
  // left of the input is kept in carry_.
  std::optional<std::string_view> next();

  std::size_t max_event_;
  std::string carry_;      // an event's beginning, kept from earlier input
  std::string_view view_;  // what is split now: the input, or carry_
  std::size_t start_ = 0;  // where the pending event begins in view_
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
