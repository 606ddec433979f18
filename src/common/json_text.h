// JSON text the way engines write it: members in insertion order, and floating
// point numbers in plain decimal ("8.518", "1.0") rather than Boost.JSON's
// exponent form ("8.518E0"), so a double stays a double when parsed back.
#pragma once

#include <boost/json/value.hpp>

#include <string>

namespace switchyard {

std::string to_json_text(const boost::json::value& value);

// `text` as a quoted, escaped JSON string.
std::string json_quote(std::string_view text);

}  // namespace switchyard
