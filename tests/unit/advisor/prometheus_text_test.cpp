#include "advisor/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace switchyard::advisor {
namespace {

TEST(PrometheusText, ParsesNamesLabelsValuesAndTypes) {
  const char* text =
      "# HELP vllm:num_requests_waiting Number of requests waiting.\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen3.8-27B\"} 5.0\n"
      "vllm:num_requests_waiting{engine=\"1\",model_name=\"Qwen3.8-27B\",} 2\n"
      "odd{path=\"C:\\\\dir\",say=\"\\\"hi\\\"\",nl=\"a\\nb\"} -3.5e2 1712345678000\n"
      "nan_metric NaN\n"
      "\n"
      "inf_metric +Inf\r\n";
  auto m = MetricsText::parse(text);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->samples().size(), 5u);
  EXPECT_EQ(m->sum("vllm:num_requests_waiting"), 7.0);
  EXPECT_EQ(m->max("vllm:num_requests_waiting"), 5.0);
  EXPECT_EQ(m->type("vllm:num_requests_waiting"), "gauge");
  EXPECT_FALSE(m->type("missing"));
  EXPECT_FALSE(m->sum("missing"));

  const Sample* odd = m->first("odd");
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->value, -350.0);
  EXPECT_EQ(*odd->label("path"), "C:\\dir");
  EXPECT_EQ(*odd->label("say"), "\"hi\"");
  EXPECT_EQ(*odd->label("nl"), "a\nb");
  EXPECT_TRUE(std::isnan(m->first("nan_metric")->value));
  EXPECT_TRUE(std::isinf(m->first("inf_metric")->value));
  EXPECT_TRUE(m->has_prefix("vllm:"));
  EXPECT_FALSE(m->has_prefix("llamacpp:"));
}

TEST(PrometheusText, MalformedLinesAreErrorsThatNameTheLine) {
  auto bad_value = MetricsText::parse("ok 1\nbroken abc\n");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.error().message, "line 2: bad value for broken");
  auto open_labels = MetricsText::parse("# c\nx{a=\"1\" 2\n");
  ASSERT_FALSE(open_labels.ok());
  EXPECT_NE(open_labels.error().message.find("line 2"), std::string::npos);
  auto no_name = MetricsText::parse("{a=\"1\"} 2\n");
  ASSERT_FALSE(no_name.ok());
}

TEST(PrometheusText, ReassemblesHistogramsAcrossLabelSets) {
  const char* text =
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"a\"} 2\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"1.0\",model_name=\"a\"} 6\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 8\n"
      "vllm:time_to_first_token_seconds_sum{model_name=\"a\"} 9.0\n"
      "vllm:time_to_first_token_seconds_count{model_name=\"a\"} 8\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"b\"} 0\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"1.0\",model_name=\"b\"} 2\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"b\"} 2\n"
      "vllm:time_to_first_token_seconds_sum{model_name=\"b\"} 1.0\n"
      "vllm:time_to_first_token_seconds_count{model_name=\"b\"} 2\n";
  auto m = MetricsText::parse(text);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->type("vllm:time_to_first_token_seconds"), "histogram");
  auto h = m->histogram("vllm:time_to_first_token_seconds");
  ASSERT_TRUE(h);
  ASSERT_EQ(h->buckets.size(), 3u);
  EXPECT_EQ(h->buckets[0], (std::pair<double, double>{0.1, 2}));
  EXPECT_EQ(h->buckets[1], (std::pair<double, double>{1.0, 8}));
  EXPECT_TRUE(std::isinf(h->buckets[2].first));
  EXPECT_EQ(h->count, 10);
  EXPECT_EQ(h->mean(), 1.0);
  // 5th of 10 observations: 3rd of the 6 between 0.1 and 1.0.
  EXPECT_NEAR(*h->quantile(0.5), 0.1 + 0.9 * 3.0 / 6.0, 1e-9);
  // The 95th percentile lands in +Inf: the largest finite bound.
  EXPECT_EQ(h->quantile(0.95), 1.0);
  EXPECT_FALSE(m->histogram("absent"));
}

TEST(PrometheusText, HistogramDeltaIsWhatHappenedBetweenScrapes) {
  Histogram earlier{{{0.5, 1}, {1.0, 2}}, 1.5, 2};
  Histogram later{{{0.5, 1}, {1.0, 6}}, 5.5, 6};
  Histogram d = histogram_delta(later, earlier);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.sum, 4.0);
  EXPECT_EQ(d.buckets[0].second, 0);
  EXPECT_EQ(d.buckets[1].second, 4);
  EXPECT_EQ(d.mean(), 1.0);
  EXPECT_NEAR(*d.quantile(0.5), 0.75, 1e-9);
  EXPECT_FALSE(Histogram{}.quantile(0.5));
}

TEST(PrometheusText, ParsesARealLlamaServerScrape) {
  std::ifstream in(std::string(SWITCHYARD_SHARED_DIR) + "/reference/llamacpp/metrics.body");
  ASSERT_TRUE(in) << "reference capture missing";
  std::stringstream text;
  text << in.rdbuf();
  auto m = MetricsText::parse(text.str());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->sum("llamacpp:tokens_predicted_total"), 344.0);
  EXPECT_EQ(m->sum("llamacpp:predicted_tokens_seconds"), 2308.72);
  EXPECT_EQ(m->type("llamacpp:requests_processing"), "gauge");
  EXPECT_EQ(m->type("llamacpp:prompt_tokens_total"), "counter");
  EXPECT_TRUE(m->has_prefix("llamacpp:"));
}

}  // namespace
}  // namespace switchyard::advisor
