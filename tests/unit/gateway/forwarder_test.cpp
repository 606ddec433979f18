#include "gateway/forwarder.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "fake_engine.h"
#include "fake_exchange.h"
#include "gateway/route_stage.h"
#include "gateway/wait_queue.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using testing_support::FakeEngine;
using testing_support::FakeExchange;

constexpr std::string_view kOk =
    R"({"object":"chat.completion","model":"/models/engine.gguf","choices":[],)"
    R"("usage":{"prompt_tokens":3,"completion_tokens":2}})";

// Engines, the router and queue in front of them, and the route and forward
// stages, all on one io_context as in the gateway.
struct ForwarderTest : testing::Test {
  void add(FakeEngine& engine) {
    auto& inst = testing_support::add_instance(table, "m", 1);
    inst.url = http::Url{"127.0.0.1", engine.port(), ""};
    inst.pool =
        std::make_unique<http::UpstreamPool>(io.get_executor(), *inst.url, http::UpstreamOptions{});
  }
  // Starts one request through route → forward; `done` counts finished ones.
  void send(FakeExchange& exchange) {
    net::co_spawn(
        io,
        [this, &exchange]() -> net::awaitable<void> {
          http::Request request;
          request.head.method = "POST";
          request.head.target = "/v1/chat/completions";
          request.body = R"({"model":"alias","messages":[{"role":"user","content":"hi"}]})";
          RequestContext ctx(request, exchange, *find_route("/v1/chat/completions"));
          ctx.facts =
              *openai::RequestInspector().inspect(request.body, openai::Endpoint::chat_completions);
          ctx.model = "m";
          ctx.client_model = "alias";
          // As the pipeline enters the route stage: at once, or its run().
          const Stage::Decision routed = route.check(ctx);
          Verdict verdict = Verdict::next;
          if (routed.waits) verdict = co_await routed.waits->run(ctx);
          if (verdict == Verdict::next) co_await forwarder.run(ctx);
          records.push_back(ctx.record);
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
  }
  void run_until(std::size_t finished) {
    for (int i = 0; i < 500 && records.size() < finished; ++i) io.run_for(10ms);
  }

  net::io_context io;
  InstanceTable table;
  std::vector<std::size_t> reported;
  bool eject_on_report = true;
  std::vector<std::size_t> succeeded;
  Router router{table, make_routing_policy(config::RoutingPolicy::round_robin)};
  config::QueueOptions queue_options{8, 10s};
  WaitQueue queue{io.get_executor(), router, queue_options};
  obs::GatewayMetrics metrics;
  RouteStage route{router, queue, queue_options, metrics};
  ForwardOptions options{3, 30s};
  Forwarder forwarder{Upstreams{table,
                                [this](std::size_t i, const std::string&) {
                                  reported.push_back(i);
                                  if (eject_on_report)
                                    table[i]->state = fleet::InstanceState::ejected;
                                },
                                [this](std::size_t i) { succeeded.push_back(i); }},
                      route, options, metrics};
  std::vector<RequestRecord> records;

  void SetUp() override {
    router.on_release([this](std::size_t, const std::string& model) { queue.dispatch(model); });
  }
};

TEST_F(ForwarderTest, NamesTheClientsModelAndCountsUsage) {
  FakeEngine engine(io, 200, std::string(kOk));
  add(engine);
  FakeExchange client;
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u) << "engine saw " << engine.requests
                                << " request(s): " << engine.last_body;
  EXPECT_EQ(client.status, 200);
  EXPECT_NE(client.body.find(R"("model":"alias")"), std::string::npos) << client.body;
  ASSERT_TRUE(records[0].usage);
  EXPECT_EQ(records[0].usage->completion_tokens, 2);
  EXPECT_EQ(succeeded, std::vector<std::size_t>{0}) << "a served request clears the record";
  // The engine got its own name for the model.
  EXPECT_NE(engine.last_body.find(R"("model":"m")"), std::string::npos) << engine.last_body;
}

TEST_F(ForwarderTest, AFreeSlotIsTakenAtOnceAndABusyOneIsWaitedForInTheQueue) {
  FakeEngine engine(io, 200, std::string(kOk));
  add(engine);  // one slot
  http::Request request;
  request.head.method = "POST";
  request.head.target = "/v1/chat/completions";
  FakeExchange a, b;
  RequestContext first(request, a, *find_route("/v1/chat/completions"));
  first.model = "m";
  const Stage::Decision at_once = route.check(first);
  EXPECT_EQ(at_once.waits, nullptr) << "a free slot needs no coroutine";
  ASSERT_TRUE(first.target);
  EXPECT_EQ(router.in_flight(*first.target), 1);
  EXPECT_EQ(first.response_headers.find("x-switchyard-route").value_or(""), "instance=i0");

  RequestContext second(request, b, *find_route("/v1/chat/completions"));
  second.model = "m";
  EXPECT_EQ(route.check(second).waits, &route) << "no slot free: run() waits for one";
  EXPECT_FALSE(second.target);
  EXPECT_EQ(router.in_flight(0), 1);
  std::optional<Verdict> verdict;
  net::co_spawn(
      io, [&]() -> net::awaitable<void> { verdict = co_await route.run(second); }, net::detached);
  io.poll();
  EXPECT_FALSE(verdict) << "queued until the first request's slot frees";
  first.lease.release();
  for (int i = 0; i < 100 && !verdict; ++i) io.run_for(10ms);
  EXPECT_EQ(verdict, Verdict::next);
  EXPECT_EQ(second.target, first.target);
}

TEST_F(ForwarderTest, AFailedInstanceIsReportedBeforeItsSlotGoesToAWaiter) {
  FakeEngine failing(io, 503, R"({"error":{"message":"busy"}})");
  FakeEngine slow(io, 200, std::string(kOk), 50ms);
  add(failing);
  add(slow);
  FakeExchange a, b, c;
  send(a);  // round robin: instance 0, which fails
  send(b);  // instance 1, slow
  send(c);  // waits for a slot
  run_until(3);
  ASSERT_EQ(records.size(), 3u);
  // Had instance 0's slot been released before it was ejected, the waiter
  // would have been sent there too and failed.
  EXPECT_EQ(failing.requests, 1);
  EXPECT_EQ(slow.requests, 3);
  EXPECT_EQ(reported, std::vector<std::size_t>{0});
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(c.status, 200);
}

TEST_F(ForwarderTest, NeverRetriesOnAnInstanceAlreadyTried) {
  FakeEngine one(io, 503, "{}");
  FakeEngine two(io, 502, "{}");
  add(one);
  add(two);
  // Reported instances come back at once: only the request's own memory of
  // where it failed keeps it from going round again.
  eject_on_report = false;
  FakeExchange client;
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 502);
  EXPECT_EQ(one.requests + two.requests, 2);
  EXPECT_EQ(records[0].failed_on.size(), 2u);
}

