#include "bench/load_generator.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <exception>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/arrivals.h"
#include "bench/endpoint_probe.h"
#include "bench/stream_parser.h"
#include "common/scoped_member.h"
#include "http/sse.h"
#include "http/use_tuple.h"

namespace switchyard::bench {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string failure_kind(http::UpstreamFailure failure) {
  switch (failure) {
    case http::UpstreamFailure::connect:
      return "connect";
    case http::UpstreamFailure::reset:
      return "reset";
    case http::UpstreamFailure::timeout:
      return "timeout";
    case http::UpstreamFailure::protocol:
      return "protocol";
    case http::UpstreamFailure::aborted:
      return "interrupted";
    case http::UpstreamFailure::local:
      return "local";
    case http::UpstreamFailure::none:
      break;
  }
  return "protocol";
}

// An OpenAI error body's message, else the body's first line.
std::string error_message(std::string_view body) {
  boost::system::error_code ec;
  auto value = boost::json::parse(body, ec);
  if (!ec && value.is_object()) {
    if (const auto* e = value.as_object().if_contains("error"); e && e->is_object()) {
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
        return std::string(m->as_string());
    }
  }
  auto line = body.substr(0, body.find('\n'));
  return std::string(line.substr(0, 200));
}

}  // namespace

struct LoadGenerator::Phase {
  Phase(asio::any_io_executor executor, int step_index, bool is_warmup)
      : step(step_index), warmup(is_warmup), joined(executor) {}

  int step;
  bool warmup;
  long limit = 0;  // requests to issue; 0: until `deadline`
  std::optional<Clock::time_point> deadline;
  Clock::time_point start = Clock::now();
  long next = 0;              // index of the next request to issue
  long pending = 0;           // coroutines still running
  asio::steady_timer joined;  // cancelled when `pending` drops to 0
  std::vector<RequestRecord> records;

  bool exhausted() const {
    if (limit > 0 && next >= limit) return true;
    return deadline && Clock::now() >= *deadline;
  }
};

LoadGenerator::LoadGenerator(asio::any_io_executor executor, LoadTarget target,
                             std::size_t max_connections)
    : executor_(executor), target_(std::move(target)), pool_(executor, target_.url, [&] {
        http::UpstreamOptions options;
        options.connect_timeout = std::chrono::seconds(10);
        options.first_byte_timeout = target_.first_byte_timeout;
        options.idle_timeout = target_.idle_timeout;
        options.max_idle = max_connections;
        return options;
      }()) {
  target_.headers.set("Content-Type", "application/json");
  target_.headers.set("Accept", "text/event-stream");
}

LoadGenerator::~LoadGenerator() = default;

void LoadGenerator::stop() {
  stopping_ = true;
  if (arrival_timer_ != nullptr) arrival_timer_->cancel();
  // abort() completes pending operations later, on the executor: the set is
  // not modified while we walk it.
  for (auto* call : in_flight_) call->abort();
}

awaitable<void> LoadGenerator::send_one(const std::string& body, RequestRecord& record) {
  http::UpstreamCall call(pool_);
  const ScopedMember in_flight(in_flight_, &call);

  http::UpstreamRequest request;
  request.target = target_.path;
  request.headers = target_.headers;
  request.body = body;
  const auto t0 = Clock::now();
  auto head = co_await call.send(request);
  if (!head) {
    record.error = stopping_ ? "interrupted" : failure_kind(call.failure());
    record.error_detail = head.error().message;
    record.e2e_ms = ms_since(t0);
    co_return;
  }
  if (auto said = head->headers.find(kSimulatedHeader))
    record.simulated = is_simulator_header(*said);
  if (head->status != 200) {
    auto text = co_await call.read_all(64 * 1024);
    record.error = fmt::format("http_{}", head->status);
    record.error_detail = text ? error_message(*text) : std::string();
    record.e2e_ms = ms_since(t0);
    co_return;
  }
  http::SseSplitter splitter;
  StreamParser parser(record);
  for (;;) {
    auto pieces = co_await call.read_some();
    const double at = ms_since(t0);
    if (!pieces) {
      record.error = stopping_ ? "interrupted" : failure_kind(call.failure());
      record.error_detail = pieces.error().message;
      record.e2e_ms = at;
      co_return;
    }
    if (pieces->empty()) break;
    for (auto piece : *pieces)
      splitter.split(piece,
                     [&](std::string_view event) { parser.on_data(http::sse_data(event), at); });
  }
  parser.finish(ms_since(t0));
}

