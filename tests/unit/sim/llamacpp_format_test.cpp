// llama-server's native routes the sim answers without the engine: /rerank's
// shape and order, /infill's prompt.
#include "sim/llamacpp_format.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace switchyard::sim {
namespace {

namespace json = boost::json;

json::value reply_body(const http::Response& r) {
  return json::parse(r.body);
}

TEST(Rerank, ListsResultsBestFirstWithLlamaServersKeys) {
  Tokenizer tok;
  const auto r = llamacpp::rerank(
      json::parse(R"({"query":" upon time","documents":[" the end"," upon a time"," a time"],)"
                  R"("top_n":2})")
          .as_object(),
      tok, "served");
  ASSERT_EQ(r.status, 200);
  const auto body = reply_body(r).as_object();
  std::vector<std::string> keys;
  for (const auto& kv : body) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"model", "object", "usage", "results"}));
  EXPECT_EQ(body.at("model").as_string(), "served");
  EXPECT_EQ(json::serialize(body.at("results")),
            R"([{"index":1,"relevance_score":1E0},{"index":2,"relevance_score":5E-1}])");
  EXPECT_GT(body.at("usage").at("prompt_tokens").as_int64(), 0);
}

TEST(Rerank, TeiTextsGiveABareArrayAndTheRequestsModelIsEchoed) {
  Tokenizer tok;
  const auto tei = llamacpp::rerank(
      json::parse(R"({"query":" time","texts":[" time"," the"],"return_text":true})").as_object(),
      tok, "m");
  EXPECT_EQ(json::serialize(reply_body(tei)),
            R"([{"index":0,"score":1E0,"text":" time"},{"index":1,"score":0E0,"text":" the"}])");
  const auto named = llamacpp::rerank(
      json::parse(R"({"model":"asked","query":"x","documents":["x"]})").as_object(), tok, "m");
  EXPECT_EQ(reply_body(named).at("model").as_string(), "asked");
}

TEST(Rerank, BadRequestsAre400InLlamaServersErrorShape) {
  Tokenizer tok;
  for (const char* bad : {R"({"documents":["a"]})", R"({"query":1,"documents":["a"]})",
                          R"({"query":"q","documents":[]})", R"({"query":"q","documents":[1]})"}) {
    const auto r = llamacpp::rerank(json::parse(bad).as_object(), tok, "m");
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(reply_body(r).at("error").at("type").as_string(), "invalid_request_error") << bad;
  }
}

TEST(Infill, PrefixSuffixAndPromptAroundTheFimTokens) {
  auto p = llamacpp::infill_prompt(
      json::parse(R"({"input_prefix":"def f(","input_suffix":"):","prompt":"x"})").as_object());
  ASSERT_TRUE(std::holds_alternative<std::string>(p));
  EXPECT_EQ(std::get<std::string>(p), "<|fim_prefix|>def f(<|fim_suffix|>):<|fim_middle|>x");
  auto missing = llamacpp::infill_prompt(json::parse(R"({"input_prefix":"a"})").as_object());
  ASSERT_TRUE(std::holds_alternative<RequestError>(missing));
  EXPECT_EQ(std::get<RequestError>(missing).message, "\"input_suffix\" is required");
}

TEST(LlamacppReplies, EveryReplySaysItIsSimulated) {
  EXPECT_EQ(llamacpp::json_reply(200, json::object{}).headers.find("x-simulated").value_or(""),
            "switchyard-sim");
  EXPECT_EQ(llamacpp::error_reply(400, "x", "invalid_request_error")
                .headers.find("x-simulated")
                .value_or(""),
            "switchyard-sim");
  // Keep-Alive is the server's to add (it knows the connection's count).
  EXPECT_FALSE(llamacpp::json_reply(200, json::object{}).headers.find("keep-alive"));
}

}  // namespace
}  // namespace switchyard::sim
