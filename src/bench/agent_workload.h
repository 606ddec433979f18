// `--workload agent`: S sessions, each a multi-turn chat that re-sends its
// whole growing conversation every turn (a system prompt, then user and
// assistant messages), with a think time between turns. The conversation's
// bytes never change once sent (the assistant's answers are re-sent exactly
// as streamed), so each session's prefix is stable: what a prefix cache, and
// a router that keeps a session on one engine, can exploit.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/load_generator.h"
#include "bench/request_record.h"
#include "bench/run_report.h"
#include "common/result.h"

namespace switchyard::bench {

struct AgentOptions {
  int sessions = 4;
  int turns = 5;
  long start_context = 8192;  // tokens of the first prompt (system + first user message)
  long growth_min = 1024;     // tokens a turn adds: the last answer plus a new user message
  long growth_max = 2048;
  double think_s = 2;  // pause after an answer before the session's next turn
  long output_len = 256;
  std::uint64_t seed = 0;
};

// "1024-2048" → {1024, 2048}; "1536" → {1536, 1536}.
Result<std::pair<long, long>> parse_token_range(std::string_view text);

// "2s", "500ms", "1.5" (seconds), "0" → seconds.
Result<double> parse_seconds(std::string_view text);

// How large each piece of one session is, in tokens of text (the chat
// template's `message_overhead` tokens per message come on top).
struct SessionSizes {
  long system_tokens = 0;
  std::vector<long> user_tokens;  // per turn
};

// Turn 1: a system prompt and a first user message that together make about
// `start_context`; every later turn adds a growth drawn from [min, max]
// (seeded by the session): the previous answer (`output_len`) plus a user
// message of the rest.
SessionSizes session_sizes(const AgentOptions& o, int session, long message_overhead);

// Text of about `tokens` tokens (the caller sizes it with /tokenize).
using MakeText = std::function<Result<std::string>(std::mt19937_64& rng, long tokens)>;

struct SessionScript {
  std::string system;
  std::vector<std::string> users;  // the user message of each turn
};

// The texts of one session (session is 1-based), a function of the seed.
Result<SessionScript> build_script(const AgentOptions& o, int session, long message_overhead,
                                   const MakeText& make);

// A session's messages so far; each turn appends, nothing is ever rewritten.
class Conversation {
 public:
  explicit Conversation(const std::string& system);
  void add_user(const std::string& text);
  void add_assistant(const std::string& text);
  const boost::json::array& messages() const { return messages_; }

 private:
  boost::json::array messages_;
};

// The streamed chat request of one turn: forced output length, usage asked for.
std::string agent_body(const std::string& model, long output_len,
                       const boost::json::array& messages);

struct AgentOutcome {
  std::vector<RequestRecord> records;  // session and turn set; start_s from the run's start
  double wall_s = 0;                   // first send → last response end
  bool interrupted = false;
};

// Runs every session to its last turn (a session whose turn fails stops
// there). Session s starts s-1 think-time/S after the first, spreading them.
boost::asio::awaitable<AgentOutcome> run_agent(LoadGenerator& generator,
                                               boost::asio::any_io_executor executor,
                                               const AgentOptions& o, const std::string& model,
                                               const std::vector<SessionScript>& scripts);

// Per turn index, over every session: TTFT, prompt and cached tokens, the
// cached share of the prompt, tokens/wall. Interrupted requests are left out.
std::vector<TurnReport> summarize_turns(const std::vector<RequestRecord>& records);

}  // namespace switchyard::bench