TEST_F(ForwarderTest, TheRetryBudgetEndsAttemptsEarly) {
  FakeEngine one(io, 503, "{}", 30ms);
  FakeEngine two(io, 503, "{}", 30ms);
  add(one);
  add(two);
  options.retry_budget = 10ms;  // spent by the first attempt
  FakeExchange client;
  send(client);
  run_until(1);
  EXPECT_EQ(client.status, 502);
  EXPECT_EQ(records.at(0).attempts, 1);
  EXPECT_EQ(one.requests + two.requests, 1);
}

TEST_F(ForwarderTest, ARequestOnAnInstanceEjectedMeanwhileMovesOnAtOnce) {
  FakeEngine hung(io, 200, std::string(kOk), 1h);
  FakeEngine good(io, 200, std::string(kOk));
  add(hung);
  add(good);
  FakeExchange client;
  send(client);  // round robin: the hung instance
  for (int i = 0; i < 100 && hung.requests == 0; ++i) io.run_for(10ms);
  ASSERT_EQ(hung.requests, 1);
  table[0]->state = fleet::InstanceState::ejected;  // as a probe would find it
  forwarder.abandon_unanswered(0);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(good.requests, 1);
  EXPECT_EQ(records[0].failed_on, std::vector<std::string>{"i0"});
}

TEST_F(ForwarderTest, AnEventThatNeverEndsFailsTheAttemptInsteadOfFillingMemory) {
  // 2 MiB of one event with no blank line: past the splitter's 1 MiB bound.
  FakeEngine endless(io, 200, "data: " + std::string(2 << 20, 'x'), {}, "text/event-stream");
  FakeEngine good(io, 200, "data: {\"model\":\"m\",\"choices\":[{}]}\n\ndata: [DONE]\n\n", {},
                  "text/event-stream");
  add(endless);
  add(good);
  FakeExchange client;
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(records[0].failed_on, std::vector<std::string>{"i0"});
  std::string relayed;
  for (const auto& c : client.chunks) relayed += c;
  EXPECT_NE(relayed.find("[DONE]"), std::string::npos) << relayed.substr(0, 200);
  EXPECT_NE(relayed.find(R"("model":"alias")"), std::string::npos) << relayed.substr(0, 200);
}

