#include "sim/completion.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include "common/json_text.h"
#include "http/use_tuple.h"

namespace switchyard::sim {

std::string named_event(std::string_view name, const boost::json::object& data) {
  std::string out = "event: ";
  out.append(name);
  out.append("\ndata: ");
  out.append(to_json_text(data));
  out.append("\n\n");
  return out;
}

namespace net = boost::asio;
namespace json = boost::json;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;
using http::use_tuple;

namespace {

// Text of a message's content: a string, null, or an array of text parts.
std::optional<std::string> content_text(const json::value& content) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array()) return std::nullopt;
  std::string out;
  for (const auto& part : content.get_array()) {
    const auto* obj = part.if_object();
    if (!obj) return std::nullopt;
    if (const auto* text = obj->if_contains("text"); text && text->is_string())
      out.append(text->get_string());
  }
  return out;
}

std::optional<int> int_field(const json::object& body, std::string_view key,
                             std::optional<RequestError>& error) {
  const auto* v = body.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_int64() && v->get_int64() >= -1 && v->get_int64() <= INT_MAX)
    return static_cast<int>(v->get_int64());
  if (v->is_uint64() && v->get_uint64() <= INT_MAX) return static_cast<int>(v->get_uint64());
  error = RequestError{400, fmt::format("'{}' must be an integer", key), std::string(key)};
  return std::nullopt;
}

// A prompt given as a string or as token ids.
std::optional<RequestError> read_prompt(const json::value& prompt, const Tokenizer& tok,
                                        bool add_bos, CompletionJob& job) {
  if (prompt.is_string()) {
    job.prompt_text = std::string(prompt.get_string());
    if (add_bos) job.prompt.push_back(Tokenizer::kBos);
    const auto ids = tok.tokenize(prompt.get_string());
    job.prompt.insert(job.prompt.end(), ids.begin(), ids.end());
    if (add_bos) job.prompt_text = tok.detokenize(job.prompt);
    return std::nullopt;
  }
  if (!prompt.is_array())
    return RequestError{400, "'prompt' must be a string or an array of token ids", "prompt"};
  for (const auto& t : prompt.get_array()) {
    if (!t.is_int64() || t.get_int64() < 0 ||
        t.get_int64() >= static_cast<std::int64_t>(tok.vocab_size()))
      return RequestError{400, "'prompt' must be a string or an array of valid token ids",
                          "prompt"};
    job.prompt.push_back(static_cast<Token>(t.get_int64()));
  }
  job.prompt_text = tok.detokenize(job.prompt);
  return std::nullopt;
}

}  // namespace

bool bool_field(const json::object& body, std::string_view key, bool fallback) {
  const auto* v = body.if_contains(key);
  return v && v->is_bool() ? v->get_bool() : fallback;
}

std::variant<std::string, RequestError> apply_chat_template(const json::object& body) {
  const auto* messages = body.if_contains("messages");
  if (!messages) return RequestError{400, "'messages' is required", "messages"};
  if (!messages->is_array() || messages->get_array().empty())
    return RequestError{400, "Expected 'messages' to be a non-empty array", "messages"};
  std::string prompt;
  for (const auto& m : messages->get_array()) {
    const auto* obj = m.if_object();
    const auto* role = obj ? obj->if_contains("role") : nullptr;
    if (!role || !role->is_string())
      return RequestError{400, "each message needs a string 'role'", "messages"};
    const auto* content = obj->if_contains("content");
    auto text = content ? content_text(*content) : std::optional<std::string>("");
    if (!text)
      return RequestError{400, "message 'content' must be a string or an array of parts",
                          "messages"};
    prompt +=
        fmt::format("<|im_start|>{}\n{}<|im_end|>\n", std::string_view(role->get_string()), *text);
  }
  if (bool_field(body, "add_generation_prompt", true)) prompt += "<|im_start|>assistant\n";
  return prompt;
}

