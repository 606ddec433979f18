#include "openai/request_inspector.h"

#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <variant>
#include <vector>

#include "common/hash.h"
#include "openai/json_scan.h"
#include "openai/messages_checks.h"

namespace switchyard::openai {

namespace {

const char* type_name(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY:
      return "an array";
    case T::OBJECT:
      return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
      return "a number";
    case T::STRING:
      return "a string";
    case T::BOOL:
      return "a boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "a value";
}

FieldError wrong_type(std::string_view field, std::string_view expected, simdjson::dom::element e) {
  return FieldError{fmt::format("'{}' must be {}, not {}", field, expected, type_name(e.type())),
                    std::string(field)};
}

bool is_integer(simdjson::dom::element e) {
  return e.is_int64() || e.is_uint64();
}

// The field a body for `endpoint` must carry, and an alternative name that
// the engine accepts as well (llama.cpp's /embedding takes either).
struct Required {
  std::string_view name;
  std::string_view alternative;
  enum class Shape { array, string, string_or_array } shape;
};

std::optional<Required> required_field(Endpoint endpoint) {
  using S = Required::Shape;
  switch (endpoint) {
    case Endpoint::chat_completions:
    case Endpoint::apply_template:
    case Endpoint::messages:
    case Endpoint::count_tokens:
    case Endpoint::chat_input_tokens:
      return Required{"messages", {}, S::array};
    case Endpoint::responses:
    case Endpoint::responses_input_tokens:
      return Required{"input", {}, S::string_or_array};
    case Endpoint::completions:
    case Endpoint::native_completion:
      return Required{"prompt", {}, S::string_or_array};
    case Endpoint::embeddings:
      return Required{"input", {}, S::string_or_array};
    case Endpoint::embedding:
      return Required{"content", "input", S::string_or_array};
    case Endpoint::tokenize:
      return Required{"content", {}, S::string};
    case Endpoint::detokenize:
      return Required{"tokens", {}, S::array};
    case Endpoint::rerank:
      return Required{"query", {}, S::string};
    case Endpoint::infill:
    case Endpoint::stored_response:
    case Endpoint::audio:
    case Endpoint::engine_state:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<FieldError> check_shape(std::string_view key, const Required& r,
                                      simdjson::dom::element value) {
  switch (r.shape) {
    case Required::Shape::array:
      if (!value.is_array())
        return wrong_type(key,
                          r.name == "messages" ? "an array of messages"
                          : r.name == "tokens" ? "an array of token ids"
                                               : "an array",
                          value);
      break;
    case Required::Shape::string:
      if (!value.is_string()) return wrong_type(key, "a string", value);
      break;
    case Required::Shape::string_or_array:
      if (!value.is_string() && !value.is_array())
        return wrong_type(key, "a string or an array", value);
      break;
  }
  return std::nullopt;
}

Span span_of(std::string_view whole, std::string_view part) {
  return {static_cast<std::size_t>(part.data() - whole.data()), part.size()};
}

// Feeds `e` to the hash as its structure and values, not its text: what
// simdjson::minify would write, without building that string (a copy of the
// system prompt and the first messages on every request).
void hash_element(std::uint64_t& h, simdjson::dom::element e) {
  using hash::mix;
  const auto scalar = [&h](std::uint8_t tag, std::uint64_t bits) { h = mix(mix(h ^ tag) ^ bits); };
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: {
      // Named: a range over value_unsafe() of a temporary result dangles.
      const simdjson::dom::array items = e.get_array().value_unsafe();
      h = mix(h ^ '[');
      for (auto item : items) hash_element(h, item);
      h = mix(h ^ ']');
      break;
    }
    case simdjson::dom::element_type::OBJECT: {
      const simdjson::dom::object members = e.get_object().value_unsafe();
      h = mix(h ^ '{');
      for (auto [key, value] : members) {
        h = hash::piece(h, key, 'k');
        hash_element(h, value);
      }
      h = mix(h ^ '}');
      break;
    }
    case simdjson::dom::element_type::STRING:
      h = hash::piece(h, e.get_string().value_unsafe(), '"');
      break;
    case simdjson::dom::element_type::INT64:
      scalar('i', static_cast<std::uint64_t>(e.get_int64().value_unsafe()));
      break;
    case simdjson::dom::element_type::UINT64:
      scalar('u', e.get_uint64().value_unsafe());
      break;
    case simdjson::dom::element_type::DOUBLE:
      scalar('d', std::bit_cast<std::uint64_t>(e.get_double().value_unsafe()));
      break;
    case simdjson::dom::element_type::BOOL:
      h = mix(h ^ (e.get_bool().value_unsafe() ? 't' : 'f'));
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      h = mix(h ^ 'n');
      break;
  }
}

// The conversation hash over `system` (Anthropic's top-level field, the
// Responses API's `instructions`, or null) and the messages up to and
// including the first user message; a Responses `input` string is that
// message alone.
std::uint64_t conversation_hash(std::optional<simdjson::dom::element> system,
                                simdjson::dom::element messages) {
  std::uint64_t h = hash::kSeed;
  if (system && !system->is_null()) hash_element(h, *system);
  if (!messages.is_array()) {
    hash_element(h, messages);
    return h;
  }
  // Named: a range over value_unsafe() of a temporary result dangles.
  const simdjson::dom::array items = messages.get_array().value_unsafe();
  for (auto message : items) {
    hash_element(h, message);
    std::string_view role;
    if (!message["role"].get(role) && role == "user") break;
  }
  return h;
}

}  // namespace

bool takes_slot(Endpoint endpoint) {
  return endpoint != Endpoint::tokenize && endpoint != Endpoint::detokenize &&
         endpoint != Endpoint::apply_template && endpoint != Endpoint::count_tokens &&
         endpoint != Endpoint::responses_input_tokens && endpoint != Endpoint::chat_input_tokens &&
         endpoint != Endpoint::stored_response && endpoint != Endpoint::engine_state;
}

struct RequestInspector::Impl {
  simdjson::dom::parser dom;
  std::string refused_field;
  std::variant<RequestFacts, FieldError> inspect(std::string_view body, Endpoint endpoint);
};

RequestInspector::RequestInspector() : impl_(std::make_unique<Impl>()) {}
RequestInspector::~RequestInspector() = default;

namespace {

// The body's top-level fields, read one at a time into the request's facts.
class FieldReader {
 public:
  FieldReader(Endpoint endpoint, RequestFacts& facts)
      : required_(required_field(endpoint)),
        responses_api_(endpoint == Endpoint::responses ||
                       endpoint == Endpoint::responses_input_tokens),
        facts_(facts) {}

