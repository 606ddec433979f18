#include "obs/engine_metrics.h"

#include <gtest/gtest.h>

namespace switchyard::obs {
namespace {

constexpr const char* kLlama =
    "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
    "# TYPE llamacpp:prompt_tokens_total counter\n"
    "llamacpp:prompt_tokens_total 151\n"
    "# HELP llamacpp:requests_processing Number of requests processing.\n"
    "# TYPE llamacpp:requests_processing gauge\n"
    "llamacpp:requests_processing 1\n";

constexpr const char* kVllm =
    "# HELP python_gc_objects_collected_total Objects collected during gc\n"
    "# TYPE python_gc_objects_collected_total counter\n"
    "python_gc_objects_collected_total{generation=\"0\"} 7.0\n"
    "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"q\"} 3.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"q\"} 4.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"q\"} 4.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"q\"} 2.5 1700000000000\n"
    "vllm:cache_config_info{block_size=\"16\",note=\"a}b, \\\"c\\\"\"} 1.0\n";

TEST(RelabelEngineMetrics, AddsTheInstanceLabelAndMergesFamiliesAcrossInstances) {
  const std::string out = relabel_engine_metrics({{"gpu0", kLlama}, {"gpu1", kLlama}});
  EXPECT_EQ(out,
            "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
            "# TYPE llamacpp:prompt_tokens_total counter\n"
            "llamacpp:prompt_tokens_total{switchyard_instance=\"gpu0\"} 151\n"
            "llamacpp:prompt_tokens_total{switchyard_instance=\"gpu1\"} 151\n"
            "# HELP llamacpp:requests_processing Number of requests processing.\n"
            "# TYPE llamacpp:requests_processing gauge\n"
            "llamacpp:requests_processing{switchyard_instance=\"gpu0\"} 1\n"
            "llamacpp:requests_processing{switchyard_instance=\"gpu1\"} 1\n");
}

TEST(RelabelEngineMetrics, KeepsHistogramsWholeLabelsAsTheyAreAndDropsOtherFamilies) {
  const std::string out = relabel_engine_metrics({{"tp2", kVllm}});
  EXPECT_EQ(
      out,
      "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{switchyard_instance=\"tp2\",engine=\"0\",le=\"0.5\","
      "model_name=\"q\"} 3.0\n"
      "vllm:time_to_first_token_seconds_bucket{switchyard_instance=\"tp2\",engine=\"0\",le=\"+"
      "Inf\","
      "model_name=\"q\"} 4.0\n"
      "vllm:time_to_first_token_seconds_count{switchyard_instance=\"tp2\",engine=\"0\",model_name="
      "\"q\"} 4.0\n"
      "vllm:time_to_first_token_seconds_sum{switchyard_instance=\"tp2\",engine=\"0\",model_name="
      "\"q\"} 2.5\n"
      "vllm:cache_config_info{switchyard_instance=\"tp2\",block_size=\"16\",note=\"a}b, "
      "\\\"c\\\"\"} 1.0\n");
}

TEST(RelabelEngineMetrics, EscapesTheInstanceNameAndSkipsMalformedLines) {
  const std::string out = relabel_engine_metrics(
      {{"a\"b\\c", "llamacpp:x{unclosed=\"1\" 2\nllamacpp:y\nllamacpp:z 3\r\n\n"}});
  EXPECT_EQ(out, "llamacpp:z{switchyard_instance=\"a\\\"b\\\\c\"} 3\n");
  EXPECT_EQ(relabel_engine_metrics({}), "");
  EXPECT_EQ(relabel_engine_metrics({{"gpu0", "# TYPE llamacpp:q gauge\n"}}), "");
}

}  // namespace
}  // namespace switchyard::obs
