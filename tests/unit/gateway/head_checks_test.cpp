#include <gtest/gtest.h>

#include "gateway/head_checks.h"
#include "gateway/local_routes.h"
#include "gateway/routes.h"

namespace switchyard::gateway {
namespace {

http::RequestHead head(std::string method, std::string target, std::string_view key = {}) {
  http::RequestHead h;
  h.method = std::move(method);
  h.target = std::move(target);
  h.remote = "127.0.0.1:50000";
  if (!key.empty()) h.headers.add("Authorization", "Bearer " + std::string(key));
  return h;
}

struct HeadChecksTest : ::testing::Test {
  HeadChecksTest() { config.admin_key = "sk-admin"; }

  std::optional<http::Response> run(http::RequestHead h) {
    const Route* route = find_route(h.path());
    EXPECT_NE(route, nullptr) << h.path();
    last_note = 0;
    auto refusal = checks.run(h, *route);
    last_note = h.screen_note;
    return refusal;
  }

  config::FleetConfig config;
  ApiKeys keys{{tenancy::StaticKey{"ops", "sk-ops", {}}}, {}, true};
  HeadChecks checks{config, keys};
  std::uint64_t last_note = 0;
};

TEST_F(HeadChecksTest, TheMethodIsCheckedBeforeAnyKey) {
  auto refusal = run(head("DELETE", "/v1/chat/completions"));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 405);
  EXPECT_EQ(refusal->headers.find("allow"), "POST");
}

TEST_F(HeadChecksTest, AnApiRouteWantsAKeyAndNotesTheOneItFound) {
  auto refusal = run(head("POST", "/v1/chat/completions"));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 401);
  EXPECT_NE(refusal->body.find("an API key is required"), std::string::npos);
  EXPECT_EQ(run(head("POST", "/v1/chat/completions", "sk-ops")), std::nullopt);
  EXPECT_NE(last_note, 0u);
  EXPECT_EQ(keys.by_note(last_note)->name, "ops");
}

TEST_F(HeadChecksTest, AnAnthropicRouteRefusesInItsOwnDialect) {
  auto refusal = run(head("POST", "/v1/messages", "sk-wrong"));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 401);
  EXPECT_NE(refusal->body.find(R"("type":"error")"), std::string::npos) << refusal->body;
}

TEST_F(HeadChecksTest, AdminRoutesTakeTheAdminKeyNotAnApiKey) {
  auto refusal = run(head("GET", "/admin/status", "sk-ops"));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 401);
  EXPECT_EQ(run(head("GET", "/admin/status", "sk-admin")), std::nullopt);
  EXPECT_EQ(last_note, 0u);  // the API key door never looked
}

TEST_F(HeadChecksTest, ThePageLoadsWithoutAKeyButOnlyForAnAllowedHost) {
  EXPECT_EQ(run(head("GET", "/ui")), std::nullopt);
  auto elsewhere = head("GET", "/ui");
  elsewhere.headers.add("Host", "attacker.example:8080");
  auto refusal = run(elsewhere);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 403);
}

TEST_F(HeadChecksTest, OpenRoutesPassWithoutAnyKey) {
  EXPECT_EQ(run(head("GET", "/health")), std::nullopt);
  EXPECT_EQ(run(head("HEAD", "/")), std::nullopt);
}

TEST(RouteTable, EveryRouteIsForwardedOrAnsweredHereNeverBothNorNeither) {
  for (std::string_view path :
       {"/v1/chat/completions", "/v1/messages", "/v1/responses/resp_1", "/v1/models",
        "/v1/models/qwen", "/models", "/models/sse", "/models/load", "/", "/health", "/metrics",
        "/ui", "/ui/app.js", "/admin/events", "/admin/status", "/admin/login",
        "/admin/instances/a/drain"}) {
    const Route* route = find_route(path);
    ASSERT_NE(route, nullptr) << path;
    EXPECT_NE(route->forwarded(), route->answer != nullptr) << path;
  }
  EXPECT_EQ(find_route("/v1/models")->answer, &LocalRoutes::models);
  EXPECT_EQ(find_route("/admin/login")->answer, &LocalRoutes::login);
  EXPECT_EQ(find_route("/nowhere"), nullptr);
}

// llama.cpp's router answers GET /props itself and hands GET /props?model=X
// to X's engine.
TEST(RouteTable, PropsGoesToAnEngineOnlyWhenTheQueryNamesAModel) {
  EXPECT_EQ(find_route("/props")->answer, &LocalRoutes::router_props);
  EXPECT_EQ(find_route("/props?autoload=false")->answer, &LocalRoutes::router_props);
  EXPECT_EQ(find_route("/props?model=")->answer, &LocalRoutes::router_props);
  for (std::string_view target :
       {"/props?model=coder", "/props?autoload=false&model=coder", "/slots?model=coder"}) {
    const Route* route = find_route(target);
    ASSERT_NE(route, nullptr) << target;
    EXPECT_EQ(route->endpoint, openai::Endpoint::engine_state) << target;
    EXPECT_FALSE(openai::takes_slot(*route->endpoint));
  }
  // Without a model, /slots is the default model's (resolve's rule for a body without one).
  EXPECT_EQ(find_route("/slots")->endpoint, openai::Endpoint::engine_state);
}

}  // namespace
}  // namespace switchyard::gateway
