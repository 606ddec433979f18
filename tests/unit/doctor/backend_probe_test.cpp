#include "doctor/backend_probe.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_fetch.h"

namespace switchyard::doctor {
namespace {

using namespace std::chrono_literals;

const char* llama_before =
    "llamacpp:tokens_predicted_total 1000\nllamacpp:predicted_tokens_seconds 600\n"
    "llamacpp:requests_processing 2\nllamacpp:requests_deferred 0\n";
const char* llama_after =
    "llamacpp:tokens_predicted_total 1001\nllamacpp:predicted_tokens_seconds 600\n"
    "llamacpp:requests_processing 2\nllamacpp:requests_deferred 0\n";

TEST(BackendProbe, ScrapesTwiceAnIntervalApartAndAnalyses) {
  fixture::FakeFetch fake;
  const std::string url = "http://127.0.0.1:8080";
  fake.answer(url + "/metrics", 200, llama_before);
  fake.answer(url + "/metrics", 200, llama_after);
  fake.answer(url + "/props", 200,
              R"({"default_generation_settings":{"n_ctx":1024},"total_slots":2})");
  fake.answer(url + "/slots", 200,
              R"([{"id":0,"is_processing":true,"next_token":[{"n_decoded":40}]}])");

  ProbeOptions options;
  options.interval = 20ms;
  const auto reports = probe_backends({url}, fake.fetcher(), options);
  ASSERT_EQ(reports.size(), 1u);
  const BackendReport& r = reports[0];
  EXPECT_TRUE(r.reachable);
  EXPECT_EQ(r.engine, Engine::llama_cpp);
  EXPECT_GE(r.window_seconds, 0.02);
  EXPECT_LT(r.window_seconds, 5.0);
  // One token over the window (>= 20 ms) is at most 50 tok/s by the wall clock,
  // far below the claimed 600: the over-report is flagged, which shows the
  // window and the two scrapes reached the analysis.
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].check, "backend.self_report");

  const auto& asked = fake.requests();
  EXPECT_EQ(std::count(asked.begin(), asked.end(), url + "/metrics"), 2);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), url + "/props"), 2);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), url + "/slots"), 2);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), url + "/v1/models"), 1);
}

TEST(BackendProbe, AnUnreachableBackendIsAWarningAndDoesNotStopTheOthers) {
  fixture::FakeFetch fake;
  fake.refuse("http://127.0.0.1:9");
  fake.answer("http://127.0.0.1:8080/metrics", 200, llama_before);
  ProbeOptions options;
  options.interval = 0ms;
  const auto reports =
      probe_backends({"http://127.0.0.1:9", "http://127.0.0.1:8080"}, fake.fetcher(), options);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_FALSE(reports[0].reachable);
  ASSERT_EQ(reports[0].findings.size(), 1u);
  EXPECT_EQ(reports[0].findings[0].check, "backend.unreachable");
  EXPECT_EQ(reports[0].findings[0].severity, Severity::warning);
  EXPECT_NE(reports[0].findings[0].message.find("Connection refused"), std::string::npos);
  EXPECT_TRUE(reports[1].reachable);
  EXPECT_EQ(reports[1].engine, Engine::llama_cpp);
}

TEST(BackendProbe, MetricsDisabledIsNamed) {
  fixture::FakeFetch fake;
  fake.answer("http://127.0.0.1:8080/metrics", 501, R"({"error":{"code":501}})");
  fake.answer("http://127.0.0.1:8080/props", 200, "{}");
  ProbeOptions options;
  options.interval = 0ms;
  const auto reports = probe_backends({"http://127.0.0.1:8080"}, fake.fetcher(), options);
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_EQ(reports[0].findings.size(), 1u);
  EXPECT_EQ(reports[0].findings[0].check, "backend.metrics");
  EXPECT_EQ(reports[0].engine, Engine::llama_cpp);
}

}  // namespace
}  // namespace switchyard::doctor
