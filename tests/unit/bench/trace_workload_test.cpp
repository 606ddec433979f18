#include "bench/trace_workload.h"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/report_json.h"
#include "bench/report_table.h"
#include "bench/trace_day.h"
#include "http/server.h"

namespace switchyard::bench {
namespace {

namespace json = boost::json;

std::string error_of(std::string_view text) {
  auto r = parse_trace(text, 256);
  return r ? std::string("(parsed)") : r.error().message;
}

TEST(TraceWorkload, ParsesLinesAndOrdersThemByTime) {
  auto r = parse_trace(
      "{\"t\":2.5,\"input_len\":2048,\"output_len\":256,\"session\":\"a\",\"label\":\"burst\"}\n"
      "\n"
      "{\"t\":0,\"input_len\":10,\"output_len\":5,\"phase\":\"trickle\",\"model\":\"m2\"}\r\n"
      "{\"t\":2.5,\"input_len\":30,\"output_len\":7,\"extra\":[1,2]}",
      256);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].line, 3);
  EXPECT_EQ((*r)[0].label, "trickle");
  EXPECT_EQ((*r)[0].model, "m2");
  EXPECT_EQ((*r)[1].line, 1);  // equal times keep the file's order
  EXPECT_EQ((*r)[1].input_len, 2048);
  EXPECT_EQ((*r)[1].output_len, 256);
  EXPECT_EQ((*r)[1].session, "a");
  EXPECT_EQ((*r)[2].line, 4);
  EXPECT_TRUE((*r)[2].session.empty());
}

TEST(TraceWorkload, ReadsTheUsageTrace) {
  // What `switchyard usage --trace` writes: generated tokens when there were
  // some, else what was asked for, else the default.
  auto r = parse_trace(
      "{\"t\":0.0,\"request_id\":\"r1\",\"key\":\"k\",\"model\":\"qwen\",\"endpoint\":\"chat\","
      "\"session\":\"s1\",\"prompt_tokens\":900,\"cached_tokens\":0,\"completion_tokens\":120,"
      "\"max_tokens\":256,\"status\":200}\n"
      "{\"t\":1.5,\"prompt_tokens\":50,\"completion_tokens\":0,\"max_tokens\":64,\"status\":429}\n"
      "{\"t\":3,\"prompt_tokens\":50,\"completion_tokens\":0,\"status\":500}\n",
      100);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].input_len, 900);
  EXPECT_EQ((*r)[0].output_len, 120);
  EXPECT_EQ((*r)[0].session, "s1");
  EXPECT_EQ((*r)[0].model, "qwen");
  EXPECT_EQ((*r)[1].output_len, 64);
  EXPECT_EQ((*r)[2].output_len, 100);
}

TEST(TraceWorkload, ABadLineNamesItsNumberAndField) {
  EXPECT_EQ(error_of("{\"t\":0,\"input_len\":5}\nnope\n"), "line 2: not JSON (syntax error)");
  EXPECT_EQ(error_of("[1]"), "line 1: not a JSON object");
  EXPECT_EQ(error_of("{\"input_len\":5}"), "line 1: t: missing (seconds from the start)");
  EXPECT_EQ(error_of("{\"t\":-1,\"input_len\":5}"), "line 1: t: must be a number of seconds >= 0");
  EXPECT_EQ(error_of("{\"t\":\"1\",\"input_len\":5}"),
            "line 1: t: must be a number of seconds >= 0");
  EXPECT_EQ(error_of("{\"t\":1}"), "line 1: input_len: missing (prompt tokens)");
  EXPECT_EQ(error_of("\n\n{\"t\":1,\"input_len\":0}"),
            "line 3: input_len: must be a whole number >= 1");
  EXPECT_EQ(error_of("{\"t\":1,\"input_len\":2.5}"),
            "line 1: input_len: must be a whole number >= 1");
  EXPECT_EQ(error_of("{\"t\":1,\"prompt_tokens\":-3}"),
            "line 1: prompt_tokens: must be a whole number >= 1");
  EXPECT_EQ(error_of("{\"t\":1,\"input_len\":5,\"output_len\":0}"),
            "line 1: output_len: must be a whole number >= 1");
  EXPECT_EQ(error_of("{\"t\":1,\"input_len\":5,\"session\":7}"),
            "line 1: session: must be a string");
  EXPECT_EQ(error_of("{\"t\":1,\"input_len\":5,\"max_tokens\":\"x\"}"),
            "line 1: max_tokens: must be a number >= 0");
  EXPECT_EQ(error_of("\n \n"), "no requests (one JSON object per line)");
}

