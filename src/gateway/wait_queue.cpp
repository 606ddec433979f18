#include "gateway/wait_queue.h"

#include <boost/asio.hpp>

#include <algorithm>

namespace switchyard::gateway {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

struct WaitQueue::Waiter {
  explicit Waiter(net::any_io_executor ex) : timer(ex) {}
  net::steady_timer timer;  // expires at the wait bound; cancelled to wake
  RouteQuery query;
  QueueShare share;
  bool retry = false;
  bool queued = true;               // still in its line (not yet handed a slot or refused)
  std::optional<RouteLease> lease;  // set by dispatch()
  bool shutting_down = false;
  bool key_revoked = false;
  bool rearmed = false;  // extend() moved the bound: wait again
};

WaitQueue::WaitQueue(net::any_io_executor executor, Router& router, fleet::QueueOptions options)
    : executor_(executor), router_(router), options_(options) {}

WaitQueue::~WaitQueue() = default;

int WaitQueue::depth(std::string_view model) const {
  auto it = lines_.find(model);
  return it == lines_.end() ? 0 : it->second.size;
}

void WaitQueue::remove(Line& line, const std::shared_ptr<Waiter>& waiter) {
  if (!waiter->queued) return;
  waiter->queued = false;
  --line.size;
  if (waiter->retry) {
    std::erase(line.retries, waiter);
    return;
  }
  auto band = line.bands.find(waiter->share.priority);
  if (band == line.bands.end()) return;
  auto lane = band->second.lanes.find(waiter->query.key);
  if (lane == band->second.lanes.end()) return;
  std::erase(lane->second.waiters, waiter);
  if (lane->second.waiters.empty()) {
    // An emptied lane keeps no deficit: idle time earns no credit (DRR).
    std::erase(band->second.ring, lane->first);
    band->second.lanes.erase(lane);
    if (band->second.lanes.empty()) line.bands.erase(band);
  }
}

void WaitQueue::grant(Waiter& waiter, RouteLease lease) {
  waiter.lease = std::move(lease);
  waiter.timer.cancel();
}

net::awaitable<Admission> WaitQueue::acquire(RouteQuery query, bool retry,
                                             std::chrono::milliseconds max_wait, QueueShare share) {
  Admission result;
  if (closed_) {
    result.outcome = Admission::Outcome::shutting_down;
    co_return result;
  }
  const std::string model(query.model);
  auto& line = lines_[model];
  if (line.size == 0 || retry) {
    if (auto lease = router_.acquire(query)) {
      result.outcome = Admission::Outcome::granted;
      result.lease = std::move(*lease);
      co_return result;
    }
  }
  if (!retry && line.size >= options_.max_length) {
    result.outcome = Admission::Outcome::queue_full;
    co_return result;
  }
  const auto start = clock_type::now();
  auto waiter = std::make_shared<Waiter>(executor_);
  waiter->query = query;
  waiter->share = share;
  waiter->share.cost = std::max<std::int64_t>(1, share.cost);
  waiter->share.weight = share.weight > 0 ? share.weight : 1;
  waiter->retry = retry;
  waiter->timer.expires_after(max_wait);
  ++line.size;
  if (retry) {
    line.retries.push_back(waiter);
  } else {
    Band& band = line.bands[waiter->share.priority];
    auto [lane, added] = band.lanes.try_emplace(std::string(query.key));
    if (added) band.ring.push_back(lane->first);
    lane->second.weight = waiter->share.weight;
    lane->second.waiters.push_back(waiter);
  }
  auto [ec] = co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
  while (waiter->rearmed && !waiter->lease && !waiter->shutting_down && !waiter->key_revoked &&
         (co_await net::this_coro::cancellation_state).cancelled() ==
             net::cancellation_type::none) {
    waiter->rearmed = false;
    std::tie(ec) = co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  // Woken by dispatch() (lease set), refuse_key(), release_all(), extend() (rearmed), the bound
  // (no error), or the caller's cancellation.
  if (auto it = lines_.find(model); it != lines_.end()) {
    remove(it->second, waiter);
    if (it->second.size == 0) lines_.erase(it);
  }
  result.waited_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  if (waiter->lease) {
    result.outcome = Admission::Outcome::granted;
    result.lease = std::move(*waiter->lease);
  } else if (waiter->key_revoked) {
    result.outcome = Admission::Outcome::key_revoked;
  } else if (waiter->shutting_down) {
    result.outcome = Admission::Outcome::shutting_down;
  } else {
    result.outcome = ec ? Admission::Outcome::cancelled : Admission::Outcome::timed_out;
  }
  co_return result;
}

void WaitQueue::dispatch(const std::string& model) {
  auto it = lines_.find(model);
  if (it == lines_.end() || closed_) return;
  Line& line = it->second;
  // Retries first, in order; one may fit where another has failed already.
  for (std::size_t i = 0; i < line.retries.size();) {
    auto waiter = line.retries[i];
    auto lease = router_.acquire(waiter->query);
    if (!lease) {
      if (waiter->query.tried.empty()) return;  // nothing free at all
      ++i;  // only instances this one already failed on are free
      continue;
    }
    remove(line, waiter);
    grant(*waiter, std::move(*lease));
  }
  // Then each band in turn, highest first, by deficit round robin.
  while (!line.bands.empty()) {
    Band& band = line.bands.begin()->second;
    // Each round gives every key its weight times the largest request at
    // the head of a lane: a key is served about one request per round, or
    // more small ones to the tokens of one large one.
    std::int64_t quantum = 1;
    for (const auto& [key, lane] : band.lanes)
      quantum = std::max(quantum, lane.waiters.front()->share.cost);
    for (;;) {
      Lane& lane = band.lanes.find(band.ring.front())->second;
      auto waiter = lane.waiters.front();
      if (lane.deficit < static_cast<double>(waiter->share.cost)) {
        lane.deficit += static_cast<double>(quantum) * lane.weight;
        band.ring.push_back(band.ring.front());
        band.ring.pop_front();
        continue;
      }
      // Requests of a band have tried nothing yet: no slot for one is no
      // slot for any.
      auto lease = router_.acquire(waiter->query);
      if (!lease) return;
      lane.deficit -= static_cast<double>(waiter->share.cost);
      const bool band_ends = band.lanes.size() == 1 && lane.waiters.size() == 1;
      remove(line, waiter);
      grant(*waiter, std::move(*lease));
      if (band_ends) break;  // remove() erased the band
    }
  }
}

void WaitQueue::refuse_key(std::string_view key) {
  for (auto& [model, line] : lines_) {
    std::vector<std::shared_ptr<Waiter>> refused;
    for (auto& w : line.retries)
      if (w->query.key == key) refused.push_back(w);
    for (auto& [priority, band] : line.bands)
      if (auto lane = band.lanes.find(key); lane != band.lanes.end())
        refused.insert(refused.end(), lane->second.waiters.begin(), lane->second.waiters.end());
    for (auto& w : refused) {
      remove(line, w);
      w->key_revoked = true;
      w->timer.cancel();
    }
  }
}

template <class F>
void WaitQueue::for_each_waiter(Line& line, F f) {
  for (auto& w : line.retries) f(w);
  for (auto& [priority, band] : line.bands)
    for (auto& [key, lane] : band.lanes)
      for (auto& w : lane.waiters) f(w);
}

void WaitQueue::extend(const std::string& model, std::chrono::milliseconds bound) {
  auto it = lines_.find(model);
  if (it == lines_.end()) return;
  const auto until = clock_type::now() + bound;
  for_each_waiter(it->second, [&](const std::shared_ptr<Waiter>& waiter) {
    if (waiter->lease || waiter->shutting_down || waiter->timer.expiry() >= until) return;
    waiter->rearmed = true;
    waiter->timer.expires_at(until);  // ends the pending wait, which then waits again
  });
}

void WaitQueue::release_all() {
  closed_ = true;
  for (auto& [model, line] : lines_) {
    for_each_waiter(line, [](const std::shared_ptr<Waiter>& w) {
      w->shutting_down = true;
      w->timer.cancel();
    });
  }
}

}  // namespace switchyard::gateway
