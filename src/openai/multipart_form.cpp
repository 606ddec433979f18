#include "openai/multipart_form.h"

#include <fmt/format.h>

#include "http/message.h"

namespace switchyard::openai {

namespace {

constexpr std::string_view kCrlf = "\r\n";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls on_param(key, value) for each `; key=value` of a header value after
// its first item, quotes taken off the value.
template <class F>
void header_params(std::string_view value, F on_param) {
  std::size_t at = value.find(';');
  while (at != std::string_view::npos) {
    const std::size_t next = value.find(';', at + 1);
    const std::string_view param = trim(value.substr(at + 1, next - at - 1));
    const std::size_t eq = param.find('=');
    if (eq != std::string_view::npos) {
      std::string_view v = trim(param.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      on_param(trim(param.substr(0, eq)), v);
    }
    at = next;
  }
}

// The part's name and filename from its headers' Content-Disposition.
bool read_disposition(std::string_view headers, FormPart& part) {
  bool found = false;
  while (!headers.empty()) {
    const std::size_t eol = headers.find(kCrlf);
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos ||
        !http::iequals(line.substr(0, colon), "content-disposition"))
      continue;
    header_params(line.substr(colon + 1), [&](std::string_view key, std::string_view value) {
      if (http::iequals(key, "name")) {
        part.name = value;
        found = true;
      } else if (http::iequals(key, "filename")) {
        part.filename = value;
        part.is_file = true;
      }
    });
  }
  return found;
}

}  // namespace

Result<std::string> form_boundary(std::string_view content_type) {
  const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  if (!http::iequals(type, "multipart/form-data"))
    return Error{fmt::format("the audio routes take multipart/form-data, not '{}'", type)};
  std::string boundary;
  header_params(content_type, [&](std::string_view key, std::string_view value) {
    if (http::iequals(key, "boundary")) boundary = std::string(value);
  });
  if (boundary.empty() || boundary.size() > 70)
    return Error{"the Content-Type's 'boundary' is missing or longer than 70 characters"};
  return boundary;
}

Result<std::vector<FormPart>> parse_form(std::string_view body, std::string_view boundary) {
  const std::string delimiter = fmt::format("--{}", boundary);
  const std::string next = fmt::format("\r\n--{}", boundary);
  if (!body.starts_with(delimiter)) return Error{"the body does not start with its boundary"};
  std::vector<FormPart> parts;
  std::size_t at = delimiter.size();
  for (;;) {
    if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
    if (body.substr(at, 2) != kCrlf) return Error{"a boundary is not followed by a line end"};
    at += 2;
    const std::size_t head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string_view::npos) return Error{"a part's headers do not end"};
    FormPart part;
    if (!read_disposition(body.substr(at, head_end - at), part))
      return Error{"a part has no Content-Disposition with a name"};
    const std::size_t value_at = head_end + 4;
    const std::size_t end = body.find(next, value_at);
    if (end == std::string_view::npos) return Error{"the body ends before its closing boundary"};
    part.value = Span{value_at, end - value_at};
    parts.push_back(part);
    at = end + next.size();
  }
}

std::variant<AudioForm, ApiError> inspect_audio_form(std::string_view body,
                                                     std::string_view content_type) {
  auto boundary = form_boundary(content_type);
  if (!boundary) return ApiError::bad_request(boundary.error().message);
  auto parts = parse_form(body, *boundary);
  if (!parts)
    return ApiError::bad_request(fmt::format("the form is malformed: {}", parts.error().message));
  AudioForm form{RequestFacts{}, std::move(*parts)};
  RequestFacts& facts = form.facts;
  facts.form = true;
  bool file = false;
  for (const FormPart& p : form.parts) {
    const std::string_view value = body.substr(p.value.offset, p.value.length);
    if (p.name == "file") {
      file = true;
    } else if (p.name == "model") {
      if (value.empty())
        return ApiError::bad_request(
            "'model' must not be empty (leave it out for the default model)", "model");
      facts.model = std::string(value);
      facts.model_token = p.value;
    } else if (p.name == "stream") {
      facts.stream = value == "true";
    }
  }
  if (!file) return ApiError::bad_request("'file' is required: the audio, as a form file", "file");
  return form;
}

}  // namespace switchyard::openai
