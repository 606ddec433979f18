// What a client sees of an engine's response, changed as little as
// possible: the model named as the client asked for it (llama-server names
// its file path unless started with --alias), the usage-only chunk dropped
// when the gateway asked for it and the client did not, and the usage (and a
// Responses API response's id) noted on the way past. Bytes are spliced,
// never re-serialised.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "openai/delta_template.h"
#include "openai/usage.h"

namespace switchyard::openai {

// The member a stream's usage comes in: OpenAI's and Anthropic's `usage`, or
// llama.cpp's own `tokens_predicted` (/completion, /infill). Looking for the
// one the endpoint uses halves the search every event costs.
enum class UsageMember { usage, tokens_predicted };

// A model member a stream's events carry, shared by the streams that carry
// the same one (response_rewrite.cpp).
struct SeenModelMember;

class ResponseRewriter {
 public:
  // `client_model`: the name the client asked for (empty: leave names as
  // they are). `strip_usage_chunk`: the client did not ask for the stream's
  // usage chunk (`"choices":[]` with `usage`), which the gateway forced.
  // `note_response_id`: the answer is the Responses API's (response_id()).
  ResponseRewriter(std::string client_model, bool strip_usage_chunk,
                   UsageMember stream_usage = UsageMember::usage, bool note_response_id = false);
  ~ResponseRewriter();

  // A whole non-streamed JSON body, rewritten in place.
  void rewrite_body(std::string& json);

  // One SSE event, its blank line included: appends to `out` what the client
  // should get of it (nothing for a stripped chunk). True when the event
  // carries generated text (a chat or completion delta, an Anthropic text
  // delta): engines stream one token per such event by default, so counting
  // them measures generation as it happens.
  bool rewrite_event(std::string_view event, std::string& out);
  // rewrite_event() for the event `bytes` start with, when it has the last
  // text delta's shape (its end then known without a search): its length,
  // what the client gets of it appended to `out`. 0, nothing appended, when
  // it has not: the caller finds the event's end and calls rewrite_event().
  std::size_t rewrite_known_event(std::string_view bytes, std::string& out);

  // What is still held back at the end of a stream (a finish chunk whose
  // usage chunk never came), appended to `out`.
  void finish_stream(std::string& out);

  // Usage seen so far (merged over a stream's events).
  const std::optional<Usage>& usage() const { return usage_; }
  // The id of the response the body or the stream's first events carry
  // (`resp_...`); empty when none was seen (or not asked for).
  const std::string& response_id() const { return response_id_; }

 private:
  // The model token in `json` (a view into it) when it is not the client's.
  std::optional<std::string_view> model_to_replace(std::string_view json);
  // Appends `text` to `out` with `token` (a view into it) replaced.
  void splice(std::string_view text, std::string_view token, std::string& out) const;
  // Merges `u`, when there is one, into the usage seen so far.
  void note_usage(const std::optional<Usage>& u);
  // Notes the response id `json` carries, while none is known.
  void note_response_id(std::string_view json);

  std::string model_token_;  // the client's model as a JSON string; empty: no rewrite
  bool strip_usage_chunk_;
  // While stripping: the finish chunk as the client gets it, held until the
  // next event shows whether a usage chunk with more members (llama.cpp's
  // `timings`) follows, whose members it then carries.
  std::string held_finish_;
  UsageMember stream_usage_;
  std::optional<Usage> usage_;
  bool note_response_id_;
  std::string response_id_;
  // The model member as the first scan found it (model_to_replace).
  struct SeenModel {
    std::shared_ptr<const SeenModelMember> model;
    std::size_t token_size = 0;
    bool is_clients = false;  // the token already names the client's model
  };
  std::optional<SeenModel> seen_;
  DeltaTemplate last_delta_;
};

}  // namespace switchyard::openai
