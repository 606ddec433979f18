// The KV pool read from vLLM's /metrics bounds the instance's prefix index.
#include <gtest/gtest.h>

#include <string>

#include "gateway/router.h"
#include "gateway/routing/block_hash.h"
#include "gateway/routing/engine_kv.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

TEST(RoutingEngineKv, VllmsPoolFromCacheConfigInfo) {
  const std::string text =
      "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
      "# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\","
      "num_gpu_blocks=\"64\"} 1.0\n"
      "vllm:num_requests_running{model_name=\"m\"} 0.0\n";
  EXPECT_EQ(vllm_kv_pool_tokens(text), 1024);
  EXPECT_FALSE(vllm_kv_pool_tokens("llamacpp:prompt_tokens_total 5\n"));
  EXPECT_FALSE(vllm_kv_pool_tokens("vllm:cache_config_info{block_size=\"16\"} 1.0\n"));
  EXPECT_FALSE(
      vllm_kv_pool_tokens("vllm:cache_config_info{num_gpu_blocks=\"x\",block_size=\"16\"} 1\n"));
}

TEST(RoutingEngineKv, TheReportedPoolBoundsThePrefixIndex) {
  InstanceTable table;
  testing_support::add_instance(table, "m", 4);
  Router r(table, make_routing_policy(config::RoutingPolicy::prefix_affinity));
  r.set_kv_tokens(0, 30 * kBlockTokens);  // 30 blocks, not the default 4096
  const std::string a(20 * kBlockBytes, 'a'), b(20 * kBlockBytes, 'b');
  const auto q = [](const std::string& p) { return RouteQuery{"m", nullptr, {}, {}, {}, p}; };
  r.acquire(q(a));
  r.acquire(q(b));  // 40 blocks sent: a's tail is forgotten
  const auto again = r.acquire(q(a));
  ASSERT_TRUE(again);
  EXPECT_NEAR(again->decision().match, 10.0 / 20.0, 1e-9);
}

TEST(RoutingEngineKv, APoolReportedAfterTheFirstRequestsBoundsTheIndexFromTheNextOn) {
  InstanceTable table;
  testing_support::add_instance(table, "m", 4);
  Router r(table, make_routing_policy(config::RoutingPolicy::prefix_affinity));
  const std::string a(20 * kBlockBytes, 'a'), b(20 * kBlockBytes, 'b');
  const auto q = [](const std::string& p) { return RouteQuery{"m", nullptr, {}, {}, {}, p}; };
  r.acquire(q(a));  // sized by the default: 4096 blocks
  r.set_kv_tokens(0, 30 * kBlockTokens);
  r.acquire(q(b));
  const auto again = r.acquire(q(a));
  ASSERT_TRUE(again);
  EXPECT_NEAR(again->decision().match, 10.0 / 20.0, 1e-9);
}

}  // namespace
}  // namespace switchyard::gateway
