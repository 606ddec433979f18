#include "openai/delta_template.h"

#include <cstring>

#include "common/byte_search.h"
#include "openai/json_scan.h"

namespace switchyard::openai {

namespace {

const ByteSearch content_key("content\":");
const ByteSearch text_key("\"text\":");
const ByteSearch delta_key("\"delta\":");
constexpr std::string_view kResponsesEvent = "event: response.";

// The first unescaped quote at or after `from`.
std::optional<std::size_t> closing_quote(std::string_view s, std::size_t from) {
  while (from < s.size()) {
    const void* hit = std::memchr(s.data() + from, '"', s.size() - from);
    if (!hit) return std::nullopt;
    const auto at = static_cast<std::size_t>(static_cast<const char*>(hit) - s.data());
    if (!escaped(s, at)) return at;
    from = at + 1;
  }
  return std::nullopt;
}

// The first non-empty string value after `key` in `event`.
std::optional<TextSpan> string_after(std::string_view event, const ByteSearch& key) {
  for (auto at = key.find(event); at; at = key.find(event, *at + 1)) {
    std::size_t begin = *at + key.size();
    while (begin < event.size() && event[begin] == ' ') ++begin;
    if (begin + 1 >= event.size() || event[begin] != '"' || event[begin + 1] == '"') continue;
    ++begin;
    if (auto end = closing_quote(event, begin)) return TextSpan{begin, *end};
  }
  return std::nullopt;
}

}  // namespace

std::optional<TextSpan> delta_text(std::string_view event) {
  // The Responses API names its events: only a *.delta one carries new
  // text (as `"delta":"..."`); the *.done ones and response.completed
  // repeat the whole text.
  if (event.starts_with(kResponsesEvent)) {
    const std::string_view name = event.substr(0, event.find('\n'));
    if (!name.ends_with(".delta")) return std::nullopt;
    return string_after(event, delta_key);
  }
  for (const ByteSearch* key : {&content_key, &text_key})
    if (auto span = string_after(event, *key)) return span;
  return std::nullopt;
}

void DeltaTemplate::remember(std::string_view event, TextSpan text, std::string_view sent,
                             std::size_t change_at) {
  head_ = event.substr(0, text.begin);
  tail_ = event.substr(text.end);
  // The text and the side without the change are the same in `sent`.
  if (change_at < text.begin) {
    head_out_ = sent.substr(0, sent.size() - (event.size() - text.begin));
    tail_out_ = tail_;
  } else {
    head_out_ = head_;
    tail_out_ = sent.substr(text.end);
  }
  sent_as_is_ = head_out_ == head_ && tail_out_ == tail_;
}

bool DeltaTemplate::apply(std::string_view event, std::string& out) const {
  if (head_.empty() || event.size() <= head_.size() + tail_.size()) return false;
  if (!event.starts_with(head_) || !event.ends_with(tail_)) return false;
  const std::string_view text =
      event.substr(head_.size(), event.size() - head_.size() - tail_.size());
  // The text must be one string that the tail's first quote closes.
  if (closing_quote(text, 0) || escaped(text, text.size())) return false;
  if (sent_as_is_) {
    out.append(event);
  } else {
    out.append(head_out_);
    out.append(text);
    out.append(tail_out_);
  }
  return true;
}

}  // namespace switchyard::openai
