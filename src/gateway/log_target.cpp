#include "gateway/log_target.h"

namespace switchyard::gateway {

std::string_view log_target(std::string_view target, std::string& scratch) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return target;
  scratch.assign(target.substr(0, q + 1));
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