TEST(TraceWorkload, LinesRoundTrip) {
  TraceEntry e{12.345, 2048, 256, "chat-1", "trickle", "", 0};
  auto r = parse_trace(trace_line(e), 1);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ((*r)[0].t, 12.345);
  EXPECT_EQ((*r)[0].input_len, 2048);
  EXPECT_EQ((*r)[0].output_len, 256);
  EXPECT_EQ((*r)[0].session, "chat-1");
  EXPECT_EQ((*r)[0].label, "trickle");
}

TEST(TraceWorkload, SessionsAreNumberedByFirstAppearance) {
  std::vector<TraceEntry> entries(5);
  entries[0].session = "b";
  entries[1].session = "a";
  entries[2].session = "b";
  entries[4].session = "a";
  EXPECT_EQ(session_indices(entries), (std::vector<int>{0, 1, 0, 2, 1}));
}

// A word-level tokenizer, like the sim's /tokenize.
Result<long> count_words(const std::string& text) {
  long words = text.empty() ? 0 : 1;
  for (char c : text) words += c == ' ';
  return words;
}

TEST(TraceWorkload, ASessionsPromptsArePrefixesOfOneText) {
  std::vector<TraceEntry> entries;
  entries.push_back({0, 100, 8, "s", "", "", 1});
  entries.push_back({1, 300, 8, "s", "", "", 2});
  entries.push_back({2, 200, 8, "", "", "", 3});
  entries.push_back({3, 100, 8, "s", "", "", 4});
  TracePromptSource source;
  source.count = count_words;
  source.overhead = 2;  // what the engine adds around the text (BOS, a template)
  source.seed = 9;
  auto prompts = build_trace_prompts(entries, source);
  ASSERT_TRUE(prompts) << prompts.error().message;
  ASSERT_EQ(prompts->size(), 4u);
  const std::string first((*prompts)[0].as_string());
  const std::string second((*prompts)[1].as_string());
  const std::string other((*prompts)[2].as_string());
  EXPECT_EQ(*count_words(first) + 2, 100);
  EXPECT_EQ(*count_words(second) + 2, 300);
  EXPECT_EQ(*count_words(other) + 2, 200);
  EXPECT_EQ(second.rfind(first + " ", 0), 0u) << "the longer prompt extends the shorter";
  EXPECT_NE(other.substr(0, 40), second.substr(0, 40)) << "another session, another text";
  EXPECT_EQ((*prompts)[3], (*prompts)[0]);
  // A function of the seed.
  auto again = build_trace_prompts(entries, source);
  EXPECT_EQ(*again, *prompts);
}

TEST(TraceWorkload, TokenIdPromptsShareTheSessionsPrefix) {
  std::vector<TraceEntry> entries;
  entries.push_back({0, 5, 8, "s", "", "", 1});
  entries.push_back({1, 12, 8, "s", "", "", 2});
  TracePromptSource source;
  source.token_ids = true;
  source.ids = {10, 1000};
  auto prompts = build_trace_prompts(entries, source);
  ASSERT_TRUE(prompts);
  const auto& a = (*prompts)[0].as_array();
  const auto& b = (*prompts)[1].as_array();
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 12u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
}

