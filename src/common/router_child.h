// llama.cpp's router protocol, the child's side (tools/server/server-models.cpp):
// a llama-server whose environment has LLAMA_SERVER_ROUTER_PORT writes its
// state on stdout as `cmd_child_to_router:state:{"state":S,"payload":P}`
// lines ("loading" with {"stages","current","value"} as its weights load,
// "ready" with its model's info), stops when its stdin says so and exits at
// once (status 1) when its stdin ends. The gateway
// sets the variable for the engines it starts and reads these lines; the
// simulator writes them as llama-server does.
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

inline constexpr const char* kRouterPortVariable = "LLAMA_SERVER_ROUTER_PORT";
// The line a router writes to a child's stdin to stop it. A child on SIGTERM
// alone does not exit: it waits for this line (or end of file) first.
inline constexpr const char* kRouterExitCommand = "cmd_router_to_child:exit";

struct EngineState {
  std::string state;  // downloading, loading, ready, sleeping
  boost::json::object payload;
};

// The report a line of engine output carries; nullopt for any other line,
// a malformed report included.
std::optional<EngineState> parse_engine_state(std::string_view line);

// The line (without its newline) reporting `state`.
std::string engine_state_line(const EngineState& state);

}  // namespace switchyard