std::variant<CompletionJob, RequestError> parse_completion(Endpoint endpoint,
                                                           const json::object& body,
                                                           const Tokenizer& tok,
                                                           const std::string& default_model) {
  CompletionJob job;
  job.endpoint = endpoint;
  std::optional<RequestError> error;
  if (endpoint == Endpoint::chat) {
    auto prompt = apply_chat_template(body);
    if (auto* e = std::get_if<RequestError>(&prompt)) return *e;
    job.prompt_text = std::get<std::string>(std::move(prompt));
    job.prompt = tok.tokenize(job.prompt_text);
    job.max_tokens = int_field(body, "max_completion_tokens", error);
    if (!job.max_tokens) job.max_tokens = int_field(body, "max_tokens", error);
  } else {
    const auto* prompt = body.if_contains("prompt");
    if (!prompt) return RequestError{400, "'prompt' is required", "prompt"};
    // llama-server's /completion puts BOS before a text prompt.
    if (auto e = read_prompt(*prompt, tok, endpoint == Endpoint::native, job)) return *e;
    if (endpoint == Endpoint::text) {
      job.max_tokens = int_field(body, "max_tokens", error).value_or(16);
    } else {
      job.max_tokens = int_field(body, "n_predict", error);
      if (!job.max_tokens) job.max_tokens = int_field(body, "max_tokens", error);
    }
  }
  if (job.max_tokens && *job.max_tokens < 0) job.max_tokens.reset();  // -1: no limit
  job.min_tokens = std::max(0, int_field(body, "min_tokens", error).value_or(0));
  job.id_slot = int_field(body, "id_slot", error).value_or(-1);
  if (error) return *error;
  job.ignore_eos = bool_field(body, "ignore_eos");
  job.stream = bool_field(body, "stream");
  job.cache_prompt = bool_field(body, "cache_prompt", true);
  if (const auto* so = body.if_contains("stream_options"); so && so->is_object())
    job.include_usage = bool_field(so->get_object(), "include_usage");
  if (const auto* model = body.if_contains("model"); model && model->is_string())
    job.model = std::string(model->get_string());
  else
    job.model = default_model;
  if (job.prompt.empty()) return RequestError{400, "the prompt is empty", "prompt"};
  return job;
}

void mark_simulated(http::Headers& headers) {
  headers.add("X-Simulated", "switchyard-sim");
}

