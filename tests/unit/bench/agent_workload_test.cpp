#include "bench/agent_workload.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <sstream>

#include "bench/prompt_builder.h"
#include "bench/report_json.h"
#include "bench/report_table.h"

namespace switchyard::bench {
namespace {

TEST(AgentWorkload, ParsesRangesAndDurations) {
  EXPECT_EQ(*parse_token_range("1024-2048"), (std::pair<long, long>{1024, 2048}));
  EXPECT_EQ(*parse_token_range("1536"), (std::pair<long, long>{1536, 1536}));
  EXPECT_FALSE(parse_token_range("2048-1024"));
  EXPECT_FALSE(parse_token_range("a-b"));
  EXPECT_FALSE(parse_token_range("0"));
  EXPECT_DOUBLE_EQ(*parse_seconds("2s"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_seconds("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_seconds("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_seconds("0"), 0.0);
  EXPECT_FALSE(parse_seconds("soon"));
  EXPECT_FALSE(parse_seconds("-1s"));
}

TEST(AgentWorkload, SessionSizesStartAtTheContextAndGrowWithinTheRange) {
  AgentOptions o;
  o.turns = 6;
  o.start_context = 8192;
  o.growth_min = 1024;
  o.growth_max = 2048;
  o.output_len = 256;
  const long overhead = 5;
  const auto s = session_sizes(o, 1, overhead);
  ASSERT_EQ(s.user_tokens.size(), 6u);
  EXPECT_EQ(s.system_tokens + s.user_tokens[0] + 2 * overhead, 8192);
  for (std::size_t t = 1; t < s.user_tokens.size(); ++t) {
    const long growth = s.user_tokens[t] + o.output_len + 2 * overhead;
    EXPECT_GE(growth, 1024);
    EXPECT_LE(growth, 2048);
  }
  // A function of the seed and the session.
  EXPECT_EQ(session_sizes(o, 1, overhead).user_tokens, s.user_tokens);
  EXPECT_NE(session_sizes(o, 2, overhead).user_tokens, s.user_tokens);
}

TEST(AgentWorkload, ScriptsAreReproducibleAndDistinctPerSession) {
  AgentOptions o;
  o.turns = 3;
  o.start_context = 512;
  o.growth_min = 100;
  o.growth_max = 200;
  o.output_len = 32;
  const MakeText make = [](std::mt19937_64& rng, long tokens) -> Result<std::string> {
    return random_words(rng, tokens);
  };
  auto a = build_script(o, 1, 0, make);
  auto again = build_script(o, 1, 0, make);
  auto b = build_script(o, 2, 0, make);
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(a->system, again->system);
  EXPECT_EQ(a->users, again->users);
  EXPECT_NE(a->system, b->system);  // no shared prefix between sessions
  ASSERT_EQ(a->users.size(), 3u);
}

TEST(AgentWorkload, EachTurnsBodyExtendsTheLastOnesMessagesByteForByte) {
  Conversation c("You are a coding agent.");
  c.add_user("Read main.cpp.");
  const std::string first = boost::json::serialize(c.messages());
  const std::string body1 = agent_body("m", 16, c.messages());
  c.add_assistant(" Here it is: \"int main() {}\"\n");
  c.add_user("Now fix it.");
  const std::string second = boost::json::serialize(c.messages());
  // The earlier messages are re-sent unchanged: the array's text minus its
  // closing bracket is a prefix of the next turn's.
  EXPECT_EQ(second.substr(0, first.size() - 1), first.substr(0, first.size() - 1));
  auto v = boost::json::parse(body1).as_object();
  EXPECT_EQ(v["max_tokens"].as_int64(), 16);
  EXPECT_TRUE(v["ignore_eos"].as_bool());
  EXPECT_TRUE(v["stream"].as_bool());
  EXPECT_EQ(v["messages"].as_array().size(), 2u);
}

RequestRecord turn_record(int session, int turn, long prompt, long cached, double ttft) {
  RequestRecord r;
  r.session = session;
  r.turn = turn;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = 10;
  r.ttft_ms = ttft;
  r.e2e_ms = ttft + 100;
  r.start_s = turn;
  r.finish_reason = "length";
  return r;
}

TEST(AgentWorkload, SummarizesPerTurnAcrossSessions) {
  std::vector<RequestRecord> records{
      turn_record(1, 1, 1000, 0, 100),   turn_record(2, 1, 1000, 0, 300),
      turn_record(1, 2, 2000, 1010, 20), turn_record(2, 2, 2000, 1010, 40),
      turn_record(1, 3, 3000, 2020, 30),
  };
  records.push_back(turn_record(2, 3, 3000, -1, 50));
  records.back().error = "http_500";
  auto interrupted = turn_record(3, 3, 3000, 0, 1);
  interrupted.error = "interrupted";
  records.push_back(interrupted);
  const auto turns = summarize_turns(records);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0].turn, 1);
  EXPECT_EQ(turns[0].requests, 2);
  EXPECT_DOUBLE_EQ(*turns[0].cached_ratio, 0.0);
  EXPECT_DOUBLE_EQ(turns[0].ttft_ms.p50, 200);
  EXPECT_DOUBLE_EQ(turns[0].ttft_ms.mean, 200);
  EXPECT_DOUBLE_EQ(*turns[1].cached_ratio, 2020.0 / 4000.0);
  EXPECT_DOUBLE_EQ(turns[1].cached_tokens.mean, 1010);
  EXPECT_EQ(turns[2].requests, 2);  // the interrupted one is left out
  EXPECT_EQ(turns[2].succeeded, 1);
  EXPECT_EQ(turns[2].errors.at("http_500"), 1);
  EXPECT_DOUBLE_EQ(*turns[2].cached_ratio, 2020.0 / 3000.0);

  // No cache figures at all: no ratio.
  const auto none = summarize_turns({turn_record(1, 1, 1000, -1, 10)});
  EXPECT_FALSE(none[0].cached_ratio);
}

TEST(AgentWorkload, JsonAndTableCarryTheTurns) {
  RunReport run;
  run.endpoint = "http://x";
  run.model = "m";
  run.method.workload = "agent";
  run.method.sessions = 2;
  run.method.turns = 2;
  std::vector<RequestRecord> records{turn_record(1, 1, 1000, 0, 100),
                                     turn_record(1, 2, 2000, 1500, 50)};
  run.turns = summarize_turns(records);
  run.requests = records;
  auto doc = boost::json::parse(run_to_json(run)).as_object();
  ASSERT_TRUE(doc.contains("turns"));
  const auto& turns = doc["turns"].as_array();
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_DOUBLE_EQ(turns[1].as_object().at("cached_ratio").as_double(), 0.75);
  EXPECT_EQ(doc["method"].as_object()["workload"].as_string(), "agent");
  EXPECT_EQ(doc["requests"].as_array()[1].as_object().at("turn").as_int64(), 2);
  const std::string table = format_table(run);
  EXPECT_NE(table.find("agent: 2 sessions x 2 turns"), std::string::npos);
  EXPECT_NE(table.find("cached %"), std::string::npos);
  EXPECT_NE(table.find("75.0"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::bench
