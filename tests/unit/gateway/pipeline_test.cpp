// The chain: stages run in order until one answers, and every stage that
// ran is finished, last first; those after the one that answered are not.
#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <string>
#include <vector>

#include "fake_exchange.h"
#include "gateway/pipeline.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using testing_support::FakeExchange;

class Recording final : public WaitingStage {
 public:
  Recording(std::string name, std::vector<std::string>& log, Verdict verdict = Verdict::next,
            bool at_once = false)
      : name_(std::move(name)), log_(log), verdict_(verdict), at_once_(at_once) {}
  // A waiting stage that may find it need not wait.
  Decision check(RequestContext& ctx) override {
    if (!at_once_) return WaitingStage::check(ctx);
    log_.push_back("check " + name_);
    return {};
  }
  net::awaitable<Verdict> run(RequestContext&) override {
    log_.push_back("run " + name_);
    co_return verdict_;
  }
  void finish(RequestContext&) override { log_.push_back("finish " + name_); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  Verdict verdict_;
  bool at_once_;
};

// A stage that decides without waiting.
class Checking final : public Stage {
 public:
  Checking(std::string name, std::vector<std::string>& log, bool refuses = false)
      : name_(std::move(name)), log_(log), refuses_(refuses) {}
  Decision check(RequestContext&) override {
    log_.push_back("check " + name_);
    if (refuses_) return Decision::answer(openai::ApiError::bad_request("refused by " + name_));
    return {};
  }
  void finish(RequestContext&) override { log_.push_back("finish " + name_); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool refuses_;
};

FakeExchange run_chain(std::vector<Stage*> stages) {
  net::io_context io;
  FakeExchange exchange;
  http::Request request;
  Pipeline pipeline(std::move(stages));
  bool done = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        RequestContext ctx(request, exchange, *find_route("/v1/chat/completions"));
        co_await pipeline.run(ctx);
        done = true;
      },
      net::detached);
  io.run();
  EXPECT_TRUE(done);
  return exchange;
}

TEST(Pipeline, FinishesEveryStageThatRanInReverseOrder) {
  std::vector<std::string> log;
  Recording a("a", log), b("b", log), c("c", log);
  run_chain({&a, &b, &c});
  EXPECT_EQ(log, (std::vector<std::string>{"run a", "run b", "run c", "finish c", "finish b",
                                           "finish a"}));
}

TEST(Pipeline, AStageThatAnswersIsFinishedAndTheRestNeverRun) {
  std::vector<std::string> log;
  Recording a("a", log), b("b", log, Verdict::answered), c("c", log);
  run_chain({&a, &b, &c});
  EXPECT_EQ(log, (std::vector<std::string>{"run a", "run b", "finish b", "finish a"}));
}

TEST(Pipeline, StagesThatDecideAtOnceAndStagesThatWaitRunInOneChain) {
  std::vector<std::string> log;
  Checking a("a", log);
  Recording b("b", log);
  Checking c("c", log);
  run_chain({&a, &b, &c});
  EXPECT_EQ(log, (std::vector<std::string>{"check a", "run b", "check c", "finish c", "finish b",
                                           "finish a"}));
}

TEST(Pipeline, AWaitingStageThatNeedNotWaitDecidesAtOnceAndIsStillFinished) {
  std::vector<std::string> log;
  Recording a("a", log, Verdict::next, /*at_once=*/true);
  Recording b("b", log);
  run_chain({&a, &b});
  EXPECT_EQ(log, (std::vector<std::string>{"check a", "run b", "finish b", "finish a"}));
}

TEST(Pipeline, AnErrorAStageDecidesIsTheAnswerAndTheRestNeverRun) {
  std::vector<std::string> log;
  Recording a("a", log);
  Checking b("b", log, /*refuses=*/true);
  Recording c("c", log);
  const FakeExchange answered = run_chain({&a, &b, &c});
  EXPECT_EQ(log, (std::vector<std::string>{"run a", "check b", "finish b", "finish a"}));
  EXPECT_EQ(answered.status, 400);
  EXPECT_NE(answered.body.find("refused by b"), std::string::npos) << answered.body;
}

}  // namespace
}  // namespace switchyard::gateway
