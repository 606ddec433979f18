#include "bench/endpoint_probe.h"

#include <gtest/gtest.h>

namespace switchyard::bench {
namespace {

http::FetchResponse ok(std::string body,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
  http::FetchResponse r;
  r.status = 200;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// llama-server without --alias: its file path as the id (and again in models[]).
constexpr const char* kLlamaServer =
    R"({"models":[{"name":"/m/Qwen3-8B-Q4_K_M.gguf","model":"/m/Qwen3-8B-Q4_K_M.gguf"}],)"
    R"("object":"list","data":[{"id":"/m/Qwen3-8B-Q4_K_M.gguf","object":"model",)"
    R"("owned_by":"llamacpp","meta":{"n_vocab":151936,"ftype":"Q4_K_M"}}]})";

constexpr const char* kTwoModels =
    R"({"data":[{"id":"qwen","aliases":["default"]},{"id":"llama"}]})";

TEST(EndpointProbe, ModelMayBeOmittedWhenTheEndpointServesOne) {
  auto info = describe_endpoint("http://e", ok(kLlamaServer), nullptr, "");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->model, "/m/Qwen3-8B-Q4_K_M.gguf");
  EXPECT_EQ(info->model_note, "");
  EXPECT_EQ(info->n_vocab, 151936);
  EXPECT_FALSE(info->simulated);
}

TEST(EndpointProbe, AnAliasMeansTheOneModelServed) {
  auto info = describe_endpoint("http://e", ok(kLlamaServer), nullptr, "qwen3-8b");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->model, "/m/Qwen3-8B-Q4_K_M.gguf");
  EXPECT_NE(info->model_note.find("'qwen3-8b' is not among"), std::string::npos)
      << info->model_note;
  EXPECT_EQ(info->n_vocab, 151936);
}

TEST(EndpointProbe, SeveralModelsNeedANameTheyList) {
  auto missing = describe_endpoint("http://gw", ok(kTwoModels), nullptr, "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "--model: required, http://gw serves qwen, default, llama");
  auto unknown = describe_endpoint("http://gw", ok(kTwoModels), nullptr, "mistral");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown model 'mistral'"), std::string::npos);
  auto alias = describe_endpoint("http://gw", ok(kTwoModels), nullptr, "default");
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->model, "default");
  EXPECT_EQ(alias->model_note, "");
}

// A gateway's list: the model, then each alias as an entry of its own.
TEST(EndpointProbe, AGatewaysAliasEntriesAreTheSameModel) {
  auto info = describe_endpoint(
      "http://gw",
      ok(R"({"data":[{"id":"qwen-27b","aliases":["default"]},{"id":"default","alias_of":"qwen-27b"}]})"),
      nullptr, "");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->model, "qwen-27b");
}

TEST(EndpointProbe, NoListTakesTheGivenNameAndNeedsOne) {
  http::FetchResponse none;
  none.status = 404;
  auto given = describe_endpoint("http://e", none, nullptr, "x");
  ASSERT_TRUE(given);
  EXPECT_EQ(given->model, "x");
  EXPECT_FALSE(describe_endpoint("http://e", none, nullptr, ""));
}

TEST(EndpointProbe, TheSimulatorHeaderMarksTheEndpointSimulated) {
  const auto plain = ok(R"({"data":[{"id":"m"}]})");
  auto real = describe_endpoint("http://e", plain, nullptr, "m");
  ASSERT_TRUE(real);
  EXPECT_FALSE(real->simulated);
  auto sim = describe_endpoint("http://e",
                               ok(R"({"data":[{"id":"m"}]})", {{"x-simulated", "switchyard-sim"}}),
                               nullptr, "m");
  ASSERT_TRUE(sim);
  EXPECT_TRUE(sim->simulated);
  // Behind a gateway /v1/models is the gateway's own; /props is relayed.
  const auto props = ok("{}", {{"X-Simulated", "switchyard-sim"}});
  auto relayed = describe_endpoint("http://gw", plain, &props, "m");
  ASSERT_TRUE(relayed);
  EXPECT_TRUE(relayed->simulated);
  EXPECT_TRUE(is_simulator_header("switchyard-sim"));
  EXPECT_FALSE(is_simulator_header("no"));
}

TEST(EndpointProbe, RequestFlagsNameWhatIsWrong) {
  EXPECT_TRUE(check_request_flags({"X-Session-Id: a", "Empty:"}, ""));
  EXPECT_TRUE(check_request_flags({}, "http://127.0.0.1:8080/tokenize"));
  EXPECT_EQ(check_request_flags({"X-Session-Id a"}, "").error().message,
            "--header: 'X-Session-Id a' is not 'Name: value'");
  EXPECT_FALSE(check_request_flags({": a"}, ""));
  const auto bad_url = check_request_flags({}, "127.0.0.1:8080/tokenize");
  ASSERT_FALSE(bad_url);
  EXPECT_EQ(bad_url.error().message.rfind("--tokenize-url: ", 0), 0u) << bad_url.error().message;
}

}  // namespace
}  // namespace switchyard::bench
