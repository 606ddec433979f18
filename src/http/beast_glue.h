// Conversions between Beast messages and switchyard::http types, for the
// files inside src/http that speak Beast.
#pragma once

#include <boost/beast/http.hpp>

#include "http/message.h"

namespace switchyard::http {

namespace beast_http = boost::beast::http;

template <class Fields>
Headers to_headers(const Fields& fields) {
  Headers h;
  for (const auto& f : fields) h.add(std::string(f.name_string()), std::string(f.value()));
  return h;
}

template <class Fields>
void copy_headers(const Headers& from, Fields& to) {
  for (const auto& [name, value] : from) to.insert(name, value);
}

}  // namespace switchyard::http
