#include "bench/agent_workload.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <exception>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/prompt_builder.h"
#include "http/use_tuple.h"

namespace switchyard::bench {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

// Smallest user message: a turn always says something.
constexpr long kMinUserTokens = 16;

std::optional<double> parse_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(std::string(text), &used);
    if (used != text.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<long> parse_long(std::string_view text) {
  long v = 0;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Waits `seconds`, in slices, returning early once the generator stops
// (Ctrl-C) so a thinking session does not hold the run up.
awaitable<void> think(asio::steady_timer& timer, const LoadGenerator& generator, double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
  while (!generator.stopped() && Clock::now() < until) {
    const auto slice = std::min(until, Clock::now() + std::chrono::milliseconds(100));
    timer.expires_at(slice);
    co_await timer.async_wait(http::use_tuple);
  }
}

awaitable<void> agent_session(LoadGenerator& generator, asio::any_io_executor executor,
                              const AgentOptions& o, const std::string& model,
                              const SessionScript& script, int session, Clock::time_point t0,
                              std::vector<RequestRecord>& out) {
  asio::steady_timer timer(executor);
  const double stagger = o.think_s * static_cast<double>(session - 1) / o.sessions;
  if (stagger > 0) co_await think(timer, generator, stagger);
  Conversation conversation(script.system);
  for (int turn = 1; turn <= o.turns && !generator.stopped(); ++turn) {
    conversation.add_user(script.users[static_cast<std::size_t>(turn - 1)]);
    const std::string body = agent_body(model, o.output_len, conversation.messages());
    StepPlan plan;
    plan.step = 0;
    plan.concurrency = 1;
    plan.requests = 1;
    plan.forced_tokens = o.output_len;
    plan.keep_content = true;
    // Only the first prompt has an exact size; later turns grow by a drawn amount.
    plan.prompt_target = turn == 1 ? o.start_context : -1;
    plan.body = [&body](long, bool) { return body; };
    const auto sent = Clock::now();
    StepOutcome outcome = co_await generator.run_step(plan);
    if (outcome.records.empty()) break;
    RequestRecord record = std::move(outcome.records.front());
    record.session = session;
    record.turn = turn;
    record.index = static_cast<long>(session - 1) * o.turns + (turn - 1);
    record.start_s = seconds_between(t0, sent);
    std::string answer = std::move(record.content);
    record.content.clear();
    const bool ok = record.ok();
    out.push_back(std::move(record));
    if (!ok) break;  // the conversation cannot go on without its answer
    conversation.add_assistant(answer);
    if (turn < o.turns && o.think_s > 0) co_await think(timer, generator, o.think_s);
  }
}

}  // namespace

Result<std::pair<long, long>> parse_token_range(std::string_view text) {
  const auto dash = text.find('-');
  const auto low = parse_long(text.substr(0, dash));
  const auto high = dash == std::string_view::npos ? low : parse_long(text.substr(dash + 1));
  if (!low || !high || *low < 1 || *high < *low)
    return Error{fmt::format("'{}' is not a token range like 1024-2048", text)};
  return std::pair{*low, *high};
}

Result<double> parse_seconds(std::string_view text) {
  const std::string given(text);
  double scale = 1;
  if (text.ends_with("ms")) {
    scale = 0.001;
    text.remove_suffix(2);
  } else if (text.ends_with("s")) {
    text.remove_suffix(1);
  }
  const auto v = parse_number(text);
  if (!v || *v < 0) return Error{fmt::format("'{}' is not a duration like 2s or 500ms", given)};
  return *v * scale;
}

SessionSizes session_sizes(const AgentOptions& o, int session, long message_overhead) {
  SessionSizes sizes;
  const long first_user = std::clamp(o.start_context / 16, 32L, 512L);
  sizes.system_tokens =
      std::max(kMinUserTokens, o.start_context - first_user - 2 * message_overhead);
  sizes.user_tokens.push_back(first_user);
  auto rng = session_rng(o.seed, session, RngPurpose::agent_sizes);
  std::uniform_int_distribution<long> growth(o.growth_min, o.growth_max);
  for (int turn = 2; turn <= o.turns; ++turn)
    sizes.user_tokens.push_back(
        std::max(kMinUserTokens, growth(rng) - o.output_len - 2 * message_overhead));
  return sizes;
}

Result<SessionScript> build_script(const AgentOptions& o, int session, long message_overhead,
                                   const MakeText& make) {
  const SessionSizes sizes = session_sizes(o, session, message_overhead);
  auto rng = session_rng(o.seed, session, RngPurpose::agent_text);
  SessionScript script;
  auto system = make(rng, sizes.system_tokens);
  if (!system) return system.error();
  script.system = std::move(*system);
  for (long tokens : sizes.user_tokens) {
    auto user = make(rng, tokens);
    if (!user) return user.error();
    script.users.push_back(std::move(*user));
  }
  return script;
}

Conversation::Conversation(const std::string& system) {
  messages_.push_back(json::object{{"role", "system"}, {"content", system}});
}

void Conversation::add_user(const std::string& text) {
  messages_.push_back(json::object{{"role", "user"}, {"content", text}});
}

void Conversation::add_assistant(const std::string& text) {
  messages_.push_back(json::object{{"role", "assistant"}, {"content", text}});
}

std::string agent_body(const std::string& model, long output_len, const json::array& messages) {
  json::object b{{"model", model}, {"messages", messages}};
  b["max_tokens"] = output_len;
  b["min_tokens"] = output_len;  // vLLM; llama.cpp ignores it
  b["ignore_eos"] = true;
  b["stream"] = true;
  b["stream_options"] = json::object{{"include_usage", true}};
  return json::serialize(b);
}

awaitable<AgentOutcome> run_agent(LoadGenerator& generator, asio::any_io_executor executor,
                                  const AgentOptions& o, const std::string& model,
                                  const std::vector<SessionScript>& scripts) {
  AgentOutcome outcome;
  const auto t0 = Clock::now();
  int pending = 0;
  asio::steady_timer joined(executor);
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    ++pending;
    asio::co_spawn(executor,
                   agent_session(generator, executor, o, model, scripts[i], static_cast<int>(i) + 1,
                                 t0, outcome.records),
                   [&pending, &joined](std::exception_ptr e) {
                     if (e) spdlog::error("bench: an agent session failed unexpectedly");
                     if (--pending == 0) joined.cancel();
                   });
  }
  while (pending > 0) {
    joined.expires_at(Clock::time_point::max());
    co_await joined.async_wait(http::use_tuple);
  }
  double last_end = 0;
  for (const auto& r : outcome.records)
    if (r.error != "interrupted") last_end = std::max(last_end, r.start_s + r.e2e_ms / 1000.0);
  outcome.interrupted = generator.stopped();
  outcome.wall_s = outcome.interrupted ? seconds_between(t0, Clock::now()) : last_end;
  std::sort(outcome.records.begin(), outcome.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
  co_return outcome;
}

std::vector<TurnReport> summarize_turns(const std::vector<RequestRecord>& records) {
  std::map<int, std::vector<const RequestRecord*>> by_turn;
  for (const auto& r : records)
    if (r.turn >= 1 && !r.warmup && r.error != "interrupted") by_turn[r.turn].push_back(&r);
  std::vector<TurnReport> turns;
  for (const auto& [turn, rs] : by_turn) {
    TurnReport t;
    t.turn = turn;
    std::vector<double> ttft, e2e, prompt, cached;
    double first = -1, last = 0, sum_prompt = 0, sum_cached = 0;
    for (const auto* r : rs) {
      ++t.requests;
      if (!r->ok()) {
        ++t.errors[r->error];
        continue;
      }
      ++t.succeeded;
      t.output_tokens += r->output_tokens();
      if (r->ttft_ms >= 0) ttft.push_back(r->ttft_ms);
      e2e.push_back(r->e2e_ms);
      if (r->prompt_tokens >= 0) prompt.push_back(static_cast<double>(r->prompt_tokens));
      if (r->cached_tokens >= 0) cached.push_back(static_cast<double>(r->cached_tokens));
      if (r->prompt_tokens > 0 && r->cached_tokens >= 0) {
        sum_prompt += static_cast<double>(r->prompt_tokens);
        sum_cached += static_cast<double>(r->cached_tokens);
      }
      first = first < 0 ? r->start_s : std::min(first, r->start_s);
      last = std::max(last, r->start_s + r->e2e_ms / 1000.0);
    }
    t.ttft_ms = summarize(std::move(ttft));
    t.e2e_ms = summarize(std::move(e2e));
    t.prompt_tokens = summarize(std::move(prompt));
    t.cached_tokens = summarize(std::move(cached));
    if (sum_prompt > 0) t.cached_ratio = sum_cached / sum_prompt;
    if (first >= 0 && last > first) {
      t.wall_s = last - first;
      t.output_tokens_per_s = static_cast<double>(t.output_tokens) / t.wall_s;
    }
    turns.push_back(std::move(t));
  }
  return turns;
}

}  // namespace switchyard::bench