// A stream is relayed where each engine read completes; a client slow to
// read sends the relay back to wait for its socket before the next read.
TEST_F(ForwarderTest, AStreamToAClientSlowToReadWaitsForEachWriteBeforeTheNext) {
  std::string events;
  constexpr int kEvents = 400;  // some 400 KB: several reads of the engine
  for (int i = 0; i < kEvents; ++i)
    events += "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"" +
              std::string(1000, 'a' + i % 26) + "\"}}]}\n\n";
  FakeEngine engine(io, 200, events + "data: [DONE]\n\n", {}, "text/event-stream");
  add(engine);
  FakeExchange client;
  client.full_after_write = true;
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(client.sent_unflushed, 0) << "a write went out before the last one was flushed";
  EXPECT_GE(client.flushes, 2) << "the stream's start and at least one read after it";
  std::string relayed;
  for (const auto& c : client.chunks) relayed += c;
  std::size_t named = 0;
  for (auto at = relayed.find(R"("model":"alias")"); at != std::string::npos;
       at = relayed.find(R"("model":"alias")", at + 1))
    ++named;
  EXPECT_EQ(named, std::size_t{kEvents}) << "every event, renamed, once";
  EXPECT_TRUE(relayed.ends_with("data: [DONE]\n\n")) << relayed.substr(relayed.size() - 100);
  EXPECT_FALSE(records[0].client_gone);
}

// Memory that runs out while a read is relayed ends the stream with an error
// event, and the engine, which did nothing wrong, is not blamed for it.
TEST_F(ForwarderTest, AStreamTheGatewayCannotRelayEndsWithAnErrorWithoutBlamingTheEngine) {
  std::string events;
  for (int i = 0; i < 400; ++i)  // some 400 KB: several reads of the engine
    events += "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"" +
              std::string(1000, 'a') + "\"}}]}\n\n";
  FakeEngine engine(io, 200, events + "data: [DONE]\n\n", {}, "text/event-stream");
  add(engine);
  FakeExchange client;
  client.short_of_memory_at = 2;  // the stream's start is the first
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 200);
  std::string relayed;
  for (const auto& c : client.chunks) relayed += c;
  const auto error_at = relayed.find("the gateway could not relay the stream");
  ASSERT_NE(error_at, std::string::npos)
      << relayed.substr(relayed.size() - std::min<std::size_t>(relayed.size(), 300));
  EXPECT_TRUE(relayed.ends_with("data: [DONE]\n\n"));
  EXPECT_GT(relayed.find("[DONE]"), error_at) << "the engine's own end was not relayed";
  EXPECT_LT(relayed.find("aaaa"), error_at);
  EXPECT_TRUE(records[0].upstream_failed);
  EXPECT_TRUE(reported.empty()) << "the engine is not ejected for the gateway's shortage";
  EXPECT_TRUE(succeeded.empty());
}

// Memory that runs out at a stream's first write, before any of the
// engine's events reached the client: the request goes to another
// instance, and the client gets that one's whole stream, without an error.
TEST_F(ForwarderTest, AStreamWhoseFirstWriteRunsShortOfMemoryIsRetriedWithoutBlamingTheEngine) {
  const std::string events =
      "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n"
      "data: [DONE]\n\n";
  FakeEngine first(io, 200, events, {}, "text/event-stream");
  FakeEngine second(io, 200, events, {}, "text/event-stream");
  add(first);
  add(second);
  FakeExchange client;
  client.short_of_memory_at = 1;
  send(client);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(first.requests + second.requests, 2) << "the request was not retried";
  EXPECT_EQ(client.status, 200);
  std::string relayed;
  for (const auto& c : client.chunks) relayed += c;
  EXPECT_EQ(relayed.find("could not relay"), std::string::npos) << relayed;
  EXPECT_NE(relayed.find(R"("model":"alias")"), std::string::npos) << relayed;
  EXPECT_TRUE(relayed.ends_with("data: [DONE]\n\n")) << relayed;
  EXPECT_FALSE(records[0].upstream_failed);
  EXPECT_TRUE(reported.empty()) << "the engine is not ejected for the gateway's shortage";
}

TEST_F(ForwarderTest, TheDrainsCutoffEndsARunningRequestWithoutBlamingItsEngine) {
  FakeEngine hung(io, 200, std::string(kOk), 1h);
  FakeEngine good(io, 200, std::string(kOk));
  add(hung);
  add(good);
  FakeExchange client;
  send(client);  // round robin: the hung instance
  for (int i = 0; i < 100 && hung.requests == 0; ++i) io.run_for(10ms);
  ASSERT_EQ(hung.requests, 1);
  forwarder.end_running(2s);
  run_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(client.status, 503);
  EXPECT_NE(client.body.find(R"("code":"shutting_down")"), std::string::npos) << client.body;
  EXPECT_NE(client.body.find("timeouts.drain (2s)"), std::string::npos) << client.body;
  EXPECT_TRUE(reported.empty()) << "no engine is ejected";
  EXPECT_TRUE(records[0].failed_on.empty());
  EXPECT_EQ(good.requests, 0) << "nothing is retried after the cutoff";
  EXPECT_EQ(records[0].outcome(), RequestRecord::Outcome::shutting_down);
}

}  // namespace
}  // namespace switchyard::gateway
