// multipart/form-data (RFC 7578), as OpenAI's audio routes take it
// (/v1/audio/transcriptions and /translations: the audio as a `file` part,
// `model`, `language`, `response_format`, `stream`, ... as fields). Parts are
// found without copying the body: an audio file is most of it.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "openai/api_error.h"
#include "openai/request_inspector.h"

namespace switchyard::openai {

struct FormPart {
  std::string_view name;      // the Content-Disposition's name
  std::string_view filename;  // its filename, when the part is a file
  bool is_file = false;
  Span value;  // the part's bytes in the body
};

// The boundary of a `multipart/form-data; boundary=...` Content-Type.
Result<std::string> form_boundary(std::string_view content_type);

// The parts of `body`, in order; the error says what is malformed.
Result<std::vector<FormPart>> parse_form(std::string_view body, std::string_view boundary);

// An audio request's facts: `model` (its value's span, rewritten as plain
// text: RequestFacts::form) and `stream`; and its parts, for an engine's
// other fields. A 400 naming the field when the body is not a form of this
// Content-Type or has no `file`.
struct AudioForm {
  RequestFacts facts;
  std::vector<FormPart> parts;
};
std::variant<AudioForm, ApiError> inspect_audio_form(std::string_view body,
                                                     std::string_view content_type);

}  // namespace switchyard::openai
