#include "sim/engine.h"
#include "http/use_tuple.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::sim {

namespace net = boost::asio;
using net::awaitable;
using clock_type = std::chrono::steady_clock;
using http::use_tuple;

std::optional<Error> validate(const EngineOptions& o) {
  const auto& s = o.scheduler;
  if (auto error = validate(s.timing)) return error;
  if (s.max_seqs < 1) return Error{"slots: must be >= 1"};
  if (s.slot_context < 16) return Error{"ctx_size: each slot needs at least 16 tokens"};
  if (s.block_size < 1 || s.block_size > 4096) return Error{"block_size: must be 1..4096"};
  if (s.max_batched_tokens < 1) return Error{"max_batched_tokens: must be >= 1"};
  if (s.mode == SchedulerMode::paged && s.kv_capacity_tokens / s.block_size < 1)
    return Error{"kv_capacity_tokens: the pool needs at least one block"};
  if (s.mode == SchedulerMode::paged &&
      s.slot_context + s.block_size * (2 + s.timing.spec_draft_tokens) > s.kv_capacity_tokens)
    return Error{fmt::format(
        "max_model_len: {} tokens do not fit the KV pool of {} tokens (kv_capacity_tokens); "
        "lower max_model_len or raise the capacity",
        s.slot_context, s.kv_capacity_tokens)};
  if (!(o.speed_factor > 0)) return Error{"speed_factor: must be > 0"};
  if (!(o.over_report > 0)) return Error{"over_report: must be > 0"};
  return std::nullopt;
}

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), v);
  ++counts[it - bounds.begin()];
  sum += v;
  ++count;
}

void Sequence::drop() {
  if (engine_ && *engine_alive_) engine_->cancel(*state_);
  engine_ = nullptr;
}

Sequence& Sequence::operator=(Sequence&& o) noexcept {
  if (this != &o) {
    drop();
    engine_ = std::exchange(o.engine_, nullptr);
    state_ = std::move(o.state_);
    engine_alive_ = std::move(o.engine_alive_);
  }
  return *this;
}

Sequence::~Sequence() {
  drop();
}

namespace {

SchedulerOptions with_vocabulary(SchedulerOptions s, const Tokenizer& tok) {
  // The simulated model writes whole words with a leading space, for
  // readable output.
  s.first_output_token = tok.first_word_token();
  s.output_token_count = std::max(1, tok.spaced_words());
  return s;
}

}  // namespace

Engine::Engine(net::any_io_executor executor, EngineOptions options)
    : executor_(executor),
      options_(std::move(options)),
      scheduler_(with_vocabulary(options_.scheduler, tokenizer_)),
      wake_(executor, clock_type::time_point::max()),
      alive_(std::make_shared<bool>(true)),
      rng_(options_.seed) {
  counters_.spec_accepted_per_position.assign(options_.scheduler.timing.spec_draft_tokens, 0);
  net::co_spawn(executor_, loop(), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("sim: engine loop failed: {}", ex.what());
    }
  });
}

Engine::~Engine() {
  *alive_ = false;
}

clock_type::duration Engine::scaled(double seconds) const {
  return std::chrono::duration_cast<clock_type::duration>(
      std::chrono::duration<double>(seconds / options_.speed_factor));
}

void Engine::wake() {
  wake_.cancel();
}

Sequence Engine::submit(SeqRequest request) {
  auto state = std::make_shared<SequenceState>(executor_);
  state->n_prompt = static_cast<int>(request.prompt.size());
  state->submitted = clock_type::now();
  const bool all_busy = scheduler_.running() + scheduler_.waiting() >= max_seqs();
  state->id = scheduler_.submit(std::move(request));
  live_.emplace(state->id, state);
  stamp_admitted(scheduler_.admit(), state->submitted);
  if (all_busy || scheduler_.is_waiting(state->id)) ++counters_.requests_deferred_total;
  wake();
  return Sequence(this, std::move(state), alive_);
}

void Engine::cancel(SequenceState& state) {
  live_.erase(state.id);
  if (state.finished) return;
  state.finished = true;
  scheduler_.cancel(state.id);
  stamp_admitted(scheduler_.admit(), clock_type::now());
  wake();
}

void Engine::hold(Sequence& seq) {
  scheduler_.hold(seq.state_->id);
}

