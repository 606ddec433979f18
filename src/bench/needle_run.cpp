#include "bench/needle_run.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <exception>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "bench/endpoint_probe.h"
#include "bench/load_generator.h"
#include "bench/needle_scorer.h"
#include "bench/report_json.h"
#include "common/command_error.h"
#include "common/json_text.h"
#include "http/url.h"

namespace switchyard::bench {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

const char* const kNeedleSimulatedWarning =
    "SIMULATED ENGINE: switchyard's simulator does not read the prompt, so these scores are "
    "meaningless; this run only proves the pipeline (haystack, needles, question, scoring)";

namespace {

std::mt19937_64 cell_rng(std::uint64_t seed, long context, std::size_t depth, int trial) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed),    static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(context), static_cast<std::uint32_t>(depth),
                    static_cast<std::uint32_t>(trial),   0x6e65656dU};
  return std::mt19937_64(seq);
}

std::string chat_body(const std::string& model, const std::string& text, long max_tokens) {
  json::object b{{"model", model},
                 {"messages", json::array{json::object{{"role", "user"}, {"content", text}}}},
                 {"max_tokens", max_tokens},
                 {"temperature", 0},
                 {"stream", true},
                 {"stream_options", json::object{{"include_usage", true}}}};
  return json::serialize(b);
}

// One line for a request that failed the way a bad endpoint fails.
std::string request_failure(const NeedleOptions& o, const RequestRecord& r) {
  const std::string where = o.url + "/v1/chat/completions";
  if (r.error == "http_401" || r.error == "http_403")
    return fmt::format("{} refused the API key ({}: {}): pass the right --api-key", where,
                       r.error.substr(5), r.error_detail);
  if (r.error == "http_404")
    return fmt::format("{} answered 404 (unknown model '{}' or endpoint): {}", where, o.model,
                       r.error_detail);
  if (r.error == "connect") return fmt::format("cannot reach {}: {}", o.url, r.error_detail);
  return fmt::format("the request to {} failed ({}): {}", where, r.error, r.error_detail);
}

class NeedleSession {
 public:
  NeedleSession(const NeedleOptions& o, HeaderList headers, CountTokens count,
                LoadGenerator& generator, NeedleReport& report)
      : o_(o),
        headers_(std::move(headers)),
        count_(std::move(count)),
        gen_(generator),
        report_(report) {}

  std::string failure;

  awaitable<void> drive() {
    // A short request first: the endpoint works, and what the chat template adds.
    const std::string hello = "Say hello.";
    const std::string probe_body = chat_body(o_.model, hello, 8);
    StepPlan probe;
    probe.step = -1;
    probe.requests = 1;
    probe.body = [&probe_body](long, bool) { return probe_body; };
    StepOutcome first = co_await gen_.run_step(probe);
    if (gen_.stopped() || first.records.empty()) co_return;
    const auto& p = first.records.front();
    if (!p.ok()) {
      failure = request_failure(o_, p);
      co_return;
    }
    long overhead = 0;
    if (auto counted = count_(hello); counted && p.prompt_tokens >= 0)
      overhead = std::max(0L, p.prompt_tokens - *counted);

    int step = 0;
    for (long context : report_.contexts) {
      for (std::size_t d = 0; d < o_.depths.size(); ++d) {
        for (int trial = 1; trial <= o_.trials && !gen_.stopped(); ++trial) {
          const double depth = o_.depths[d];
          auto rng = cell_rng(o_.seed, context, d, trial);
          NeedleCell cell;
          cell.context = context;
          cell.depth = depth;
          cell.trial = trial;
          cell.needles = make_needles(rng, o_.needles);
          const long target = context - o_.output_len - overhead;
          auto prompt = sized_needle_prompt(target, cell.needles, depth, count_);
          if (!prompt) {
            failure = fmt::format("context {}: {}", context, prompt.error().message);
            co_return;
          }
          cell.counted_tokens = prompt->tokens;
          for (auto offset : prompt->offsets)
            cell.needle_percent.push_back(100.0 * static_cast<double>(offset) /
                                          static_cast<double>(prompt->text.size()));
          const std::string body = chat_body(o_.model, prompt->text, o_.output_len);
          StepPlan plan;
          plan.step = step++;
          plan.requests = 1;
          plan.keep_content = true;
          plan.body = [&body](long, bool) { return body; };
          StepOutcome outcome = co_await gen_.run_step(plan);
          if (outcome.records.empty()) co_return;
          const auto& r = outcome.records.front();
          if (r.error == "interrupted") co_return;
          cell.prompt_tokens = r.prompt_tokens;
          cell.ttft_ms = r.ttft_ms;
          cell.e2e_ms = r.e2e_ms;
          cell.answer = r.content;
          cell.error = r.error;
          cell.error_detail = r.error_detail;
          std::vector<std::string> values;
          for (const auto& n : cell.needles) values.push_back(n.value);
          const NeedleScore score = score_answer(cell.answer, values);
          cell.found = score.found;
          cell.hits = score.hits;
          cell.score = score.score;
          std::cerr << fmt::format("[context {} depth {:g}% trial {}] {} prompt tokens: {}\n",
                                   context, depth, trial,
                                   r.prompt_tokens >= 0 ? r.prompt_tokens : prompt->tokens,
                                   r.ok() ? fmt::format("{}/{} found", cell.hits, values.size())
                                          : fmt::format("{} {}", r.error, r.error_detail));
          report_.cells.push_back(std::move(cell));
        }
      }
    }
  }