TEST(TraceWorkload, ExactPrefixFindsTheTargetWithAFewCounts) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += i ? " w" : "w";
  int calls = 0;
  // Two tokens for every third word: the first guess overshoots.
  const CountTokens count = [&calls](const std::string& t) -> Result<long> {
    ++calls;
    long words = 1;
    for (char c : t) words += c == ' ';
    return words + words / 3;
  };
  auto p = exact_prefix(text, 1000, count);
  ASSERT_TRUE(p);
  EXPECT_EQ(*count(*p), 1000);
  EXPECT_LE(calls, 8);
  // A text too short for the target: all of it.
  EXPECT_EQ(*exact_prefix("a b c", 50, count), "a b c");
  // Errors are the counter's.
  const CountTokens broken = [](const std::string&) -> Result<long> { return Error{"down"}; };
  EXPECT_EQ(exact_prefix(text, 10, broken).error().message, "down");
}

TEST(TraceWorkload, ExactPrefixPadsWhereTheNextWordJumpsPastTheTarget) {
  // Words of 6 letters or more are two tokens (as the simulator counts).
  const CountTokens count = [](const std::string& t) -> Result<long> {
    long tokens = 0;
    std::size_t start = 0;
    while (start <= t.size()) {
      const auto end = std::min(t.find(' ', start), t.size());
      tokens += end - start >= 6 ? 2 : 1;
      start = end + 1;
    }
    return tokens;
  };
  // 9 one-token words, then "people": 9 tokens, then 11; 10 is between.
  const std::string text = "a b c d e f g h i people j k";
  auto p = exact_prefix(text, 10, count);
  ASSERT_TRUE(p);
  EXPECT_EQ(*count(*p), 10);
  EXPECT_TRUE(p->starts_with("a b c d e f g h i ")) << *p;
}

TEST(TraceWorkload, BodiesForceTheOutput) {
  auto b = json::parse(trace_body("m", false, json::string("hi"), 7)).as_object();
  EXPECT_EQ(b.at("prompt"), "hi");
  EXPECT_EQ(b.at("max_tokens"), 7);
  EXPECT_EQ(b.at("min_tokens"), 7);
  EXPECT_EQ(b.at("ignore_eos"), true);
  auto c = json::parse(trace_body("m", true, json::string("hi"), 7)).as_object();
  EXPECT_EQ(c.at("messages").as_array()[0].as_object().at("content"), "hi");
}

RequestRecord record(std::string label, double start_s, double ttft, double e2e,
                     std::string error = "") {
  RequestRecord r;
  r.label = std::move(label);
  r.start_s = start_s;
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.error = std::move(error);
  r.completion_tokens = 4;
  return r;
}

TEST(TraceWorkload, PhasesSummariseByLabel) {
  std::vector<RequestRecord> rs{
      record("trickle", 0, 100, 1000),  record("burst", 5, 300, 4000),
      record("trickle", 10, 200, 2000), record("burst", 5, -1, 50, "http_503"),
      record("", 20, 10, 20),           record("burst", 5, -1, 9, "interrupted")};
  const auto phases = summarize_phases(rs);
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].label, "trickle");
  EXPECT_EQ(phases[0].requests, 2);
  EXPECT_EQ(phases[0].failed, 0);
  EXPECT_DOUBLE_EQ(phases[0].ttft_ms.p50, 150);
  EXPECT_DOUBLE_EQ(phases[0].first_send_s, 0);
  EXPECT_DOUBLE_EQ(phases[0].last_end_s, 12);
  EXPECT_EQ(phases[1].label, "burst");
  EXPECT_EQ(phases[1].requests, 2);  // the interrupted one is left out
  EXPECT_EQ(phases[1].succeeded, 1);
  EXPECT_EQ(phases[1].failed, 1);
  EXPECT_EQ(phases[1].errors.at("http_503"), 1);
  EXPECT_EQ(phases[2].label, "-");
  EXPECT_EQ(peak_concurrency(rs), 2);  // the two burst requests sent at 5 s
}