  std::optional<FieldError> read(std::string_view key, simdjson::dom::element value) {
    if (required_ && (key == required_->name ||
                      (!required_->alternative.empty() && key == required_->alternative)))
      return read_required(key, value);
    if (key == "system" || (key == "instructions" && responses_api_)) {
      if (key == "instructions" && !value.is_string() && !value.is_null())
        return wrong_type(key, "a string", value);
      system_ = value;
    } else if (key == "previous_response_id") {
      if (!value.is_string() && !value.is_null()) return wrong_type(key, "a string", value);
      if (value.is_string()) facts_.previous_response_id = value.get_string().value_unsafe();
    } else if (key == "model") {
      return model(value);
    } else if (key == "stream") {
      if (!value.is_bool() && !value.is_null()) return wrong_type(key, "a boolean", value);
      facts_.stream = value.is_bool() && value.get_bool().value_unsafe();
    } else if (key == "stream_options") {
      return stream_options(value);
    } else if (key == "max_tokens" || key == "max_output_tokens" ||
               key == "max_completion_tokens" || key == "n" || key == "n_predict") {
      return token_limit(key, value);
    } else if (key == "temperature" || key == "top_p") {
      if (!value.is_number() && !value.is_null()) return wrong_type(key, "a number", value);
    }
    return std::nullopt;
  }

  // After every field: the endpoint's required field was there.
  std::optional<FieldError> missing() const {
    if (!required_ || has_required_) return std::nullopt;
    if (!required_->alternative.empty())
      return FieldError{
          fmt::format("'{}' or '{}' is required", required_->name, required_->alternative),
          std::string(required_->name)};
    return FieldError{fmt::format("'{}' is required", required_->name),
                      std::string(required_->name)};
  }

  // The endpoint's required field (messages, prompt, input, ...), if any.
  const std::optional<Required>& required() const { return required_; }
  bool seen_model() const { return seen_model_; }
  bool seen_stream_options() const { return seen_stream_options_; }
  // The conversation the request continues, when it has messages.
  std::optional<std::uint64_t> conversation() const {
    if (!messages_) return std::nullopt;
    return conversation_hash(system_, *messages_);
  }

