// A stream's delta events differ only in the text they carry (and now and
// then a timestamp): the last one, split around its text, lets the gateway
// recognise the next by two comparisons instead of searching it for usage,
// the model and the text every time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::openai {

// The bytes of an event's generated text between its quotes: the first
// non-empty `content` (`reasoning_content` too) or `text` string; in the
// Responses API's named events, the `delta` string of a *.delta event.
struct TextSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};
std::optional<TextSpan> delta_text(std::string_view event);

class DeltaTemplate {
 public:
  // Remembers `event`, whose text is `text`, and `sent`, what the client got
  // of it: the event with at most one change, at `change_at` (npos: none),
  // outside the text.
  void remember(std::string_view event, TextSpan text, std::string_view sent,
                std::size_t change_at);

  // When `event` is the remembered one with other text (a well-formed JSON
  // string between the same bytes): appends what the client gets of it.
  bool apply(std::string_view event, std::string& out) const;
  // apply() for the event `bytes` start with, its end not yet found: the
  // text's closing quote and the bytes after it say where it ends, so the
  // event is compared, not searched. Returns its length (0: not such an
  // event, nothing appended).
  std::size_t apply_at_start(std::string_view bytes, std::string& out) const;

 private:
  // The text of the event `bytes` start with, when it has the remembered
  // shape: the same head, a text without a line break, the same tail.
  std::optional<std::string_view> text_at_start(std::string_view bytes) const;
  // Appends what the client gets of `event` (which has `text`).
  void emit(std::string_view event, std::string_view text, std::string& out) const;

  std::string head_, tail_;          // as the engine sent them
  std::string head_out_, tail_out_;  // as the client gets them
  bool sent_as_is_ = false;          // the client gets the events unchanged: one copy
};

}  // namespace switchyard::openai
