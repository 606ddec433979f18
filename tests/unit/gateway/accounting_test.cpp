#include "gateway/accounting.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <regex>
#include <sstream>

#include "fake_exchange.h"
#include "gateway/routes.h"

namespace switchyard::gateway {
namespace {

// The access line each request leaves in the log, captured from spdlog's
// default logger: operators and bench/fairness.sh read its fields by name.
class AccessLine : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("access", sink));
  }
  void TearDown() override { spdlog::set_default_logger(previous_); }

  RequestContext& start(std::string method, std::string target, std::string id) {
    request_.head.method = std::move(method);
    request_.head.target = std::move(target);
    auto& ctx = ctx_.emplace(request_, exchange_, *find_route("/v1/chat/completions"));
    ctx.record.id = std::move(id);
    return ctx;
  }

  std::string finish() {
    accounting_.finish(*ctx_);
    return out_.str();
  }

 private:
  obs::GatewayMetrics metrics_;
  Accounting accounting_{metrics_, false, nullptr};
  http::Request request_;
  testing_support::FakeExchange exchange_;
  std::optional<RequestContext> ctx_;
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(AccessLine, NamesEveryFieldOfAnAnsweredRequest) {
  auto& r = start("POST", "/v1/chat/completions", "req-1").record;
  r.model = "qwen";
  r.instance = "gpu0";
  r.status = 200;
  r.bytes_in = 230;
  r.bytes_out = 18446744073709551615u;
  r.ttfb = 0.01234;
  r.start = std::chrono::steady_clock::now() - std::chrono::milliseconds(2000);
  const std::string line = finish();
  const std::regex shape(
      R"(access id=req-1 POST /v1/chat/completions model=qwen instance=gpu0 status=200 )"
      R"(in=230B out=18446744073709551615B ttfb_ms=12\.3 ms=2\d{3}\.\d\n)");
  EXPECT_TRUE(std::regex_match(line, shape)) << line;
}

TEST_F(AccessLine, AddsWhatOnlySomeRequestsHave) {
  auto& ctx = start("GET", "/v1/models?api_key=secret", "req-2");
  auto& r = ctx.record;
  r.client_gone = true;
  r.queued = 0.5;
  r.usage = openai::Usage{31, 24, 0};
  r.failed_on = {"gpu0", "gpu1"};
  ctx.key_name = "alice";
  const std::string line = finish();
  // No model or instance yet, no first byte; the query's value left out.
  EXPECT_NE(line.find("access id=req-2 GET /v1/models?api_key=* model=- instance=- status=499 "
                      "in=0B out=0B ttfb_ms=0.0 ms="),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(" client_closed key=alice queued_ms=500.0 tokens=31+24 "
                      "failed_on=gpu0,gpu1\n"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace switchyard::gateway
