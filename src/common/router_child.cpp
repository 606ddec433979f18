#include "common/router_child.h"

#include <boost/json/parse.hpp>

#include "common/json_text.h"

namespace switchyard {

namespace {
constexpr std::string_view kStatePrefix = "cmd_child_to_router:state:";
}  // namespace

std::optional<EngineState> parse_engine_state(std::string_view line) {
  if (line.substr(0, kStatePrefix.size()) != kStatePrefix) return std::nullopt;
  boost::system::error_code ec;
  auto doc = boost::json::parse(line.substr(kStatePrefix.size()), ec);
  if (ec || !doc.is_object()) return std::nullopt;
  const auto* state = doc.get_object().if_contains("state");
  if (!state || !state->is_string()) return std::nullopt;
  EngineState report{std::string(state->get_string()), {}};
  if (const auto* payload = doc.get_object().if_contains("payload");
      payload && payload->is_object())
    report.payload = payload->get_object();
  return report;
}

std::string engine_state_line(const EngineState& state) {
  return std::string(kStatePrefix) +
         to_json_text(boost::json::object{{"state", state.state}, {"payload", state.payload}});
}

}  // namespace switchyard
