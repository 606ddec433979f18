#include "common/router_child.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

TEST(EngineState, ReadsTheLinesALlamaServerChildWrites) {
  // As tools/server/server-models.cpp's notify_to_router writes them.
  auto loading = parse_engine_state(
      R"(cmd_child_to_router:state:{"payload":{"current":"text_model","stages":["text_model","mmproj_model"],"value":0.25},"state":"loading"})");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->state, "loading");
  EXPECT_EQ(loading->payload.at("value").as_double(), 0.25);
  EXPECT_EQ(loading->payload.at("stages").as_array().size(), 2u);
  auto ready = parse_engine_state(R"(cmd_child_to_router:state:{"state":"ready","payload":{}})");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->state, "ready");
  EXPECT_TRUE(ready->payload.empty());
}

TEST(EngineState, AnyOtherLineIsNotAReport) {
  for (const char* line :
       {"srv  load_model: loading model '/m/q.gguf'", "",
        "cmd_child_to_router:state:", "cmd_child_to_router:state:{not json",
        R"(cmd_child_to_router:state:{"payload":{}})", R"(cmd_child_to_router:state:{"state":3})",
        R"(cmd_child_to_router:state:[1])", R"( cmd_child_to_router:state:{"state":"ready"})"})
    EXPECT_FALSE(parse_engine_state(line)) << line;
}

TEST(EngineState, WritesWhatItReads) {
  const EngineState state{"loading", {{"stages", {"text_model"}}, {"value", 1.0}}};
  const auto line = engine_state_line(state);
  EXPECT_EQ(
      line,
      R"(cmd_child_to_router:state:{"state":"loading","payload":{"stages":["text_model"],"value":1.0}})");
  auto back = parse_engine_state(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, "loading");
  EXPECT_EQ(back->payload, state.payload);
}

}  // namespace
}  // namespace switchyard
