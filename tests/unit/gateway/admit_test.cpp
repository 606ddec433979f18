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
    return run(start(chat_call(std::move(session), max_tokens)));
  }
  static std::unique_ptr<Call> chat_call(std::string session = "", int max_tokens = 10) {
    auto call =
        std::make_unique<Call>("/v1/chat/completions",
                               R"({"model":"m","max_tokens":)" + std::to_string(max_tokens) +
                                   R"(,"messages":[{"role":"user","content":"hi"}]})",
                               openai::Endpoint::chat_completions);
    call->ctx->session = std::move(session);
    return call;
  }
  std::unique_ptr<Call> completion() {
    return run(start(std::make_unique<Call>("/v1/completions",
                                            R"({"model":"m","max_tokens":10,"prompt":"Once"})",
                                            openai::Endpoint::completions)));
  }
  // Admit for `call`, started on the next poll or run.
  std::unique_ptr<Call> start(std::unique_ptr<Call> call) {
    net::co_spawn(
        io,
        [this, c = call.get()]() -> net::awaitable<void> {
          // As the pipeline enters it: a decision at once, or its run().
          const Stage::Decision decided = admit.check(*c->ctx);
          if (decided.waits)
            c->verdict = co_await decided.waits->run(*c->ctx);
          else
            c->verdict = decided.error ? Verdict::answered : Verdict::next;
        },
        net::detached);
    return call;
  }
  std::unique_ptr<Call> run(std::unique_ptr<Call> call) {
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

TEST_F(AdmitTest, ARequestWithoutAKeyIsAdmittedAtOnceUnlessTheGatewayDrains) {
  auto call = chat_call();
  call->ctx->key_name.clear();
  const Stage::Decision at_once = admit.check(*call->ctx);
  EXPECT_EQ(at_once.waits, nullptr) << "nothing to count: no coroutine";
  EXPECT_FALSE(at_once.error);
  draining = true;
  EXPECT_EQ(admit.check(*call->ctx).waits, &admit);
  auto refused = run(start(chat_call()));
  EXPECT_EQ(refused->verdict, Verdict::answered);
  EXPECT_EQ(refused->exchange.status, 503);
  EXPECT_EQ(code_of(*refused), "shutting_down");
}

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

TEST_F(AdmitTest, AFreedSlotGoesToTheLongestWaitingRequestNotOneArrivingAsItFrees) {
  queue.max_wait = 1h;  // the waits end by the test, not by the bound
  tenancy::KeyLimits limits;
  limits.max_concurrency = 1;
  set_limits(limits);
  auto running = chat();
  ASSERT_EQ(running->verdict, Verdict::next);
  auto first = start(chat_call());
  auto second = start(chat_call());
  io.restart();
  io.poll();
  ASSERT_EQ(admit.load("team")->waiting, 2);
  // The slot frees just before a newcomer's turn to run, and ahead of the
  // waiters' wake-ups.
  net::post(io, [&] { admit.finish(*running->ctx); });
  auto newcomer = start(chat_call());
  io.poll();
  EXPECT_EQ(first->verdict, Verdict::next);
  EXPECT_FALSE(second->verdict);
  EXPECT_FALSE(newcomer->verdict);
  admit.finish(*first->ctx);
  io.poll();
  EXPECT_EQ(second->verdict, Verdict::next);
  EXPECT_FALSE(newcomer->verdict);
  admit.release_all();
  io.run();
  EXPECT_EQ(newcomer->exchange.status, 503);
}

}  // namespace
}  // namespace switchyard::gateway
