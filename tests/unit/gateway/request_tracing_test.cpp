#include "gateway/request_tracing.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <map>

#include "fake_engine.h"
#include "fake_exchange.h"
#include "gateway/forwarder.h"
#include "gateway/route_stage.h"
#include "gateway/wait_queue.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using testing_support::FakeEngine;
using testing_support::FakeExchange;

constexpr std::string_view kStream =
    "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
    "data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,"
    "\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n\n"
    "data: [DONE]\n\n";

// Route and forward over fake engines, as the gateway runs them, with the
// request's trace started and finished by RequestTracing into an exporter
// whose collector keeps what it is sent.
struct RequestTracingTest : testing::Test {
  void add(FakeEngine& engine) {
    auto& inst = testing_support::add_instance(table, "m", 1);
    inst.url = http::Url{"127.0.0.1", engine.port(), ""};
    inst.pool =
        std::make_unique<http::UpstreamPool>(io.get_executor(), *inst.url, http::UpstreamOptions{});
  }
  void send(FakeExchange& exchange, std::string traceparent = {}) {
    net::co_spawn(
        io,
        [this, &exchange, traceparent]() -> net::awaitable<void> {
          http::Request request;
          request.head.method = "POST";
          request.head.target = "/v1/chat/completions";
          request.head.headers.add("Host", "gw.example:8080");
          if (!traceparent.empty()) request.head.headers.add("traceparent", traceparent);
          request.body =
              R"({"model":"alias","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";
          RequestContext ctx(request, exchange, *find_route("/v1/chat/completions"));
          ctx.record.id = "req" + std::to_string(started++);
          ctx.facts =
              *openai::RequestInspector().inspect(request.body, openai::Endpoint::chat_completions);
          ctx.model = "m";
          ctx.client_model = "alias";
          ctx.key_name = "team-a";
          ctx.trace = tracing.start(request.head);
          if (co_await route.run(ctx) == Verdict::next) co_await forwarder.run(ctx);
          tracing.finish(ctx);
          ++finished;
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
  }
  void run_until(int n) {
    for (int i = 0; i < 500 && finished < n; ++i) io.run_for(10ms);
  }
  // The spans the collector got, by trace id (the exporter sends what it
  // holds when destroyed, here by replacing it).
  std::map<std::string, std::vector<json::object>> exported() {
    tracing = RequestTracing(1.0, nullptr);
    std::map<std::string, std::vector<json::object>> by_trace;
    std::lock_guard lock(*mutex);
    for (const auto& body : *bodies) {
      const json::value parsed = json::parse(body);
      for (const auto& s : parsed.at_pointer("/resourceSpans/0/scopeSpans/0/spans").as_array())
        by_trace[std::string(s.at("traceId").as_string())].push_back(s.as_object());
    }
    return by_trace;
  }

  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> bodies = std::make_shared<std::vector<std::string>>();
  RequestTracing tracing{
      1.0, std::make_unique<obs::TraceExporter>(
               obs::SpanSource{{{"service.name", std::string("test")}}, "switchyard", "", {}},
               [m = mutex, b = bodies](const std::string& body) -> std::optional<std::string> {
                 std::lock_guard lock(*m);
                 b->push_back(body);
                 return std::nullopt;
               },
               "test")};
  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(config::RoutingPolicy::round_robin)};
  config::QueueOptions queue_options{8, 10s};
  WaitQueue queue{io.get_executor(), router, queue_options};
  obs::GatewayMetrics metrics;
  RouteStage route{router, queue, queue_options, metrics};
  ForwardOptions options{3, 30s};
  Forwarder forwarder{Upstreams{table,
                                [this](std::size_t i, const std::string&) {
                                  table[i]->state = fleet::InstanceState::ejected;
                                },
                                [](std::size_t) {}},
                      route, options, metrics};
  int started = 0, finished = 0;

  void SetUp() override {
    router.on_release([this](std::size_t, const std::string& model) { queue.dispatch(model); });
  }
};

const json::value* attribute(const json::object& span, std::string_view key) {
  for (const auto& a : span.at("attributes").as_array())
    if (a.at("key").as_string() == key) return &a.at("value");
  return nullptr;
}

TEST_F(RequestTracingTest, ARetriedQueuedStreamedRequestHasItsSpanTree) {
  FakeEngine failing(io, 503, R"({"error":{"message":"busy"}})");
  FakeEngine streaming(io, 200, std::string(kStream), 50ms, "text/event-stream");
  add(failing);
  add(streaming);
  const std::string client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  FakeExchange a, b;
  send(a, "00-" + client_trace + "-00f067aa0ba902b7-01");  // round robin: the failing one
  send(b);  // the streaming one; a's retry then waits for its slot
  run_until(2);
  ASSERT_EQ(finished, 2);
  ASSERT_EQ(a.status, 200);

  auto traces = exported();
  ASSERT_EQ(traces.size(), 2u);
  ASSERT_TRUE(traces.count(client_trace)) << "the client's trace is continued";
  const auto& spans = traces[client_trace];
  std::map<std::string, std::vector<const json::object*>> by_name;
  const json::object* root = nullptr;
  for (const auto& s : spans) {
    by_name[std::string(s.at("name").as_string())].push_back(&s);
    if (s.at("parentSpanId") == "00f067aa0ba902b7") root = &s;
  }
  ASSERT_TRUE(root) << "the root's parent is the client's span";
  EXPECT_EQ(root->at("name"), "chat alias");
  EXPECT_EQ(root->at("kind"), 2);
  const std::pair<std::string_view, json::value> want[] = {
      {"gen_ai.operation.name", json::object{{"stringValue", "chat"}}},
      {"gen_ai.request.model", json::object{{"stringValue", "alias"}}},
      {"gen_ai.response.model", json::object{{"stringValue", "m"}}},
      {"gen_ai.request.max_tokens", json::object{{"intValue", "16"}}},
      {"gen_ai.usage.input_tokens", json::object{{"intValue", "3"}}},
      {"gen_ai.usage.output_tokens", json::object{{"intValue", "2"}}},
      {"server.address", json::object{{"stringValue", "gw.example:8080"}}},
      {"switchyard.key", json::object{{"stringValue", "team-a"}}},
      {"switchyard.instance", json::object{{"stringValue", "i1"}}},
      {"switchyard.retries", json::object{{"intValue", "1"}}},
      {"switchyard.cached_tokens", json::object{{"intValue", "1"}}},
      {"switchyard.route.policy", json::object{{"stringValue", "round-robin"}}},
  };
  for (const auto& [key, value] : want) {
    const auto* got = attribute(*root, key);
    ASSERT_TRUE(got) << key;
    EXPECT_EQ(*got, value) << key;
  }
  ASSERT_EQ(root->at("events").as_array().size(), 1u);
  EXPECT_EQ(root->at("events").at(0).at("name"), "first_token");

  // Children: the failed attempt, the wait for a slot, the attempt that answered.
  ASSERT_EQ(by_name["switchyard.attempt"].size(), 2u);
  ASSERT_EQ(by_name["switchyard.queue_wait"].size(), 1u);
  for (const auto& s : spans) {
    if (&s == root) continue;
    EXPECT_EQ(s.at("parentSpanId"), root->at("spanId")) << s.at("name");
  }
  const auto& first = *by_name["switchyard.attempt"][0];
  const auto& second = *by_name["switchyard.attempt"][1];
  EXPECT_EQ(*attribute(first, "switchyard.instance"), (json::object{{"stringValue", "i0"}}));
  EXPECT_EQ(first.at("status").at("code"), 2);
  EXPECT_NE(std::string(first.at("status").at("message").as_string()).find("503"),
            std::string::npos);
  EXPECT_EQ(*attribute(second, "switchyard.instance"), (json::object{{"stringValue", "i1"}}));
  EXPECT_EQ(*attribute(second, "http.response.status_code"), (json::object{{"intValue", "200"}}));
  EXPECT_EQ(second.at("kind"), 3);
  const auto& wait = *by_name["switchyard.queue_wait"][0];
  EXPECT_EQ(*attribute(wait, "switchyard.wait.outcome"),
            (json::object{{"stringValue", "granted"}}));
  // In time order: fail, wait, answer.
  const auto nanos = [](const json::object& s, const char* k) {
    return std::stoull(std::string(s.at(k).as_string()));
  };
  EXPECT_LE(nanos(first, "endTimeUnixNano"), nanos(wait, "endTimeUnixNano"));
  EXPECT_LE(nanos(wait, "endTimeUnixNano"), nanos(second, "startTimeUnixNano"));
}

TEST_F(RequestTracingTest, AnUnsampledClientTraceIsNotExported) {
  FakeEngine streaming(io, 200, std::string(kStream), {}, "text/event-stream");
  add(streaming);
  FakeExchange a;
  send(a, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  run_until(1);
  ASSERT_EQ(a.status, 200);
  EXPECT_TRUE(exported().empty());
}

TEST(RequestTracingUrls, OtlpHttpTracesPath) {
  EXPECT_EQ(otlp_traces_url("http://c:4318"), "http://c:4318/v1/traces");
  EXPECT_EQ(otlp_traces_url("http://c:4318/"), "http://c:4318/v1/traces");
  EXPECT_EQ(otlp_traces_url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
}

}  // namespace
}  // namespace switchyard::gateway
