#include "sim/engine.h"

#include <boost/asio.hpp>

#include <algorithm>

namespace switchyard::sim {

namespace net = boost::asio;
using net::awaitable;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

struct Engine::Waiter {
  explicit Waiter(net::any_io_executor ex) : timer(ex, clock_type::time_point::max()) {}
  net::steady_timer timer;
  int granted_slot = -1;
};

SlotLease& SlotLease::operator=(SlotLease&& o) noexcept {
  if (this != &o) {
    if (engine_) engine_->release(slot_);
    engine_ = std::exchange(o.engine_, nullptr);
    slot_ = o.slot_;
  }
  return *this;
}

SlotLease::~SlotLease() {
  if (engine_) engine_->release(slot_);
}

Engine::Engine(net::any_io_executor executor, EngineOptions options)
    : executor_(executor), options_(options), slots_(options.slots), rng_(options.seed) {
  for (int i = 0; i < options_.slots; ++i) slots_[i].view.id = i;
}

std::chrono::steady_clock::duration Engine::scaled(double seconds) const {
  return std::chrono::duration_cast<clock_type::duration>(
      std::chrono::duration<double>(seconds / options_.speed_factor));
}

awaitable<void> Engine::sleep_until(clock_type::time_point t) {
  if (t <= clock_type::now()) co_return;
  net::steady_timer timer(executor_, t);
  co_await timer.async_wait(net::use_awaitable);  // throws on cancellation: unwinds the request
}

awaitable<SlotLease> Engine::acquire() {
  for (int i = 0; i < options_.slots; ++i) {
    if (!slots_[i].busy && waiters_.empty()) {
      slots_[i].busy = true;
      counters_.max_requests_processing =
          std::max(counters_.max_requests_processing, ++counters_.requests_processing);
      co_return SlotLease(this, i);
    }
  }
  auto waiter = std::make_shared<Waiter>(executor_);
  waiters_.push_back(waiter);
  ++counters_.requests_deferred;
  ++counters_.requests_deferred_total;
  co_await waiter->timer.async_wait(use_tuple);  // cancelled by release() or by our caller
  if (waiter->granted_slot >= 0) co_return SlotLease(this, waiter->granted_slot);
  // Cancelled before a slot came free: leave the queue.
  std::erase(waiters_, waiter);
  --counters_.requests_deferred;
  throw boost::system::system_error(net::error::operation_aborted);
}

void Engine::release(int slot) {
  auto& s = slots_[slot];
  s.view.processing = false;
  --counters_.requests_processing;
  if (!waiters_.empty()) {
    // Hand the slot straight to the oldest waiter so nobody can overtake it.
    auto w = waiters_.front();
    waiters_.pop_front();
    --counters_.requests_deferred;
    w->granted_slot = slot;
    counters_.max_requests_processing =
        std::max(counters_.max_requests_processing, ++counters_.requests_processing);
    w->timer.cancel();
    return;
  }
  s.busy = false;
}

awaitable<int> Engine::prefill(const SlotLease& lease, const std::vector<Token>& prompt,
                               std::uint64_t task) {
  auto& s = slots_[lease.slot()];
  // llama-server reuses the common prefix with the slot's last prompt, but
  // always evaluates at least one token.
  std::size_t common = 0;
  while (common < prompt.size() && common < s.last_prompt.size() &&
         prompt[common] == s.last_prompt[common])
    ++common;
  const int cached = static_cast<int>(std::min(common, prompt.empty() ? 0 : prompt.size() - 1));
  const int evaluated = static_cast<int>(prompt.size()) - cached;
  s.view = SlotView{lease.slot(), true, task, static_cast<int>(prompt.size()), cached, 0, 0};
  s.last_prompt = prompt;

  const auto start = clock_type::now();
  co_await sleep_until(start + scaled(evaluated / options_.prefill_tokens_per_second));
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  counters_.prompt_tokens_total += evaluated;
  counters_.prompt_seconds_total += seconds;
  counters_.n_tokens_max = std::max<std::uint64_t>(counters_.n_tokens_max, evaluated);
  if (seconds > 0) counters_.last_prompt_per_second = evaluated / seconds;
  s.next_step = clock_type::now();
  s.decode_started = s.next_step;
  co_return cached;
}

awaitable<Token> Engine::decode(const SlotLease& lease, int remaining) {
  auto& s = slots_[lease.slot()];
  // Pace against an absolute schedule so timer slack does not accumulate.
  s.next_step += scaled(1.0 / options_.tokens_per_second);
  co_await sleep_until(s.next_step);
  const auto words = static_cast<Token>(tokenizer_.vocab_size()) - tokenizer_.first_word_token();
  const Token token = tokenizer_.first_word_token() +
                      static_cast<Token>(rng_() % static_cast<std::uint64_t>(words / 2));
  ++counters_.tokens_predicted_total;
  ++counters_.n_decode_total;
  ++s.view.n_decoded;
  s.view.n_remain = remaining - 1;
  const double seconds =
      std::chrono::duration<double>(clock_type::now() - s.decode_started).count();
  counters_.tokens_predicted_seconds_total +=
      std::chrono::duration<double>(scaled(1.0 / options_.tokens_per_second)).count();
  if (seconds > 0) counters_.last_predicted_per_second = s.view.n_decoded / seconds;
  co_return token;
}

int Engine::natural_length() {
  return 16 + static_cast<int>(rng_() % 113);
}

std::vector<SlotView> Engine::slots() const {
  std::vector<SlotView> out;
  for (const auto& s : slots_) out.push_back(s.view);
  return out;
}

}  // namespace switchyard::sim