 private:
  std::optional<FieldError> read_required(std::string_view key, simdjson::dom::element value) {
    has_required_ = true;
    if (auto e = check_shape(key, *required_, value)) return e;
    if (required_->name == "messages" && value.get_array().size() == 0)
      return FieldError{"'messages' must not be empty", "messages"};
    if (required_->name == "messages" || responses_api_) messages_ = value;
    return std::nullopt;
  }

  std::optional<FieldError> model(simdjson::dom::element value) {
    // The gateway routes by it and rewrites it: one meaning only.
    if (seen_model_) return FieldError{"'model' appears more than once", "model"};
    seen_model_ = true;
    if (!value.is_string()) return wrong_type("model", "a string", value);
    facts_.model = std::string(value.get_string().value_unsafe());
    // Absent means the default model; empty is a mistake, not a choice.
    if (facts_.model.empty())
      return FieldError{"'model' must not be empty (leave it out for the default model)", "model"};
    return std::nullopt;
  }

  std::optional<FieldError> stream_options(simdjson::dom::element value) {
    if (seen_stream_options_)
      return FieldError{"'stream_options' appears more than once", "stream_options"};
    seen_stream_options_ = true;
    if (value.is_null()) return std::nullopt;
    if (!value.is_object()) return wrong_type("stream_options", "an object", value);
    auto include = value["include_usage"];
    if (include.error()) return std::nullopt;
    if (!include.is_bool() && !include.is_null())
      return wrong_type("stream_options.include_usage", "a boolean", include.value_unsafe());
    facts_.include_usage = include.is_bool() && include.get_bool().value_unsafe();
    return std::nullopt;
  }

  // max_tokens, max_output_tokens, max_completion_tokens, n_predict (the
  // first of them ranked here sets facts.max_tokens) and n.
  std::optional<FieldError> token_limit(std::string_view key, simdjson::dom::element value) {
    if (!is_integer(value) && !value.is_null()) return wrong_type(key, "an integer", value);
    const int rank = key == "max_tokens" || key == "max_output_tokens" ? 0
                     : key == "max_completion_tokens"                  ? 1
                     : key == "n_predict"                              ? 2
                                                                       : 3;
    if (value.is_null()) return std::nullopt;
    // A count above any int64 saturates: it reserves all there is, not nothing.
    const std::int64_t n = value.is_int64() ? value.get_int64().value_unsafe()
                                            : std::numeric_limits<std::int64_t>::max();
    // n_predict -1 is llama.cpp's "until the context is full"; n asks for choices.
    const std::int64_t least = rank == 2 ? -1 : rank == 3 ? 1 : 0;
    if (n < least)
      return FieldError{fmt::format("'{}' must be an integer >= {}", key, least), std::string(key)};
    if (rank < max_tokens_rank_ && n >= 0) {
      facts_.max_tokens = n;
      max_tokens_rank_ = rank;
    }
    return std::nullopt;
  }