awaitable<void> LoadGenerator::issue(const StepPlan& plan, Phase& phase, long index) {
  RequestRecord record;
  record.step = plan.step;
  record.index = index;
  record.warmup = phase.warmup;
  record.keep_content = plan.keep_content;
  record.prompt_target = plan.prompt_target;
  record.start_s = seconds_between(phase.start, Clock::now());
  const std::string body = plan.body(index, phase.warmup);
  co_await send_one(body, record);
  if (record.ok() && record.output_tokens() < plan.forced_tokens) record.short_output = true;
  if (!phase.warmup && record.error != "interrupted") {
    ++live_.done;
    if (record.ok()) live_.tokens += record.output_tokens();
  }
  phase.records.push_back(std::move(record));
}

awaitable<void> LoadGenerator::closed_worker(const StepPlan& plan, Phase& phase) {
  while (!stopping_ && !phase.exhausted()) {
    const long index = phase.next++;
    co_await issue(plan, phase, index);
  }
}

awaitable<void> LoadGenerator::open_request(const StepPlan& plan, Phase& phase, long index) {
  co_await issue(plan, phase, index);
}

awaitable<void> LoadGenerator::open_loop(const StepPlan& plan, Phase& phase) {
  Arrivals arrivals(plan.rate, plan.burstiness, plan.seed);
  asio::steady_timer timer(executor_);
  auto next_at = phase.start;
  while (!stopping_ && !phase.exhausted()) {
    timer.expires_at(next_at);
    arrival_timer_ = &timer;
    co_await timer.async_wait(http::use_tuple);
    arrival_timer_ = nullptr;
    if (stopping_) break;
    const long index = phase.next++;
    ++phase.pending;
    asio::co_spawn(executor_, open_request(plan, phase, index), [&phase](std::exception_ptr e) {
      if (e) spdlog::error("bench: a request coroutine failed unexpectedly");
      if (--phase.pending == 0) phase.joined.cancel();
    });
    next_at += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(arrivals.next_gap()));
  }
}

awaitable<void> LoadGenerator::run_phase(const StepPlan& plan, Phase& phase, bool open) {
  if (open) {
    co_await open_loop(plan, phase);
  } else {
    const int workers = std::max(1, plan.concurrency);
    for (int i = 0; i < workers; ++i) {
      ++phase.pending;
      asio::co_spawn(executor_, closed_worker(plan, phase), [&phase](std::exception_ptr e) {
        if (e) spdlog::error("bench: a worker coroutine failed unexpectedly");
        if (--phase.pending == 0) phase.joined.cancel();
      });
    }
  }
  while (phase.pending > 0) {
    phase.joined.expires_at(Clock::time_point::max());
    co_await phase.joined.async_wait(http::use_tuple);
  }
}

awaitable<StepOutcome> LoadGenerator::run_step(const StepPlan& plan) {
  StepOutcome outcome;
  live_ = LiveCounts{};
  if (plan.warmup > 0 && !stopping_) {
    Phase warmup(executor_, plan.step, true);
    warmup.limit = plan.warmup;
    co_await run_phase(plan, warmup, false);
    outcome.records = std::move(warmup.records);
  }
  Phase measured(executor_, plan.step, false);
  measured.limit = plan.duration_s > 0 ? 0 : plan.requests;
  if (plan.duration_s > 0)
    measured.deadline = measured.start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(plan.duration_s));
  live_.measuring = true;
  live_.started = measured.start;
  live_.total = measured.limit;
  live_.duration_s = plan.duration_s;
  if (!stopping_) co_await run_phase(plan, measured, plan.rate > 0);

  double last_end = 0;
  for (const auto& r : measured.records)
    if (r.error != "interrupted") last_end = std::max(last_end, r.start_s + r.e2e_ms / 1000.0);
  outcome.interrupted = stopping_;
  outcome.wall_s = stopping_ ? seconds_between(measured.start, Clock::now()) : last_end;
  for (auto& r : measured.records) outcome.records.push_back(std::move(r));
  co_return outcome;
}

bool run_interruptible(boost::asio::io_context& io, LoadGenerator& generator,
                       boost::asio::awaitable<void> drive) {
  bool interrupted = false;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    interrupted = true;
    generator.stop();
  });
  std::exception_ptr crashed;
  // When the drive ends, the loop stops: idle pooled connections keep their
  // deadlines' timer waiting (http/socket_deadline.h), so it would not run
  // dry soon.
  boost::asio::co_spawn(io, std::move(drive), [&](std::exception_ptr e) {
    crashed = e;
    io.stop();
  });
  io.run();
  if (crashed) std::rethrow_exception(crashed);
  return interrupted;
}

}  // namespace switchyard::bench
