#include "http/message.h"

#include <algorithm>
#include <cctype>

namespace switchyard::http {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void Headers::add(std::string name, std::string value) {
  // One allocation for a typical message's headers instead of growing 1, 2, 4.
  if (entries_.capacity() == 0) entries_.reserve(8);
  entries_.emplace_back(std::move(name), std::move(value));
}

void Headers::set(std::string_view name, std::string value) {
  remove(name);
  entries_.emplace_back(std::string(name), std::move(value));
}

void Headers::remove(std::string_view name) {
  std::erase_if(entries_, [&](const Entry& e) { return iequals(e.first, name); });
}

std::optional<std::string_view> Headers::find(std::string_view name) const {
  for (const auto& [n, v] : entries_) {
    if (iequals(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

std::string_view RequestHead::path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

Response json_response(int status, std::string body) {
  Response r;
  r.status = status;
  r.headers.add("Content-Type", "application/json; charset=utf-8");
  r.body = std::move(body);
  return r;
}

}  // namespace switchyard::http
