#include "http/sse.h"

#include <cstring>

namespace switchyard::http {

void SseSplitter::begin(std::string_view bytes) {
  if (overflowed_) {
    view_ = {};
    return;
  }
  if (carry_.empty()) {
    view_ = bytes;
    return;
  }
  // Consumed events are dropped once they are most of the carry, so moving
  // the rest down costs no more than the bytes already handed out.
  if (start_ > 0 && start_ >= carry_.size() / 2) {
    carry_.erase(0, start_);
    scan_ -= start_;
    start_ = 0;
  }
  carry_.append(bytes);
  view_ = carry_;
}

std::optional<std::string_view> SseSplitter::next() {
  // An event ends at the first blank line: "\n\n", "\r\n\r\n" or mixed.
  const char* data = view_.data();
  const std::size_t size = view_.size();
  while (scan_ < size) {
    const void* hit = std::memchr(data + scan_, '\n', size - scan_);
    const std::size_t eol =
        hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - data) : size;
    scanned_ += (hit ? eol + 1 : size) - scan_;
    if (!hit) {
      scan_ = size;
      break;
    }
    std::size_t j = eol + 1;
    if (j < size && data[j] == '\r') ++j;
    if (j >= size) {
      scan_ = eol;  // the blank line may still be coming: look here again
      break;
    }
    if (data[j] != '\n') {
      scan_ = eol + 1;
      continue;
    }
    if (j + 1 - start_ > max_event_) break;
    const std::string_view event = view_.substr(start_, j + 1 - start_);
    start_ = scan_ = j + 1;
    return event;
  }
  if (size - start_ > max_event_) {
    overflowed_ = true;
    carry_.clear();
    carry_.shrink_to_fit();
    start_ = scan_ = 0;
  } else if (start_ == size) {  // the usual end: the input ended with an event
    carry_.clear();
    start_ = scan_ = 0;
  } else if (view_.data() != carry_.data()) {
    // The input is the caller's until this returns: keep its unfinished event.
    carry_.assign(view_.substr(start_));
    scan_ -= start_;
    start_ = 0;
  }
  view_ = {};
  return std::nullopt;
}

std::string sse_data(std::string_view event) {
  std::string out;
  bool first = true;
  while (!event.empty()) {
    auto eol = event.find('\n');
    std::string_view line = event.substr(0, eol);
    event = eol == std::string_view::npos ? std::string_view{} : event.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("data:")) continue;
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!first) out.push_back('\n');
    out.append(line);
    first = false;
  }
  return out;
}

std::string sse_event(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  out.append("data: ").append(payload).append("\n\n");
  return out;
}

}  // namespace switchyard::http