 private:
  const NeedleOptions& o_;
  HeaderList headers_;
  CountTokens count_;
  LoadGenerator& gen_;
  NeedleReport& report_;
};

std::string needle_list(const std::vector<bool>& found) {
  std::string s;
  for (bool f : found) s += f ? '+' : '-';
  return s;
}

}  // namespace

Result<bool> validate(const NeedleOptions& o) {
  if (auto url = http::parse_url(o.url); !url) return Error{"--url: " + url.error().message};
  if (o.model.empty()) return Error{"--model: required"};
  if (o.needles < 1 || o.needles > 64) return Error{"--needles: 1 to 64"};
  if (o.depths.empty()) return Error{"--depths: give at least one depth"};
  for (double d : o.depths)
    if (!(d >= 0 && d <= 100)) return Error{fmt::format("--depths: {} is not in 0-100", d)};
  const std::vector<long> contexts = o.contexts.empty() ? std::vector<long>{o.context} : o.contexts;
  for (long c : contexts)
    if (c < 256) return Error{fmt::format("--context: {} is under 256 tokens", c)};
  if (o.trials < 1) return Error{"--trials: must be at least 1"};
  if (o.output_len < 1) return Error{"--output-len: must be at least 1"};
  for (long c : contexts)
    if (o.output_len >= c / 2)
      return Error{
          fmt::format("--output-len {} leaves too little of a {}-token context", o.output_len, c)};
  if (auto ok = check_request_flags(o.headers, o.tokenize_url); !ok) return ok;
  return true;
}

std::string format_needle_table(const NeedleReport& report) {
  const auto& o = report.options;
  std::string out =
      fmt::format("NEEDLE{} · {} · model {} · {} needle(s) per request · answer up to {} tokens\n",
                  report.simulated ? " · SIMULATED ENGINE" : "", report.endpoint, report.model,
                  o.needles, o.output_len);
  constexpr const char* kRow = "{:>8} {:>8} {:>6} {:>11} {:>7} {:>6} {:>9} {}";
  out += fmt::format(kRow, "context", "depth %", "trial", "prompt tok", "found", "score", "TTFT ms",
                     "needles/error") +
         "\n";
  for (const auto& c : report.cells) {
    const long prompt = c.prompt_tokens >= 0 ? c.prompt_tokens : c.counted_tokens;
    out +=
        fmt::format(kRow, c.context, fmt::format("{:g}", c.depth), c.trial, prompt,
                    fmt::format("{}/{}", c.hits, c.needles.size()), fmt::format("{:.2f}", c.score),
                    c.ttft_ms >= 0 ? fmt::format("{:.0f}", c.ttft_ms) : std::string("-"),
                    c.error.empty() ? needle_list(c.found) : c.error + " " + c.error_detail) +
        "\n";
  }
  // Mean score by context × depth (over trials).
  std::map<std::pair<long, double>, std::pair<double, int>> sums;
  for (const auto& c : report.cells) {
    auto& s = sums[{c.context, c.depth}];
    s.first += c.score;
    ++s.second;
  }
  std::string head = fmt::format("{:>8}", "score");
  for (double d : o.depths) head += fmt::format(" {:>7}", fmt::format("{:g}%", d));
  out += head + fmt::format(" {:>7}\n", "mean");
  for (long context : report.contexts) {
    std::string row = fmt::format("{:>8}", context);
    double total = 0;
    int cells = 0;
    for (double d : o.depths) {
      const auto it = sums.find({context, d});
      if (it == sums.end() || it->second.second == 0) {
        row += fmt::format(" {:>7}", "-");
        continue;
      }
      const double mean = it->second.first / it->second.second;
      total += mean;
      ++cells;
      row += fmt::format(" {:>7.2f}", mean);
    }
    row += cells > 0 ? fmt::format(" {:>7.2f}", total / cells) : fmt::format(" {:>7}", "-");
    out += row + "\n";
  }
  if (report.simulated) out += std::string("! ") + kNeedleSimulatedWarning + "\n";
  for (const auto& note : report.notes) out += "note: " + note + "\n";
  return out;
}