TEST(TraceWorkload, TheReportCarriesPhasesAndMakespan) {
  RunReport run;
  run.method.workload = "trace";
  run.requests.push_back(record("cold", 1, 10, 20));
  TraceReport t;
  t.file = "day.jsonl";
  t.requests = 1;
  t.sessions = 1;
  t.span_s = 1;
  t.makespan_s = 1.02;
  t.phases = summarize_phases(run.requests);
  run.trace = t;
  const auto doc = json::parse(run_to_json(run)).as_object();
  const auto& trace = doc.at("trace").as_object();
  EXPECT_DOUBLE_EQ(trace.at("makespan_s").as_double(), 1.02);
  EXPECT_EQ(trace.at("phases").as_array()[0].as_object().at("label"), "cold");
  EXPECT_EQ(doc.at("requests").as_array()[0].as_object().at("label"), "cold");
  const std::string table = format_table(run);
  EXPECT_NE(table.find("trace day.jsonl: 1 requests"), std::string::npos) << table;
  EXPECT_NE(table.find("makespan 1.0 s"), std::string::npos) << table;
}

// A completions endpoint that streams `max_tokens` one-token chunks. The
// request whose prompt is "hold" answers only once another request has
// arrived: a send must not wait for an earlier response.
class FakeEngine final : public http::Handler {
 public:
  struct Arrival {
    Clock::time_point at;
    std::string prompt;
  };
  std::vector<Arrival> arrivals;
  bool overlapped = false;  // "hold" was answered after another request arrived

  boost::asio::awaitable<void> handle(http::Request& request, http::Exchange& ex) override {
    const auto body = json::parse(request.body).as_object();
    const std::string prompt(body.at("prompt").as_string());
    arrivals.push_back({Clock::now(), prompt});
    const std::size_t seen = arrivals.size();
    if (prompt == "hold") {
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
      const auto give_up = Clock::now() + std::chrono::seconds(10);
      while (arrivals.size() == seen && Clock::now() < give_up) {
        timer.expires_after(std::chrono::milliseconds(5));
        co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      }
      overlapped = arrivals.size() > seen;
    }
    http::Headers headers;
    headers.set("Content-Type", "text/event-stream");
    co_await ex.start_stream(200, std::move(headers));
    const auto n = body.at("max_tokens").as_int64();
    for (std::int64_t i = 0; i < n; ++i)
      co_await ex.send_chunk("data: {\"choices\":[{\"text\":\"x\"}]}\n\n");
    co_await ex.send_chunk(fmt::format(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{}}}}}"
        "\n\ndata: [DONE]\n\n",
        n));
    co_await ex.end_stream();
  }
  http::Response protocol_error(int status, std::string message, std::string_view) override {
    return http::json_response(status, message);
  }
};

TEST(TraceWorkload, EachRequestGoesAtItsTimeWhateverIsInFlight) {
  boost::asio::io_context io;
  FakeEngine engine;
  http::ServerOptions options;
  options.port = 0;
  http::Server server(io.get_executor(), engine, options);
  auto port = server.listen();
  ASSERT_TRUE(port) << port.error().message;
  server.start();
  LoadTarget target;
  target.url = *http::parse_url(fmt::format("http://127.0.0.1:{}", *port));
  target.path = "/v1/completions";
  LoadGenerator generator(io.get_executor(), target, 16);

  std::vector<TraceEntry> entries{{0, 1, 3, "s", "first", "", 1},
                                  {0.15, 1, 2, "s", "second", "", 2},
                                  {0.3, 1, 4, "", "first", "", 3}};
  const char* prompts[] = {"hold", "b", "c"};
  std::vector<std::string> bodies;
  for (std::size_t i = 0; i < entries.size(); ++i)
    bodies.push_back(trace_body("m", false, json::string(prompts[i]), entries[i].output_len));
  TraceOutcome outcome;
  const auto t0 = Clock::now();
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        outcome = co_await run_trace(generator, io.get_executor(), entries, bodies);
      },
      [&io](std::exception_ptr e) {
        io.stop();  // the pooled keep-alive connections would keep it running
        if (e) std::rethrow_exception(e);
      });
  io.run_for(std::chrono::seconds(30));

  ASSERT_EQ(engine.arrivals.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(engine.arrivals[i].prompt, prompts[i]);
    // Never before its time (the scheduler may only be late).
    EXPECT_GE(engine.arrivals[i].at - t0, std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(entries[i].t)));
  }
  ASSERT_EQ(outcome.records.size(), 3u);
  const auto& held = outcome.records[0];
  EXPECT_TRUE(held.ok()) << held.error;
  EXPECT_EQ(held.output_tokens(), 3);
  // The held request was answered only once the second had arrived.
  EXPECT_TRUE(engine.overlapped);
  EXPECT_GT(held.start_s + held.e2e_ms / 1000, outcome.records[1].start_s);
  EXPECT_EQ(held.label, "first");
  EXPECT_EQ(held.session, 1);
  EXPECT_EQ(held.turn, 1);
  EXPECT_EQ(outcome.records[1].session, 1);
  EXPECT_EQ(outcome.records[1].turn, 2);
  EXPECT_EQ(outcome.records[2].session, 2);
  EXPECT_EQ(outcome.records[2].prompt_target, 1);
  for (const auto& r : outcome.records) EXPECT_FALSE(r.short_output);
  EXPECT_GE(outcome.makespan_s, 0.3);
  EXPECT_GT(outcome.started_unix_s, 1e9);
  const auto phases = summarize_phases(outcome.records);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].label, "first");
  EXPECT_EQ(phases[0].succeeded, 2);
}

