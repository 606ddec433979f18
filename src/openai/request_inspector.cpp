#include "openai/request_inspector.h"

#include <simdjson.h>

#include <fmt/format.h>

#include "openai/json_scan.h"

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

Error wrong_type(std::string_view field, std::string_view expected, simdjson::dom::element e) {
  return Error{fmt::format("'{}' must be {}, not {}", field, expected, type_name(e.type()))};
}

bool is_integer(simdjson::dom::element e) {
  return e.is_int64() || e.is_uint64();
}

std::string_view required_field(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::chat_completions:
      return "messages";
    case Endpoint::completions:
      return "prompt";
    case Endpoint::embeddings:
      return "input";
    case Endpoint::tokenize:
      return "content";
    case Endpoint::detokenize:
      return "tokens";
  }
  return {};
}

}  // namespace

struct RequestInspector::Impl {
  simdjson::dom::parser dom;
};

RequestInspector::RequestInspector() : impl_(std::make_unique<Impl>()) {}
RequestInspector::~RequestInspector() = default;

Result<RequestFacts> RequestInspector::inspect(std::string_view body, Endpoint endpoint) {
  if (body.empty()) return Error{"the request body is empty; expected a JSON object"};
  // The DOM pass validates the whole document (grammar and UTF-8) at several
  // GB/s; a scan below locates the model token.
  simdjson::dom::element root;
  if (auto err = impl_->dom.parse(body.data(), body.size()).get(root)) {
    if (err == simdjson::UTF8_ERROR) return Error{"the request body is not valid UTF-8"};
    return Error{
        fmt::format("the request body is not valid JSON ({})", simdjson::error_message(err))};
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return Error{"the request body must be a JSON object"};

  RequestFacts facts;
  const auto required = required_field(endpoint);
  bool has_required = false;
  bool seen_model = false;
  for (auto [key, value] : obj) {
    if (key == required) {
      has_required = true;
      if (endpoint == Endpoint::chat_completions && !value.is_array())
        return wrong_type(key, "an array of messages", value);
      if (endpoint == Endpoint::tokenize && !value.is_string())
        return wrong_type(key, "a string", value);
      if (endpoint == Endpoint::detokenize && !value.is_array())
        return wrong_type(key, "an array of token ids", value);
      if ((endpoint == Endpoint::completions || endpoint == Endpoint::embeddings) &&
          !value.is_string() && !value.is_array())
        return wrong_type(key, "a string or an array", value);
    } else if (key == "model") {
      // The gateway routes by it and rewrites it: one meaning only.
      if (seen_model) return Error{"'model' appears more than once"};
      seen_model = true;
      if (!value.is_string()) return wrong_type(key, "a string", value);
      facts.model = std::string(value.get_string().value_unsafe());
    } else if (key == "stream") {
      if (!value.is_bool() && !value.is_null()) return wrong_type(key, "a boolean", value);
      facts.stream = value.is_bool() && value.get_bool().value_unsafe();
    } else if (key == "stream_options") {
      if (value.is_null()) continue;
      if (!value.is_object()) return wrong_type(key, "an object", value);
      auto include = value["include_usage"];
      if (!include.error()) {
        if (!include.is_bool() && !include.is_null())
          return wrong_type("stream_options.include_usage", "a boolean", include.value_unsafe());
        facts.include_usage = include.is_bool() && include.get_bool().value_unsafe();
      }
    } else if (key == "max_tokens" || key == "max_completion_tokens" || key == "n") {
      if (!is_integer(value) && !value.is_null()) return wrong_type(key, "an integer", value);
    } else if (key == "temperature" || key == "top_p") {
      if (!value.is_number() && !value.is_null()) return wrong_type(key, "a number", value);
    }
  }
  if (!has_required && !required.empty()) return Error{fmt::format("'{}' is required", required)};
  if (endpoint == Endpoint::chat_completions && obj["messages"].get_array().size() == 0)
    return Error{"'messages' must not be empty"};

  if (!facts.model.empty()) {
    // The model token's span, for an in-place rewrite. The body is known to
    // be valid JSON now, which is what the scan needs to be exact.
    if (auto raw = member_text(body, "model")) {
      facts.model_offset = static_cast<std::size_t>(raw->data() - body.data());
      facts.model_length = raw->size();
    }
  }
  return facts;
}

std::string replace_model(std::string_view body, const RequestFacts& facts,
                          std::string_view model) {
  std::string out;
  out.reserve(body.size() + model.size() + 2);
  out.append(body.substr(0, facts.model_offset));
  out.push_back('"');
  // Model names come from the config; escape anyway so the JSON stays valid.
  for (char c : model) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  out.append(body.substr(facts.model_offset + facts.model_length));
  return out;
}

}  // namespace switchyard::openai