  const std::optional<Required> required_;
  const bool responses_api_;
  RequestFacts& facts_;
  bool has_required_ = false;
  bool seen_model_ = false;
  bool seen_stream_options_ = false;
  int max_tokens_rank_ =
      3;  // of facts.max_tokens: 0 max_tokens, 1 max_completion_tokens, 2 n_predict
  std::optional<simdjson::dom::element> system_;
  std::optional<simdjson::dom::element> messages_;  // or the Responses API's input
};

// Spans for in-place rewrites and prefix matching, in one scan. The body is
// known to be valid JSON now, which is what the scan needs to be exact. The
// scan compares keys as written: a key spelled with escapes ("mod\u0065l")
// would be routed by its decoded name but not rewritten, so it is refused.
std::optional<FieldError> locate_spans(std::string_view body, Endpoint endpoint,
                                       const FieldReader& fields, RequestFacts& facts) {
  const auto& required = fields.required();
  const bool has_prompt = required && (required->name == "messages" || required->name == "prompt" ||
                                       endpoint == Endpoint::responses);
  const std::string_view keys[] = {"model", has_prompt ? required->name : std::string_view{}};
  std::optional<std::string_view> found[2];
  member_texts(body, std::span(keys, has_prompt ? 2 : 1), std::span(found, has_prompt ? 2 : 1));
  if (fields.seen_model()) {
    if (!found[0])
      return FieldError{"the key 'model' must be written without escape sequences", "model"};
    facts.model_token = span_of(body, *found[0]);
  }
  if (has_prompt && found[1]) facts.prompt = span_of(body, *found[1]);
  if (fields.seen_stream_options()) {
    auto raw = member_text(body, "stream_options");
    if (!raw)
      return FieldError{"the key 'stream_options' must be written without escape sequences",
                        "stream_options"};
    facts.stream_options = span_of(body, *raw);
    if (auto value = member_text(*raw, "include_usage"))
      facts.include_usage_value = span_of(body, *value);
  }
  return std::nullopt;
}

}  // namespace

std::variant<RequestFacts, FieldError> RequestInspector::Impl::inspect(std::string_view body,
                                                                       Endpoint endpoint) {
  if (body.empty()) return FieldError{"the request body is empty; expected a JSON object"};
  // The DOM pass validates the whole document (grammar and UTF-8) at several
  // GB/s; a scan below locates the tokens the gateway rewrites.
  simdjson::dom::element root;
  if (auto err = dom.parse(body.data(), body.size()).get(root)) {
    if (err == simdjson::UTF8_ERROR) return FieldError{"the request body is not valid UTF-8"};
    return FieldError{
        fmt::format("the request body is not valid JSON ({})", simdjson::error_message(err))};
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return FieldError{"the request body must be a JSON object"};

  RequestFacts facts;
  FieldReader fields(endpoint, facts);
  for (auto [key, value] : obj)
    if (auto e = fields.read(key, value)) return *e;
  if (auto e = fields.missing()) return *e;
  if (endpoint == Endpoint::messages || endpoint == Endpoint::count_tokens) {
    if (auto e = check_messages_body(obj, endpoint == Endpoint::messages)) return *e;
  }
  if (const auto conversation = fields.conversation()) facts.conversation = *conversation;
  if (auto e = locate_spans(body, endpoint, fields, facts)) return *e;
  return facts;
}

Result<RequestFacts> RequestInspector::inspect(std::string_view body, Endpoint endpoint) {
  auto outcome = impl_->inspect(body, endpoint);
  if (auto* refused = std::get_if<FieldError>(&outcome)) {
    impl_->refused_field = std::move(refused->field);
    return Error{std::move(refused->message)};
  }
  impl_->refused_field.clear();
  return std::move(std::get<RequestFacts>(outcome));
}

const std::string& RequestInspector::refused_field() const {
  return impl_->refused_field;
}

namespace {

struct Splice {
  Span where;  // length 0: an insertion at where.offset
  std::string text;
};

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  // Model names come from the config; escape anyway so the JSON stays valid.
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::vector<Splice> splices(std::string_view body, const RequestFacts& facts,
                            std::string_view model, bool force_usage) {
  std::vector<Splice> out;
  const std::string token = facts.form ? std::string(model) : json_string(model);
  if (facts.model_token.length > 0 &&
      body.substr(facts.model_token.offset, facts.model_token.length) != token)
    out.push_back({facts.model_token, token});
  if (force_usage && facts.stream && !facts.include_usage) {
    constexpr std::string_view kTrue = "true";
    if (facts.include_usage_value.length > 0) {
      out.push_back({facts.include_usage_value, std::string(kTrue)});
    } else if (facts.stream_options.length > 0) {
      const auto value = body.substr(facts.stream_options.offset, facts.stream_options.length);
      if (value == "null") {
        out.push_back({facts.stream_options, R"({"include_usage":true})"});
      } else {
        // Inserted as the object's first member; a comma unless it was empty.
        const bool empty = value.find_first_not_of(" \t\r\n", 1) == value.size() - 1;
        out.push_back({{facts.stream_options.offset + 1, 0},
                       empty ? R"("include_usage":true)" : R"("include_usage":true,)"});
      }
    } else {
      // The body is an object with at least one member (validated).
      out.push_back({{body.find('{') + 1, 0}, R"("stream_options":{"include_usage":true},)"});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Splice& a, const Splice& b) { return a.where.offset < b.where.offset; });
  return out;
}

}  // namespace

bool needs_rewrite(const RequestFacts& facts, std::string_view model, bool force_usage) {
  if (force_usage && facts.stream && !facts.include_usage) return true;
  // Without the body the token cannot be compared exactly; the name can.
  return facts.model_token.length > 0 && facts.model != model;
}

std::string rewrite_request(std::string_view body, const RequestFacts& facts,
                            std::string_view model, bool force_usage) {
  std::string out;
  out.reserve(body.size() + model.size() + 48);
  std::size_t at = 0;
  for (const auto& s : splices(body, facts, model, force_usage)) {
    out.append(body.substr(at, s.where.offset - at));
    out.append(s.text);
    at = s.where.offset + s.where.length;
  }
  out.append(body.substr(at));
  return out;
}

}  // namespace switchyard::openai
