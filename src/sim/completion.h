// What both dialects share about a completion: the request fields they read
// (one parser), the chat template, and the run itself — submitting to the
// engine, waiting through the queue and prefill, streaming tokens, the
// injected faults, stopping when the client leaves. A dialect contributes
// only its wire format (CompletionFormat) and its error bodies.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <climits>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "http/exchange.h"
#include "sim/engine.h"
#include "sim/faults.h"

namespace switchyard::sim {

// Which request shape: OpenAI chat, OpenAI text, llama-server's /completion,
// Anthropic's Messages API, OpenAI's Responses API.
enum class Endpoint { chat, text, native, messages, responses };

struct CompletionJob {
  Endpoint endpoint = Endpoint::chat;
  std::vector<Token> prompt;
  std::string prompt_text;        // what the prompt reads as (native echoes it)
  std::optional<int> max_tokens;  // nullopt: until the model stops or the context ends
  int min_tokens = 0;             // vLLM: no stop before this many tokens
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool cache_prompt = true;    // llama-server: reuse the slot's prefix
  int id_slot = -1;            // llama-server: run on this slot
  std::string model;
  // Set by the dialect from its context limit: output tokens that still fit.
  int context_left = INT_MAX;
  // The Responses API's `store`, on an engine that keeps responses.
  bool store_response = false;
};

// A request the dialect refuses; it renders status and message in its own
// error shape. `param` names the offending field when there is one.
struct RequestError {
  int status = 400;
  std::string message;
  std::string param;
  std::string type = {};  // the error's type; empty: the dialect's for the status
};

// A boolean field of a request body; `fallback` when it is absent or not a boolean.
bool bool_field(const boost::json::object& body, std::string_view key, bool fallback = false);

// The prompt a chat request turns into: the ChatML template llama-server
// applies to a model without one (shared/reference/llamacpp/props.body).
std::variant<std::string, RequestError> apply_chat_template(const boost::json::object& body);

// Reads a completion request of `endpoint`'s shape. Token-id prompts must be
// ids of the vocabulary.
std::variant<CompletionJob, RequestError> parse_completion(Endpoint endpoint,
                                                           const boost::json::object& body,
                                                           const Tokenizer& tokenizer,
                                                           const std::string& default_model);

// How a completion ended, for the final chunk or body.
struct CompletionResult {
  std::vector<Token> tokens;
  std::string text;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  bool stopped = false;  // the model ended it (EOS), not a limit
  double prompt_ms = 0;
  double predicted_ms = 0;
  double over_report = 1;  // multiplies the self-reported generation speed
  int slot = -1;
  SeqId task = 0;
};

// The prompt as admitted, known when the first token is.
struct PromptStats {
  int prompt_tokens = 0;
  int cached_tokens = 0;
};

// One dialect's wire format for one completion request.
// One named SSE event, as Anthropic's and the Responses API's streams send
// them: `event: NAME`, its JSON data, a blank line.
std::string named_event(std::string_view name, const boost::json::object& data);

class CompletionFormat {
 public:
  virtual ~CompletionFormat() = default;
  virtual http::Headers stream_headers() const = 0;
  // Whole SSE events ("data: ...\n\n"), in order.
  virtual std::vector<std::string> open_events(const PromptStats&) { return {}; }
  // `count` is the number of tokens produced so far, this one included.
  virtual std::string token_event(Token token, std::string_view piece, int count) = 0;
  virtual std::vector<std::string> close_events(const CompletionResult& result) = 0;
  virtual http::Response full_response(const CompletionResult& result) = 0;
};

// Runs completions on the engine. One per dialect handler; one thread.
class CompletionRunner {
 public:
  // Both must outlive the runner.
  CompletionRunner(Engine& engine, Faults& faults) : engine_(engine), faults_(faults) {}

  // What a dialect supplies: its 503 body, and its format for a completion
  // (given the response's Unix time).
  using Unavailable = std::function<http::Response(std::string_view message)>;
  using MakeFormat =
      std::function<std::unique_ptr<CompletionFormat>(const CompletionJob&, std::int64_t created)>;

  // The end of every request path: while the model is "loading" everything
  // gets `unavailable`; a parsed completion (`job`) runs unless
  // --fail-before-first-byte refuses it; anything else is answered `reply`.
  // Never throws. May end the process (--exit-after-*).
  boost::asio::awaitable<void> answer(std::optional<CompletionJob> job, http::Response reply,
                                      const Unavailable& unavailable, const MakeFormat& make_format,
                                      http::Exchange& exchange);

  // Whether the model is still loading (--startup-delay).
  bool loading() const { return faults_.loading(); }

 private:
  boost::asio::awaitable<void> run(CompletionJob job, CompletionFormat& format,
                                   http::Exchange& exchange);
  boost::asio::awaitable<void> complete(CompletionJob job, CompletionFormat& format,
                                        http::Exchange& exchange);
  // Carries out the fault due after `produced` tokens; false means stop
  // (connection reset, or the stall ended because the client left).
  boost::asio::awaitable<bool> token_fault(int produced, Sequence& seq, http::Exchange& exchange);

  Engine& engine_;
  Faults& faults_;
};

// Helpers the dialects share.
// Adds the header that tells a client it talks to a simulator (no real engine
// sends it); every response of both dialects carries it.
void mark_simulated(http::Headers& headers);
std::string sse_event(const boost::json::value& v);
double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b);

}  // namespace switchyard::sim