std::string needle_to_json(const NeedleReport& report) {
  const auto& o = report.options;
  json::array depths, contexts, notes, cells;
  for (double d : o.depths) depths.emplace_back(d);
  for (long c : report.contexts) contexts.emplace_back(c);
  for (const auto& n : report.notes) notes.emplace_back(n);
  std::map<std::pair<long, double>, std::pair<double, int>> sums;
  for (const auto& c : report.cells) {
    json::array needles;
    for (std::size_t i = 0; i < c.needles.size(); ++i)
      needles.push_back(json::object{
          {"key", c.needles[i].key},
          {"value", c.needles[i].value},
          {"position_percent", i < c.needle_percent.size() ? c.needle_percent[i] : 0.0},
          {"found", i < c.found.size() && c.found[i]}});
    cells.push_back(
        json::object{{"context", c.context},
                     {"depth", c.depth},
                     {"trial", c.trial},
                     {"prompt_tokens",
                      c.prompt_tokens >= 0 ? json::value(c.prompt_tokens) : json::value(nullptr)},
                     {"counted_tokens", c.counted_tokens},
                     {"needles", std::move(needles)},
                     {"hits", c.hits},
                     {"score", c.score},
                     {"ttft_ms", c.ttft_ms >= 0 ? json::value(c.ttft_ms) : json::value(nullptr)},
                     {"e2e_ms", c.e2e_ms},
                     {"answer", c.answer},
                     {"error", c.error.empty() ? json::value(nullptr) : json::value(c.error)},
                     {"error_detail", c.error_detail}});
    auto& s = sums[{c.context, c.depth}];
    s.first += c.score;
    ++s.second;
  }
  json::array scores;
  for (const auto& [key, s] : sums)
    scores.push_back(json::object{{"context", key.first},
                                  {"depth", key.second},
                                  {"trials", s.second},
                                  {"score", s.first / s.second}});
  json::object method{
      {"task", "multi-key needle retrieval (RULER-style)"},
      {"needles", o.needles},
      {"depths", std::move(depths)},
      {"contexts", std::move(contexts)},
      {"trials", o.trials},
      {"output_len", o.output_len},
      {"seed", o.seed},
      {"token_counts_estimated", report.token_counts_estimated},
      {"description",
       fmt::format(
           "Each request is one chat message: a preamble, a haystack of a fixed filler "
           "paragraph repeated to the context size (prompt = context - answer budget - chat "
           "template, sized with /tokenize), {} needle(s) 'The special magic number for <key> "
           "is <7 digits>.' at successive sentence boundaries from the given depth (percent of "
           "the haystack), and a question asking for every key's number. Score: the fraction "
           "of the values the answer states as whole numbers (digits inside longer numbers do "
           "not count; any order).",
           o.needles)}};
  json::object doc{{"kind", "needle"},
                   {"endpoint", report.endpoint},
                   {"model", report.model},
                   {"started_at", report.started_at},
                   {"simulated", report.simulated},
                   {"interrupted", report.interrupted},
                   {"notes", std::move(notes)},
                   {"method", std::move(method)},
                   {"cells", std::move(cells)},
                   {"scores", std::move(scores)}};
  if (report.simulated) doc["warning"] = kNeedleSimulatedWarning;
  if (!o.label.empty()) doc["label"] = o.label;
  return to_json_text(doc) + "\n";
}

NeedleGrid needle_grid(const NeedleReport& report) {
  NeedleGrid g;
  g.label = report.options.label;
  g.endpoint = report.endpoint;
  g.model = report.model;
  g.simulated = report.simulated;
  g.contexts = report.contexts;
  g.depths = report.options.depths;
  std::map<std::pair<long, double>, std::pair<double, int>> sums;
  for (const auto& c : report.cells) {
    auto& s = sums[{c.context, c.depth}];
    s.first += c.score;
    ++s.second;
  }
  for (const auto& [key, s] : sums) g.scores[key] = s.first / s.second;
  return g;
}

