#include "common/json_text.h"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <cmath>

#include <fmt/format.h>

namespace switchyard {

namespace {

void write(const boost::json::value& v, std::string& out) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        out.append(json_quote(kv.key()));
        out.push_back(':');
        write(kv.value(), out);
      }
      out.push_back('}');
      break;
    }
    case boost::json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        write(e, out);
      }
      out.push_back(']');
      break;
    }
    case boost::json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        out.append("null");  // JSON has no inf/nan
        break;
      }
      std::string s = fmt::format("{}", d);
      if (s.find_first_of(".e") == std::string::npos) s.append(".0");
      out.append(s);
      break;
    }
    default:
      out.append(boost::json::serialize(v));
  }
}

}  // namespace

std::string to_json_text(const boost::json::value& value) {
  std::string out;
  write(value, out);
  return out;
}

std::string json_quote(std::string_view text) {
  return boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

}  // namespace switchyard
