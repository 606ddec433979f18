#include "gateway/request_tracing.h"

#include <fmt/format.h>

#include "gateway/log_target.h"
#include "http/fetch.h"

namespace switchyard::gateway {

namespace {

// How long one export may take: a collector that does not answer within
// it costs the batch, never more (the queue fills meanwhile and drops).
constexpr std::chrono::milliseconds kExportTimeout{2000};

std::unique_ptr<obs::TraceExporter> otlp_exporter(const config::TracingOptions& options) {
  obs::SpanSource source;
  source.resource.push_back({"service.name", options.service_name});
  source.scope_name = "switchyard";
  std::string url = otlp_traces_url(options.endpoint);
  auto send = [url](const std::string& body) -> std::optional<std::string> {
    http::FetchRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Content-Type", "application/json"}};
    request.body = body;
    request.timeout = kExportTimeout;
    auto reply = http::fetch(request);
    if (!reply) return reply.error().message;
    if (reply->status / 100 != 2)
      return fmt::format("{} answered {} {}", url, reply->status, reply->body.substr(0, 200));
    return std::nullopt;
  };
  return std::make_unique<obs::TraceExporter>(std::move(source), std::move(send), url);
}

}  // namespace

std::string_view genai_operation(openai::Endpoint endpoint) {
  using openai::Endpoint;
  switch (endpoint) {
    case Endpoint::chat_completions:
    case Endpoint::messages:
    case Endpoint::responses:
      return "chat";
    case Endpoint::completions:
    case Endpoint::native_completion:
    case Endpoint::infill:
      return "text_completion";
    case Endpoint::embeddings:
    case Endpoint::embedding:
      return "embeddings";
    case Endpoint::rerank:
      return "rerank";
    case Endpoint::tokenize:
      return "tokenize";
    case Endpoint::detokenize:
      return "detokenize";
    case Endpoint::apply_template:
      return "apply_template";
    case Endpoint::count_tokens:
    case Endpoint::responses_input_tokens:
    case Endpoint::chat_input_tokens:
      return "count_tokens";
    case Endpoint::stored_response:
      return "stored_response";
    case Endpoint::audio:
      return "transcription";
    case Endpoint::engine_state:
      return "engine_state";
  }
  return "unknown";
}

std::string otlp_traces_url(const std::string& endpoint) {
  std::string_view base(endpoint);
  if (base.ends_with("/v1/traces")) return endpoint;
  while (base.ends_with('/')) base.remove_suffix(1);
  return std::string(base) + "/v1/traces";
}

RequestTracing::RequestTracing(const config::TracingOptions& options)
    : RequestTracing(options.sample, otlp_exporter(options)) {}

RequestTracing::RequestTracing(double sample, std::unique_ptr<obs::TraceExporter> exporter)
    : sample_(sample), exporter_(std::move(exporter)) {}

std::optional<obs::RequestTrace> RequestTracing::start(const http::RequestHead& head) {
  if (!exporter_->accepting()) {
    exporter_->untraced();
    return std::nullopt;
  }
  std::optional<obs::TraceParent> parent;
  if (auto header = head.headers.find("traceparent")) parent = obs::parse_traceparent(*header);
  // Parent-based: a client's decision stands for its trace; new traces by ratio.
  const bool sampled = parent ? parent->sampled : sample_ >= 1 || coin_(rng_) < sample_;
  // Named once the model is known (finish); the path until then.
  return obs::RequestTrace(std::string(head.path()), parent, sampled, rng_);
}

void RequestTracing::finish(RequestContext& ctx) {
  if (!ctx.trace) return;
  auto& t = *ctx.trace;
  if (!t.sampled()) return;
  const auto& r = ctx.record;
  const auto root = obs::RequestTrace::root;
  const auto operation = genai_operation(*ctx.route.endpoint);
  const auto set = [&](std::string key, obs::AttributeValue value) {
    t.set(root, std::move(key), std::move(value));
  };
  set("gen_ai.operation.name", std::string(operation));
  if (!ctx.client_model.empty()) set("gen_ai.request.model", ctx.client_model);
  if (!ctx.model.empty()) set("gen_ai.response.model", ctx.model);
  if (ctx.facts.max_tokens) set("gen_ai.request.max_tokens", *ctx.facts.max_tokens);
  if (r.usage) {
    set("gen_ai.usage.input_tokens", std::int64_t{r.usage->prompt_tokens});
    set("gen_ai.usage.output_tokens", std::int64_t{r.usage->completion_tokens});
    set("switchyard.cached_tokens", std::int64_t{r.usage->cached_tokens});
  }
  if (auto host = ctx.request.head.headers.find("host")) set("server.address", std::string(*host));
  set("http.request.method", ctx.request.head.method);
  std::string scratch;
  set("url.path", std::string(log_target(ctx.request.head.path(), scratch)));
  set("http.response.status_code", std::int64_t{r.logged_status()});
  set("switchyard.request_id", r.id);
  set("switchyard.outcome", std::string(to_string(r.outcome())));
  if (!ctx.key_name.empty()) set("switchyard.key", ctx.key_name);
  if (!ctx.session.empty()) set("switchyard.session", ctx.session);
  if (!r.instance.empty()) set("switchyard.instance", r.instance);
  set("switchyard.retries", std::int64_t{std::max(r.attempts - 1, 0)});
  if (r.queued > 0) set("switchyard.queued_seconds", r.queued);
  const std::string_view model = ctx.client_model.empty() ? ctx.model : ctx.client_model;
  std::vector<obs::Span> spans = t.take();
  obs::Span& root_span = spans[root];
  root_span.name = model.empty() ? std::string(operation) : fmt::format("{} {}", operation, model);
  // A server span is an error on 5xx (a 4xx is the client's), or when the
  // engine failed mid-stream.
  if (r.logged_status() >= 500 || r.upstream_failed) {
    root_span.status = obs::SpanStatus::error;
    root_span.status_message = r.error_code.empty() ? to_string(r.outcome()) : r.error_code;
  }
  exporter_->submit(std::move(spans));
}

}  // namespace switchyard::gateway
