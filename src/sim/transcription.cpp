#include "sim/transcription.h"

#include <boost/json.hpp>

#include <algorithm>
#include <random>

#include "openai/multipart_form.h"

namespace switchyard::sim {

bool is_transcription_path(std::string_view path) {
  return path == "/v1/audio/transcriptions" || path == "/v1/audio/translations";
}

http::Response transcription_reply(const Transcription& t,
                                   http::Response (*json_reply)(int, const boost::json::value&)) {
  if (!t.plain) return json_reply(200, boost::json::object{{"text", t.text}});
  http::Response r;
  r.status = 200;
  r.headers.add("Content-Type", "text/plain; charset=utf-8");
  mark_simulated(r.headers);
  r.body = t.text;
  return r;
}

std::variant<Transcription, RequestError> transcribe(const http::Request& request,
                                                     const Tokenizer& tokenizer) {
  const std::string_view body = request.body;
  const std::string_view type = request.head.headers.find("content-type").value_or("");
  auto form = openai::inspect_audio_form(body, type);
  if (auto* refused = std::get_if<openai::ApiError>(&form))
    return RequestError{refused->status, refused->message, refused->param};
  std::string_view audio;
  Transcription t;
  for (const auto& p : std::get<openai::AudioForm>(form).parts) {
    const std::string_view value = body.substr(p.value.offset, p.value.length);
    if (p.name == "file") audio = value;
    if (p.name == "response_format") t.plain = value == "text" || value == "srt" || value == "vtt";
  }
  // FNV-1a of the audio seeds the words.
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : audio) hash = (hash ^ c) * 1099511628211ull;
  std::mt19937_64 rng(hash);
  std::uniform_int_distribution<int> pick(0, tokenizer.spaced_words() - 1);
  const std::size_t words = std::clamp<std::size_t>(audio.size() / 4096, 1, 200);
  for (std::size_t i = 0; i < words; ++i)
    t.text += tokenizer.piece(tokenizer.first_word_token() + pick(rng));
  if (t.text.starts_with(' ')) t.text.erase(0, 1);
  return t;
}

}  // namespace switchyard::sim
