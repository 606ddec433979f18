#include "obs/request_trace.h"

namespace switchyard::obs {

RequestTrace::RequestTrace(std::string root_name, const std::optional<TraceParent>& parent,
                           bool sampled, std::mt19937_64& rng)
    : trace_id_(parent ? parent->trace_id : new_trace_id(rng)), sampled_(sampled), rng_(&rng) {
  Span& root_span = spans_.emplace_back();
  root_span.trace_id = trace_id_;
  root_span.id = new_span_id(*rng_);
  if (parent) root_span.parent = parent->span_id;
  root_span.name = std::move(root_name);
  root_span.kind = SpanKind::server;
  root_span.start = std::chrono::system_clock::now();
}

RequestTrace::Index RequestTrace::open(std::string name, SpanKind kind, Index parent) {
  Span& s = spans_.emplace_back();
  s.trace_id = trace_id_;
  s.id = new_span_id(*rng_);
  s.parent = spans_[parent].id;
  s.name = std::move(name);
  s.kind = kind;
  s.start = std::chrono::system_clock::now();
  return spans_.size() - 1;
}

void RequestTrace::close(Index span, SpanStatus status, std::string message) {
  Span& s = spans_[span];
  s.end = std::chrono::system_clock::now();
  s.status = status;
  if (status == SpanStatus::error) s.status_message = std::move(message);
}

void RequestTrace::set(Index span, std::string key, AttributeValue value) {
  auto& attributes = spans_[span].attributes;
  for (auto& a : attributes)
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  attributes.push_back({std::move(key), std::move(value)});
}

void RequestTrace::event(Index span, std::string name) {
  spans_[span].events.push_back({std::move(name), std::chrono::system_clock::now()});
}

std::string RequestTrace::traceparent(Index span) const {
  return format_traceparent(trace_id_, spans_[span].id, sampled_);
}

std::vector<Span> RequestTrace::take() {
  if (!spans_.empty() && spans_[root].end == SystemTime()) close(root, spans_[root].status);
  return std::move(spans_);
}

ScopedSpan::ScopedSpan(std::optional<RequestTrace>& trace, std::string_view name, SpanKind kind)
    : trace_(trace ? &*trace : nullptr) {
  if (trace_) index_ = trace_->open(std::string(name), kind);
}

ScopedSpan::~ScopedSpan() {
  if (trace_) trace_->close(index_, status_, std::move(message_));
}

void ScopedSpan::fail(std::string_view message) {
  status_ = SpanStatus::error;
  if (trace_) message_ = message;
}

std::string ScopedSpan::traceparent() const {
  return trace_ ? trace_->traceparent(index_) : std::string();
}

}  // namespace switchyard::obs