Result<NeedleGrid> needle_grid_from_json(const std::string& text, const std::string& source) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) return Error{fmt::format("{}: not JSON ({})", source, ec.message())};
  const json::object* o = v.if_object();
  const json::value* scores = o ? o->if_contains("scores") : nullptr;
  if (!scores || !scores->is_array())
    return Error{fmt::format("{}: not a needle result (no scores[])", source)};
  const auto text_at = [](const json::object& obj, const char* key) {
    const json::value* f = obj.if_contains(key);
    return f && f->is_string() ? std::string(f->as_string()) : std::string();
  };
  NeedleGrid g;
  g.label = text_at(*o, "label");
  g.endpoint = text_at(*o, "endpoint");
  g.model = text_at(*o, "model");
  if (const json::value* s = o->if_contains("simulated"); s && s->is_bool())
    g.simulated = s->as_bool();
  for (const auto& cell : scores->as_array()) {
    const json::object* c = cell.if_object();
    const json::value* context = c ? c->if_contains("context") : nullptr;
    const json::value* depth = c ? c->if_contains("depth") : nullptr;
    const json::value* score = c ? c->if_contains("score") : nullptr;
    if (!context || !depth || !score || !context->is_number() || !depth->is_number() ||
        !score->is_number())
      return Error{fmt::format("{}: scores[] needs context, depth and score numbers", source)};
    const auto key = std::pair(context->to_number<long>(), depth->to_number<double>());
    g.scores[key] = score->to_number<double>();
    if (std::find(g.contexts.begin(), g.contexts.end(), key.first) == g.contexts.end())
      g.contexts.push_back(key.first);
    if (std::find(g.depths.begin(), g.depths.end(), key.second) == g.depths.end())
      g.depths.push_back(key.second);
  }
  std::sort(g.contexts.begin(), g.contexts.end());
  std::sort(g.depths.begin(), g.depths.end());
  return g;
}

int run_needle(const NeedleOptions& o) {
  if (auto ok = validate(o); !ok) return command_error("bench needle", ok.error().message, 2);
  const std::string base = base_url(o.url);
  const HeaderList headers = request_headers(o.api_key, o.headers);
  auto info = probe_endpoint(base, headers, o.model);
  if (!info) return command_error("bench needle", info.error().message, 1);

  NeedleReport report;
  report.options = o;
  report.endpoint = base;
  report.model = o.model;
  report.started_at = utc_now_iso8601();
  report.simulated = info->simulated || o.simulated;
  report.contexts = o.contexts.empty() ? std::vector<long>{o.context} : o.contexts;
  if (report.simulated) std::cerr << kNeedleSimulatedWarning << "\n";

  const std::string tokenize_url = tokenize_url_for(base, o.tokenize_url);
  CountTokens count = [tokenize_url, headers, model = o.model](const std::string& text) {
    return count_tokens(tokenize_url, headers, model, text);
  };
  if (auto probe = count("hello world"); !probe) {
    report.token_counts_estimated = true;
    report.notes.push_back(fmt::format(
        "no token counting at {} ({}): the haystack is sized at 4 characters per token, the "
        "engine's real counts are in cells[].prompt_tokens",
        tokenize_url, probe.error().message));
    count = [](const std::string& text) -> Result<long> {
      return static_cast<long>(text.size() / 4);
    };
  }

  asio::io_context io;
  LoadTarget target;
  target.url = *http::parse_url(base);
  target.path = "/v1/chat/completions";
  for (const auto& [name, value] : headers) target.headers.add(name, value);
  target.idle_timeout = std::chrono::milliseconds(static_cast<long>(o.stream_idle_s * 1000));
  target.first_byte_timeout = target.idle_timeout;
  LoadGenerator generator(io.get_executor(), target, 2);
  NeedleSession session(o, headers, count, generator, report);

  const bool interrupted = run_interruptible(io, generator, session.drive());
  if (!session.failure.empty()) return command_error("bench needle", session.failure, 1);
  report.interrupted = interrupted;

  std::cout << format_needle_table(report) << std::flush;
  if (!o.json_path.empty())
    if (auto w = write_file_atomically(o.json_path, needle_to_json(report)); !w)
      return command_error("bench needle", w.error().message, 1);
  if (!o.html_path.empty())
    if (auto w = write_file_atomically(o.html_path, render_html({}, {}, {needle_grid(report)})); !w)
      return command_error("bench needle", w.error().message, 1);
  if (interrupted)
    return command_error("bench needle", "interrupted: partial results written", 130);
  for (const auto& c : report.cells)
    if (!c.error.empty()) return 1;
  return 0;
}

}  // namespace switchyard::bench