void Engine::stamp_admitted(const std::vector<SeqId>& ids, clock_type::time_point now) {
  for (SeqId id : ids) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    auto& s = *it->second;
    if (!s.was_admitted) {
      s.was_admitted = true;
      s.admitted = now;
      counters_.prompt_tokens_requested += s.n_prompt;
      for (const auto& slot : scheduler_.slots())
        if (slot.busy && slot.seq == id) s.slot = slot.id;
      counters_.request_queue_time.observe(
          std::chrono::duration<double>(now - s.submitted).count());
    }
  }
  counters_.max_requests_processing =
      std::max(counters_.max_requests_processing, scheduler_.running());
}

awaitable<std::optional<Token>> Engine::next(Sequence& seq) {
  auto state = seq.state_;  // keeps the state alive across waits
  for (;;) {
    if (!state->pending.empty()) {
      const Token t = state->pending.front();
      state->pending.pop_front();
      ++counters_.tokens_delivered_total;
      co_return t;
    }
    if (state->finished) co_return std::nullopt;
    state->signal.expires_at(clock_type::time_point::max());
    co_await state->signal.async_wait(use_tuple);
    // The signal is cancelled both to notify and by a cancelled caller.
    const auto cs = co_await net::this_coro::cancellation_state;
    if (cs.cancelled() != net::cancellation_type::none)
      throw boost::system::system_error(net::error::operation_aborted);
  }
}

int Engine::natural_length() {
  return 16 + static_cast<int>(rng_() % 113);
}

awaitable<void> Engine::loop() {
  const auto alive = alive_;
  net::steady_timer pace(executor_);
  auto next_step = clock_type::now();
  for (;;) {
    if (!scheduler_.has_work()) {
      wake_.expires_at(clock_type::time_point::max());
      co_await wake_.async_wait(use_tuple);
      if (!*alive) co_return;
      next_step = clock_type::now();
      continue;
    }
    const Step step = scheduler_.step();
    const auto started = clock_type::now();
    stamp_admitted(step.admitted, started);
    // An absolute schedule: timer slack does not accumulate over steps.
    next_step = std::max(next_step, started - scaled(0.5)) + scaled(step.seconds);
    if (next_step > started) {
      pace.expires_at(next_step);
      co_await pace.async_wait(use_tuple);
    } else {
      co_await net::post(executor_, net::use_awaitable);  // let I/O run between steps
    }
    if (!*alive) co_return;
    apply(step, clock_type::now());
  }
}

void Engine::apply(const Step& step, clock_type::time_point now) {
  auto& c = counters_;
  ++c.n_decode_total;
  c.busy_slots_total += static_cast<std::uint64_t>(step.busy);
  const int batch = step.prefill_tokens + step.decode_seqs;
  c.n_tokens_max = std::max<std::uint64_t>(c.n_tokens_max, batch);
  c.prompt_tokens_total += step.prefill_tokens;
  c.spec_drafts += step.drafts;
  c.spec_draft_tokens += step.draft_tokens;
  c.spec_accepted_tokens += step.accepted_tokens;
  for (std::size_t i = 0; i < step.accepted_per_position.size(); ++i)
    c.spec_accepted_per_position[i] += step.accepted_per_position[i];

  for (const auto& e : step.events) {
    c.tokens_predicted_total += e.tokens.size();
    auto it = live_.find(e.id);
    if (it == live_.end()) continue;  // its reader left during the step
    auto& s = *it->second;
    if (e.preempted) {
      ++s.preemptions;
      continue;
    }
    if (e.prefill_done && !s.has_first_token) {
      s.has_first_token = true;
      s.cached = e.cached;
      s.first_token = now;
      s.last_token = now;
      c.prompt_seconds_total += std::chrono::duration<double>(now - s.admitted).count();
      c.time_to_first_token.observe(std::chrono::duration<double>(now - s.submitted).count());
    } else if (!e.tokens.empty()) {
      c.inter_token_latency.observe(std::chrono::duration<double>(now - s.last_token).count());
      s.last_token = now;
    }
    for (Token t : e.tokens) s.pending.push_back(t);
    if (e.finished) {
      s.finished = true;
      s.finished_at = now;
      ++c.requests_finished_total;
      c.tokens_predicted_seconds_total +=
          std::chrono::duration<double>(now - s.first_token).count();
      c.e2e_request_latency.observe(std::chrono::duration<double>(now - s.submitted).count());
    }
    s.signal.cancel();
  }
}

}  // namespace switchyard::sim
