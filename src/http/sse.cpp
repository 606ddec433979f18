#include "http/sse.h"

namespace switchyard::http {

std::optional<std::string> SseSplitter::next() {
  // An event ends at the first blank line: "\n\n", "\r\n\r\n" or mixed.
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i] != '\n') continue;
    std::size_t j = i + 1;
    if (j < pending_.size() && pending_[j] == '\r') ++j;
    if (j < pending_.size() && pending_[j] == '\n') {
      std::string event = pending_.substr(0, j + 1);
      pending_.erase(0, j + 1);
      return event;
    }
  }
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
