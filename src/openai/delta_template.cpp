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

std::optional<std::string_view> DeltaTemplate::text_at_start(std::string_view bytes) const {
  if (head_.empty() || !bytes.starts_with(head_)) return std::nullopt;
  // The text is one string, which the tail's first quote closes.
  const auto close = closing_quote(bytes, head_.size());
  if (!close || *close == head_.size()) return std::nullopt;
  const std::string_view text = bytes.substr(head_.size(), *close - head_.size());
  // A raw line break is no JSON, and would end the event's line.
  if (std::memchr(text.data(), '\n', text.size())) return std::nullopt;
  if (!bytes.substr(*close).starts_with(tail_)) return std::nullopt;
  return text;
}

void DeltaTemplate::emit(std::string_view event, std::string_view text, std::string& out) const {
  if (sent_as_is_) {
    out.append(event);
  } else {
    out.append(head_out_);
    out.append(text);
    out.append(tail_out_);
  }
}

bool DeltaTemplate::apply(std::string_view event, std::string& out) const {
  const auto text = text_at_start(event);
  if (!text || head_.size() + text->size() + tail_.size() != event.size()) return false;
  emit(event, *text, out);
  return true;
}

std::size_t DeltaTemplate::apply_at_start(std::string_view bytes, std::string& out) const {
  const auto text = text_at_start(bytes);
  if (!text) return 0;
  const std::size_t length = head_.size() + text->size() + tail_.size();
  emit(bytes.substr(0, length), *text, out);
  return length;
}

}  // namespace switchyard::openai
