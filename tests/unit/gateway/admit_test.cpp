// The admit stage on a fake wall clock: rates, day budgets and session seats
// move only when the test moves the clock. Waits for a seat or a running
// slot are real timers, bounded by a short queue.max_wait.
#include "gateway/admission.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <memory>
#include <string>

#include "fake_exchange.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using testing_support::FakeExchange;

// One request through admit: its context lives until it is finished.
struct Call {
  Call(const std::string& path, std::string body, openai::Endpoint endpoint) {
    request.head.method = "POST";
    request.head.target = path;
    request.body = std::move(body);
    ctx = std::make_unique<RequestContext>(request, exchange, *find_route(path));
    ctx->facts = *openai::RequestInspector().inspect(request.body, endpoint);
    ctx->key_name = "team";
    ctx->model = "m";
  }
  http::Request request;
  FakeExchange exchange;
  std::unique_ptr<RequestContext> ctx;
  std::optional<Verdict> verdict;
};

struct AdmitTest : testing::Test {
  void set_limits(const tenancy::KeyLimits& limits) {
    keys = ApiKeys({tenancy::StaticKey{"team", "sk-team", limits}}, {}, false);
    admit.keys_changed();
  }
  // Runs admit for a chat request of `session` (empty: none) to its verdict.
  std::unique_ptr<Call> chat(std::string session = "", int max_tokens = 10) {
    auto call =
        std::make_unique<Call>("/v1/chat/completions",
                               R"({"model":"m","max_tokens":)" + std::to_string(max_tokens) +
                                   R"(,"messages":[{"role":"user","content":"hi"}]})",
                               openai::Endpoint::chat_completions);
    call->ctx->session = std::move(session);
    return run(std::move(call));
  }
  std::unique_ptr<Call> completion() {
    return run(std::make_unique<Call>("/v1/completions",
                                      R"({"model":"m","max_tokens":10,"prompt":"Once"})",
                                      openai::Endpoint::completions));
  }
  std::unique_ptr<Call> run(std::unique_ptr<Call> call) {
    net::co_spawn(
        io,
        [this, c = call.get()]() -> net::awaitable<void> {
          c->verdict = co_await admit.run(*c->ctx);
        },
        net::detached);
    io.restart();
    io.run();
    EXPECT_TRUE(call->verdict.has_value());
    return call;
  }
  static std::string code_of(const Call& call) {
    const auto at = call.exchange.body.find("\"code\":\"");
    if (at == std::string::npos) return {};
    const auto start = at + 8;
    return call.exchange.body.substr(start, call.exchange.body.find('"', start) - start);
  }

  net::io_context io;
  tenancy::Time now = tenancy::Time{} + 1000h;
  bool draining = false;
  ApiKeys keys{std::vector<std::string>{}};
  config::QueueOptions queue{8, 50ms};
  Admit admit{io.get_executor(), draining, keys, queue, [this] { return now; }};
};

TEST_F(AdmitTest, RpmRefusesUntilTheClockMovesOn) {
  tenancy::KeyLimits limits;
  limits.rpm = 2;
  set_limits(limits);
  for (int i = 0; i < 2; ++i) {
    auto ok = chat();
    EXPECT_EQ(ok->verdict, Verdict::next);
    admit.finish(*ok->ctx);
  }
  auto refused = chat();
  EXPECT_EQ(refused->verdict, Verdict::answered);
  EXPECT_EQ(refused->exchange.status, 429);
  EXPECT_EQ(code_of(*refused), "rate_limit_exceeded");
  now += 29s;
  EXPECT_EQ(chat()->verdict, Verdict::answered);  // one request every 30 s
  now += 1s;
  EXPECT_EQ(chat()->verdict, Verdict::next);
}

