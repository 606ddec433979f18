// Audio transcription and translation (POST /v1/audio/transcriptions and
// /translations, a multipart form with the audio as `file`), as both engines
// serve them with a speech model loaded. The simulator hears nothing: its
// text is words of its vocabulary drawn from the file's bytes, so the same
// audio always gives the same text, about one word per 4 KB (clamped to
// 1..200).
#pragma once

#include <boost/json/value.hpp>

#include <string>
#include <variant>

#include "http/message.h"
#include "sim/completion.h"
#include "sim/tokenizer.h"

namespace switchyard::sim {

struct Transcription {
  std::string text;
  bool plain = false;  // response_format text, srt or vtt: the text alone, text/plain
};

std::variant<Transcription, RequestError> transcribe(const http::Request& request,
                                                     const Tokenizer& tokenizer);

bool is_transcription_path(std::string_view path);

// The answer: {"text": ...} through the dialect's `json_reply`, or the text
// alone as text/plain.
http::Response transcription_reply(const Transcription& t,
                                   http::Response (*json_reply)(int, const boost::json::value&));

}  // namespace switchyard::sim