std::string sse_event(const json::value& v) {
  return "data: " + to_json_text(v) + "\n\n";
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

awaitable<void> CompletionRunner::answer(std::optional<CompletionJob> job, http::Response reply,
                                         const Unavailable& unavailable,
                                         const MakeFormat& make_format, http::Exchange& exchange) {
  // GCC 12 miscompiles some temporaries inside co_await expressions, so every
  // coroutine here awaits on named locals only.
  if (faults_.loading()) {
    job.reset();
    reply = unavailable("Loading model");
  } else if (job && faults_.refuse_completion()) {
    job.reset();
    reply = unavailable("Service unavailable (simulated: --fail-before-first-byte)");
  }
  if (!job) {
    co_await exchange.respond(std::move(reply));
    co_return;
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  auto format = make_format(*job, created);
  co_await run(std::move(*job), *format, exchange);
}

awaitable<void> CompletionRunner::run(CompletionJob job, CompletionFormat& format,
                                      http::Exchange& exchange) {
  // Stop generating the moment the client goes away, as the engines do.
  co_await (complete(std::move(job), format, exchange) || exchange.until_client_gone());
  if (faults_.completion_ended())
    exit_for_fault(fmt::format("{} completion requests ended (--exit-after-requests)",
                               *faults_.options().exit_after_requests));
}

awaitable<void> CompletionRunner::complete(CompletionJob job, CompletionFormat& format,
                                           http::Exchange& exchange) {
  // Never throws: the `||` with until_client_gone() in run() only ends on a
  // normal return, and a throw here would leave it waiting on the client.
  try {
    // How many tokens this completion gets: the model's own length (unless
    // EOS is ignored; never below min_tokens), the limit, the context left.
    const int eos_at =
        job.ignore_eos ? INT_MAX : std::max(engine_.natural_length(), job.min_tokens);
    const int limit = job.max_tokens.value_or(INT_MAX);
    const int n_out = std::max(0, std::min({eos_at, limit, job.context_left}));
    SeqRequest request;
    request.prompt = job.prompt;
    request.n_out = n_out;
    request.cache_prompt = job.cache_prompt;
    request.id_slot = job.id_slot;
    request.info = RequestInfo{job.max_tokens.value_or(-1), job.ignore_eos, job.stream};
    Sequence seq = engine_.submit(std::move(request));

    // Through the queue and the prefill: the first token (none if n_out is 0).
    std::optional<Token> token = co_await engine_.next(seq);
    if (job.stream) {
      http::Headers headers = format.stream_headers();
      if (!co_await exchange.start_stream(200, std::move(headers))) co_return;
      const PromptStats prompt{seq.state().n_prompt, seq.state().cached};
      const std::vector<std::string> opening = format.open_events(prompt);
      for (const std::string& event : opening)
        if (!co_await exchange.send_chunk(event)) co_return;
    }
    CompletionResult result;
    const int zero = 0;
    if (!co_await token_fault(zero, seq, exchange)) co_return;
    while (token) {
      const std::string_view piece = engine_.tokenizer().piece(*token);
      result.tokens.push_back(*token);
      result.text.append(piece);
      const int count = static_cast<int>(result.tokens.size());
      if (job.stream) {
        const std::string event = format.token_event(*token, piece, count);
        if (!co_await exchange.send_chunk(event)) co_return;
      }
      if (!co_await token_fault(count, seq, exchange)) co_return;
      token = co_await engine_.next(seq);
    }
    const auto& s = seq.state();
    result.prompt_tokens = s.n_prompt;
    result.cached_tokens = s.cached;
    result.stopped = eos_at <= limit && eos_at <= job.context_left;
    result.prompt_ms = ms_between(s.admitted, s.first_token);
    result.predicted_ms = ms_between(s.first_token, s.finished_at);
    result.over_report = engine_.options().over_report;
    result.slot = s.slot;
    result.task = s.id;
    seq = Sequence();  // the slot is free before the last bytes go out, as in llama-server

    if (!job.stream) {
      http::Response reply = format.full_response(result);
      co_await exchange.respond(std::move(reply));
      co_return;
    }
    const std::vector<std::string> closing = format.close_events(result);
    for (const std::string& event : closing)
      if (!co_await exchange.send_chunk(event)) co_return;
    co_await exchange.end_stream();
  } catch (const std::exception&) {
    // Cancelled (client gone) or the connection failed: the sequence is
    // cancelled by unwinding; nothing is left to answer.
  }
}

awaitable<bool> CompletionRunner::token_fault(int produced, Sequence& seq,
                                              http::Exchange& exchange) {
  // Counted as tokens handed to readers, so a lone stream sees exactly N.
  const auto total = engine_.counters().tokens_delivered_total;
  switch (faults_.after_tokens(produced, total)) {
    case TokenFault::none:
      co_return true;
    case TokenFault::exit:
      exit_for_fault(fmt::format("the engine produced {} tokens (--exit-after-tokens)", total));
    case TokenFault::reset:
      exchange.abort_connection();
      co_return false;
    case TokenFault::stall: {
      // Hold the slot and the connection; run()'s race with
      // until_client_gone() cancels this wait when the client leaves.
      engine_.hold(seq);
      const auto executor = co_await net::this_coro::executor;
      net::steady_timer forever(executor, net::steady_timer::time_point::max());
      co_await forever.async_wait(use_tuple);
      co_return false;
    }
  }
  co_return false;
}

}  // namespace switchyard::sim