TEST_F(AdmitTest, TheDayBudgetStartsFromWhatTheLedgerSpentAndRenewsAtMidnight) {
  tenancy::KeyLimits limits;
  limits.tokens_per_day = 100;
  set_limits(limits);
  admit.start_budgets({{"team", 90}}, now);
  auto over = chat("", 20);
  EXPECT_EQ(over->exchange.status, 429);
  EXPECT_EQ(code_of(*over), "budget_exceeded");
  now += 24h;
  EXPECT_EQ(chat("", 20)->verdict, Verdict::next);
}

TEST_F(AdmitTest, ANewSessionWaitsForASeatThatFreesWhenTheLastIdlesOut) {
  tenancy::KeyLimits limits;
  limits.max_sessions = 1;
  limits.session_idle = 5min;
  set_limits(limits);
  auto a = chat("agent-a");
  ASSERT_EQ(a->verdict, Verdict::next);
  admit.finish(*a->ctx);
  EXPECT_EQ(chat("agent-a")->verdict, Verdict::next);  // a seated session goes ahead
  auto b = chat("agent-b");
  EXPECT_EQ(b->exchange.status, 429);
  EXPECT_EQ(code_of(*b), "session_limit_exceeded");
  now += 5min;
  EXPECT_EQ(chat("agent-b")->verdict, Verdict::next);
}

TEST_F(AdmitTest, ARequestWithoutASessionHoldsASeatOnlyWhileItRuns) {
  tenancy::KeyLimits limits;
  limits.max_sessions = 1;
  limits.session_idle = 1h;
  set_limits(limits);
  auto plain = completion();
  ASSERT_EQ(plain->verdict, Verdict::next);
  EXPECT_EQ(admit.load("team")->sessions, 1);
  auto agent = chat("agent-a");
  EXPECT_EQ(code_of(*agent), "session_limit_exceeded");
  admit.finish(*plain->ctx);
  EXPECT_EQ(admit.load("team")->sessions, 0);  // at once, not an hour later
  EXPECT_EQ(chat("agent-a")->verdict, Verdict::next);
}

TEST_F(AdmitTest, AWaitForTheKeyIsRecordedForTheQueuesShareOfTheBound) {
  tenancy::KeyLimits limits;
  limits.max_concurrency = 1;
  set_limits(limits);
  auto running = chat();
  ASSERT_EQ(running->verdict, Verdict::next);
  EXPECT_EQ(running->ctx->waited_for_key, std::chrono::steady_clock::duration::zero());
  auto waited = chat();
  EXPECT_EQ(code_of(*waited), "concurrency_limit_exceeded");
  EXPECT_GE(waited->ctx->waited_for_key, 50ms);
}

// redis_down: local. The outage's split counters start from this gateway's
// share of what Redis last said was left, refilled since, so that two
// gateways together stay within the whole limit.
TEST(KeyStateOutage, SplitCountersStartFromTheLastSharedReading) {
  tenancy::Time now = tenancy::Time{} + 1000h + 12h;
  tenancy::KeyLimits whole;
  whole.rpm = 10;
  whole.tpm = 1000;
  whole.tokens_per_day = 10'000;
  tenancy::RatesTaken read;
  read.requests.remaining = 4;
  read.tokens.remaining = 600;
  read.used_today = 4000;
  const auto split = tenancy::split_limits(whole, 2);
  const auto local = [&](tenancy::Time at) {
    KeyState s("team", split, [&] { return now; });
    s.carry_on_from({read, at}, whole, 2);
    return s;
  };
  auto fresh = local(now);
  EXPECT_EQ(fresh.rpm->remaining(now), 2);
  EXPECT_EQ(fresh.tpm->remaining(now), 300);
  EXPECT_EQ(fresh.day->limit() - fresh.day->used(now), 3000);
  auto older = local(now - 30s);  // half a minute refills 5 requests, 500 tokens
  EXPECT_EQ(older.rpm->remaining(now), 4);
  EXPECT_EQ(older.tpm->remaining(now), 500);
  auto yesterday = local(now - 24h);
  EXPECT_EQ(yesterday.day->used(now), 0);
  EXPECT_EQ(yesterday.rpm->remaining(now), 5);
}

}  // namespace
}  // namespace switchyard::gateway
