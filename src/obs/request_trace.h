// The spans of one request, gathered as it passes the gateway's stages: a
// root span opened on arrival and a child per wait and per upstream attempt.
// The stages only record; the finished spans go to the exporter from one
// place at the request's end (gateway/accounting).
#pragma once

#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "obs/span.h"
#include "obs/trace_context.h"

namespace switchyard::obs {

class RequestTrace {
 public:
  using Index = std::size_t;
  static constexpr Index root = 0;

  // Opens the root span: a child of `parent` (the client's traceparent)
  // when given, else the first span of a new trace. `sampled`: whether the
  // spans are exported (the ids travel on either way).
  RequestTrace(std::string root_name, const std::optional<TraceParent>& parent, bool sampled,
               std::mt19937_64& rng);

  // A child span of `parent`, started now.
  Index open(std::string name, SpanKind kind = SpanKind::internal, Index parent = root);
  // Ends a span now; an error status carries `message`.
  void close(Index span, SpanStatus status = SpanStatus::unset, std::string message = {});
  void set(Index span, std::string key, AttributeValue value);
  void event(Index span, std::string name);

  // The traceparent header naming `span` as the parent: what an engine
  // called within that span is sent.
  std::string traceparent(Index span) const;

  const TraceId& trace_id() const { return trace_id_; }
  bool sampled() const { return sampled_; }
  const std::vector<Span>& spans() const { return spans_; }
  // The spans, the root ended now if still open; leaves this trace empty.
  std::vector<Span> take();

 private:
  TraceId trace_id_;
  bool sampled_;
  std::mt19937_64* rng_;  // the owner's; outlives the trace
  std::vector<Span> spans_;
};

// A child span over a scope (a wait, an attempt): opened on construction,
// closed on destruction, so that every co_return closes it. Does nothing
// without a trace, and builds nothing either: names, keys and values are
// copied only into a trace (an untraced request's attempt built six strings).
class ScopedSpan {
 public:
  ScopedSpan(std::optional<RequestTrace>& trace, std::string_view name,
             SpanKind kind = SpanKind::internal);
  ~ScopedSpan();
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

  template <class Value>
  void set(std::string_view key, Value&& value) {
    if (trace_) trace_->set(index_, std::string(key), AttributeValue(std::forward<Value>(value)));
  }
  // The status it closes with.
  void fail(std::string_view message);
  void succeed() { status_ = SpanStatus::ok; }
  // Its traceparent; empty without a trace.
  std::string traceparent() const;

 private:
  RequestTrace* trace_;
  RequestTrace::Index index_ = 0;
  SpanStatus status_ = SpanStatus::unset;
  std::string message_;
};

}  // namespace switchyard::obs
