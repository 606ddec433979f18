#include "bench/stream_parser.h"

#include <boost/json.hpp>

namespace switchyard::bench {

namespace json = boost::json;

namespace {

long int_field(const json::object& o, std::string_view key, long fallback) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return fallback;
  if (v->is_int64()) return static_cast<long>(v->as_int64());
  if (v->is_uint64()) return static_cast<long>(v->as_uint64());
  if (v->is_double()) return static_cast<long>(v->as_double());
  return fallback;
}

// The generated text a chunk carries (chat delta content or reasoning, or a
// text completion's text); empty when it carries none.
std::string_view chunk_text(const json::object& choice) {
  if (const auto* delta = choice.if_contains("delta"); delta && delta->is_object()) {
    for (const char* key : {"content", "reasoning_content", "reasoning"}) {
      const auto* c = delta->as_object().if_contains(key);
      if (c && c->is_string() && !c->as_string().empty()) return c->as_string();
    }
    return {};
  }
  if (const auto* t = choice.if_contains("text"); t && t->is_string()) return t->as_string();
  return {};
}

}  // namespace

double RequestRecord::tpot_ms() const {
  const long n = output_tokens();
  if (n < 2 || ttft_ms < 0 || last_token_ms < ttft_ms) return -1;
  return (last_token_ms - ttft_ms) / static_cast<double>(n - 1);
}

void StreamParser::on_data(std::string_view data, double at_ms) {
  if (data.empty()) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  boost::system::error_code ec;
  auto value = json::parse(data, ec);
  if (ec || !value.is_object()) {
    if (record_.error.empty()) {
      record_.error = "protocol";
      record_.error_detail = "a stream event is not a JSON object";
    }
    return;
  }
  const auto& o = value.as_object();
  if (const auto* err = o.if_contains("error")) {
    record_.error = "stream_error";
    const auto* msg = err->is_object() ? err->as_object().if_contains("message") : nullptr;
    record_.error_detail =
        msg && msg->is_string() ? std::string(msg->as_string()) : json::serialize(*err);
    return;
  }
  if (const auto* choices = o.if_contains("choices"); choices && choices->is_array()) {
    for (const auto& c : choices->as_array()) {
      if (!c.is_object()) continue;
      const auto& choice = c.as_object();
      if (record_.keep_content) {
        const auto* delta = choice.if_contains("delta");
        const auto* c = delta && delta->is_object() ? delta->as_object().if_contains("content")
                                                    : choice.if_contains("text");
        if (c && c->is_string()) record_.content.append(c->as_string());
      }
      if (!chunk_text(choice).empty()) {
        if (record_.ttft_ms < 0) record_.ttft_ms = at_ms;
        if (last_chunk_ms_ >= 0) record_.itl_ms.push_back(at_ms - last_chunk_ms_);
        last_chunk_ms_ = at_ms;
        record_.last_token_ms = at_ms;
        ++record_.content_chunks;
      }
      if (const auto* f = choice.if_contains("finish_reason"); f && f->is_string())
        record_.finish_reason = std::string(f->as_string());
    }
  }
  if (const auto* u = o.if_contains("usage"); u && u->is_object()) {
    const auto& usage = u->as_object();
    record_.prompt_tokens = int_field(usage, "prompt_tokens", record_.prompt_tokens);
    record_.completion_tokens = int_field(usage, "completion_tokens", record_.completion_tokens);
    if (const auto* d = usage.if_contains("prompt_tokens_details"); d && d->is_object())
      record_.cached_tokens = int_field(d->as_object(), "cached_tokens", record_.cached_tokens);
  }
  if (const auto* t = o.if_contains("timings"); t && t->is_object()) {
    const auto& timings = t->as_object();
    record_.cached_tokens = int_field(timings, "cache_n", record_.cached_tokens);
    if (const auto* p = timings.if_contains("predicted_per_second"); p && p->is_number())
      record_.self_reported_tps = p->to_number<double>();
  }
}

void StreamParser::finish(double end_ms) {
  record_.e2e_ms = end_ms;
  // Several tokens per chunk (speculative decoding, vLLM's stream interval):
  // spread each gap over the tokens it delivered, so ITL stays per token.
  if (record_.completion_tokens > 0 && record_.content_chunks > 0 &&
      record_.completion_tokens != record_.content_chunks) {
    const double per_chunk = static_cast<double>(record_.completion_tokens) /
                             static_cast<double>(record_.content_chunks);
    if (per_chunk > 1.0)
      for (auto& gap : record_.itl_ms) gap /= per_chunk;
  }
  if (!record_.error.empty()) return;
  if (!done_ && record_.finish_reason.empty()) {
    record_.error = "truncated";
    record_.error_detail = "the stream ended without a finish_reason or [DONE]";
  }
}

}  // namespace switchyard::bench