TEST(TraceDay, TheDayHasATrickleABurstAndAColdPrompt) {
  DayOptions o;
  ASSERT_TRUE(validate(o));
  const auto day = make_day(o);
  std::map<std::string, int> by_label;
  std::set<std::string> chats;
  for (const auto& e : day) {
    ++by_label[e.label];
    if (e.label == "trickle") chats.insert(e.session);
  }
  EXPECT_EQ(by_label["burst"], 16);
  EXPECT_EQ(by_label["cold"], 1);
  EXPECT_GT(by_label["trickle"], 20);
  EXPECT_GT(chats.size(), 3u) << "chats end and new ones start";
  for (std::size_t i = 1; i < day.size(); ++i) EXPECT_LE(day[i - 1].t, day[i].t);
  for (const auto& e : day) {
    if (e.label == "burst") {
      EXPECT_DOUBLE_EQ(e.t, 600);
      EXPECT_EQ(e.input_len, 2048);
      EXPECT_EQ(e.output_len, 256);
    }
    if (e.label == "cold") {
      EXPECT_DOUBLE_EQ(e.t, 1000);
      EXPECT_EQ(e.input_len, 130000);
    }
    if (e.label == "trickle") {
      EXPECT_LT(e.t, 1800);
    }
  }
  // A chat's context grows turn by turn: the last prompt, its answer and more.
  std::map<std::string, long> last;
  for (const auto& e : day) {
    if (e.label != "trickle") continue;
    if (last.count(e.session)) {
      EXPECT_EQ(e.input_len, last[e.session] + 128 + 384);
    }
    last[e.session] = e.input_len;
  }
}

TEST(TraceDay, DeterministicBySeedAndCompressed) {
  DayOptions o;
  const auto a = make_day(o);
  EXPECT_EQ(trace_line(make_day(o)[3]), trace_line(a[3]));
  o.seed = 1;
  const auto b = make_day(o);
  EXPECT_NE(trace_line(b[3]), trace_line(a[3]));
  o.seed = 0;
  o.compress = 10;
  const auto c = make_day(o);
  ASSERT_EQ(c.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(c[i].t, a[i].t / 10, 0.001);
  o.burst_requests = 0;
  o.cold_requests = 2;
  o.cold_gap_s = 30;
  int cold = 0;
  for (const auto& e : make_day(o)) {
    EXPECT_NE(e.label, "burst");
    if (e.label == "cold") {
      EXPECT_DOUBLE_EQ(e.t, (1000 + 30 * cold++) / 10.0);
    }
  }
  EXPECT_EQ(cold, 2);
}

TEST(TraceDay, BadOptionsNameTheFlag) {
  DayOptions o;
  o.compress = 0;
  EXPECT_EQ(validate(o).error().message, "--compress: must be positive");
  o = DayOptions{};
  o.trickle_turns = 0;
  EXPECT_EQ(validate(o).error().message, "--trickle-turns: must be at least 1");
}

}  // namespace
}  // namespace switchyard::bench
