#include "gateway/log_target.h"

namespace switchyard::gateway {

namespace {

constexpr std::string_view kStoredResponse = "/v1/responses/";

// Where the path names a stored response (/v1/responses/{id}[/cancel]),
// the length of its prefix; else 0.
std::size_t stored_response_prefix(std::string_view path) {
  if (!path.starts_with(kStoredResponse) || path.size() == kStoredResponse.size()) return 0;
  return path.substr(kStoredResponse.size()) == "input_tokens" ? 0 : kStoredResponse.size();
}

}  // namespace

std::string_view log_target(std::string_view target, std::string& scratch) {
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::size_t stored = stored_response_prefix(path);
  if (q == std::string_view::npos && stored == 0) return target;
  if (stored > 0) {
    scratch.assign(path.substr(0, stored));
    scratch += '*';
    if (const auto rest = path.find('/', stored); rest != std::string_view::npos)
      scratch.append(path.substr(rest));
  } else {
    scratch.assign(path);
  }
  if (q == std::string_view::npos) return scratch;
  scratch += '?';
  std::string_view query = target.substr(q + 1);
  bool first = true;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    if (!first) scratch += '&';
    first = false;
    const auto eq = pair.find('=');
    scratch.append(pair.substr(0, eq));
    if (eq != std::string_view::npos) scratch.append("=*");
  }
  return scratch;
}

}  // namespace switchyard::gateway
