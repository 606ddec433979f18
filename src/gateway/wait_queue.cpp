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
  std::uint64_t arrival = 0;        // its place in arrival order
  bool queued = true;               // still in its line (not yet handed a slot or refused)
  std::optional<RouteLease> lease;  // set by dispatch()
  std::uint64_t charged = 0;        // set by dispatch(): the band that charged its cost
  bool shutting_down = false;
  bool key_revoked = false;
  bool refused = false;  // refuse_model()
  bool rearmed = false;  // extend() moved the bound: wait again
};

WaitQueue::WaitQueue(net::any_io_executor executor, Router& router, config::QueueOptions options)
    : executor_(executor), router_(router), options_(options) {}

WaitQueue::~WaitQueue() {
  *alive_ = false;
}

void WaitQueue::dispatch_at(const std::string& model, clock_type::time_point when) {
  if (closed_ || !timed_.emplace(model, when).second) return;
  auto timer = std::make_shared<net::steady_timer>(executor_, when);
  timer->async_wait([this, timer, model, when, alive = alive_](boost::system::error_code) {
    if (!*alive) return;
    timed_.erase({model, when});
    dispatch(model);
  });
}

int WaitQueue::depth(std::string_view model) const {
  auto it = lines_.find(model);
  return it == lines_.end() ? 0 : it->second.size;
}

// Takes `waiter` out of `waiters`, looking from the front: a waiter handed a
// slot is almost always its line's first, and erasing it there moves
// nothing (std::erase would walk and shift the whole line: 10,000 waiters
// made every slot handed on cost 10,000 moves).
template <class T>
static void take_out(std::deque<T>& waiters, const T& waiter) {
  if (auto it = std::find(waiters.begin(), waiters.end(), waiter); it != waiters.end())
    waiters.erase(it);
}

void WaitQueue::remove(Line& line, const std::shared_ptr<Waiter>& waiter) {
  if (!waiter->queued) return;
  waiter->queued = false;
  --line.size;
  if (waiter->retry) {
    take_out(line.retries, waiter);
    return;
  }
  auto band = line.bands.find(waiter->share.priority);
  if (band == line.bands.end()) return;
  auto lane = band->second.lanes.find(waiter->query.key);
  if (lane == band->second.lanes.end()) return;
  take_out(lane->second.waiters, waiter);
  if (lane->second.waiters.empty()) {
    // Idle time earns no credit: only a tag ahead of the band's virtual
    // time is remembered, and an emptied band forgets them all.
    if (lane->second.start > band->second.now)
      band->second.finish.insert_or_assign(lane->first, lane->second.start);
    band->second.lanes.erase(lane);
    if (band->second.lanes.empty()) line.bands.erase(band);
  }
}

WaitQueue::Waiter* WaitQueue::next(Lane& lane, const Passed& passed) {
  for (auto& w : lane.waiters)
    if (std::find(passed.begin(), passed.end(), w.get()) == passed.end()) return w.get();
  return nullptr;
}

WaitQueue::Lane* WaitQueue::fair_pick(Band& band, const Passed& passed) {
  Lane* best = nullptr;
  for (auto& [key, lane] : band.lanes) {
    const Waiter* head = next(lane, passed);
    if (!head) continue;
    if (!best || lane.start < best->start) {
      best = &lane;
      continue;
    }
    if (lane.start > best->start) continue;
    // A tie: neither key has been served ahead of the other (a band's first
    // requests, whose keys' running requests got their slots before any
    // queue formed): the lighter backlog first, then the earlier arrival.
    if (lane.waiters.size() < best->waiters.size() ||
        (lane.waiters.size() == best->waiters.size() &&
         head->arrival < next(*best, passed)->arrival))
      best = &lane;
  }
  return best;
}

void WaitQueue::grant(Waiter& waiter, RouteLease lease) {
  waiter.lease = std::move(lease);
  waiter.timer.cancel();
}

void WaitQueue::enqueue(Line& line, const std::shared_ptr<Waiter>& waiter) {
  ++line.size;
  if (waiter->retry) {
    line.retries.push_back(waiter);
    return;
  }
  Band& band = line.bands[waiter->share.priority];
  if (band.id == 0) band.id = ++bands_;
  auto [lane, added] = band.lanes.try_emplace(std::string(waiter->query.key));
  if (added) {
    lane->second.start = band.now;
    if (auto f = band.finish.find(waiter->query.key); f != band.finish.end()) {
      lane->second.start = std::max(band.now, f->second);
      band.finish.erase(f);
    }
  }
  lane->second.weight = waiter->share.weight;
  lane->second.waiters.push_back(waiter);
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
    Router::Refusal why = Router::Refusal::all_slots_busy;
    if (auto lease = router_.acquire(query, &why)) {
      result.outcome = Admission::Outcome::granted;
      result.lease = std::move(*lease);
      co_return result;
    }
    if (why == Router::Refusal::waiting_for_home) dispatch_at(model, router_.home_wait_until());
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
  waiter->arrival = ++arrivals_;
  waiter->timer.expires_after(max_wait);
  enqueue(line, waiter);
  // A waiter ahead that the policy keeps for its busy home leaves a free
  // slot to the next: this one may take it now.
  dispatch(model);
  boost::system::error_code ec;
  if (!waiter->lease)
    std::tie(ec) = co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
  while (waiter->rearmed && !waiter->lease && !waiter->shutting_down && !waiter->key_revoked &&
         !waiter->refused &&
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
    result.charged = waiter->charged;
    co_return result;
  }
  router_.left(query);
  if (waiter->key_revoked) {
    result.outcome = Admission::Outcome::key_revoked;
  } else if (waiter->refused) {
    result.outcome = Admission::Outcome::refused;
  } else if (waiter->shutting_down) {
    result.outcome = Admission::Outcome::shutting_down;
  } else {
    result.outcome = ec ? Admission::Outcome::cancelled : Admission::Outcome::timed_out;
  }
  co_return result;
}

WaitQueue::Lane& WaitQueue::handoff(Band& band, Lane& fair, std::size_t freed,
                                    const Passed& passed) {
  const auto& head = *next(fair, passed);
  const double finish = fair.start + static_cast<double>(head.share.cost) / fair.weight;
  Lane* best = &fair;
  double best_match = router_.match(head.query, freed);
  for (auto& [key, lane] : band.lanes) {
    const Waiter* first = &lane == &fair || lane.start >= finish ? nullptr : next(lane, passed);
    if (!first) continue;
    const double m = router_.match(first->query, freed);
    if (m > best_match || (m == best_match && m > 0 && lane.start < best->start)) {
      best = &lane;
      best_match = m;
    }
  }
  return *best;
}

void WaitQueue::dispatch(const std::string& model, std::optional<std::size_t> freed) {
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
    freed.reset();
  }
  // Then each band in turn, highest first, by start tags.
  Passed passed;
  for (auto b = line.bands.begin(); b != line.bands.end();) {
    Band& band = b->second;
    Lane* fair = fair_pick(band, passed);
    if (!fair) {  // every first waiter of the band waits for its home
      ++b;
      continue;
    }
    Lane& lane = freed ? handoff(band, *fair, *freed, passed) : *fair;
    const Waiter* chosen = next(lane, passed);
    auto waiter = *std::find_if(lane.waiters.begin(), lane.waiters.end(),
                                [&](const auto& w) { return w.get() == chosen; });
    // Requests of a band have tried nothing yet: no slot for one is no slot
    // for any (but one waiting for its home, or bound to the instance that
    // holds its stored response, leaves the slot to the others).
    Router::Refusal why = Router::Refusal::all_slots_busy;
    auto lease = router_.acquire(waiter->query, &why);
    if (!lease) {
      if (why != Router::Refusal::waiting_for_home && !waiter->query.only) return;
      passed.push_back(waiter.get());
      if (why == Router::Refusal::waiting_for_home) dispatch_at(model, router_.home_wait_until());
      continue;
    }
    freed.reset();  // one slot freed there; any further ones go in fair order
    band.now = std::max(band.now, lane.start);
    lane.start += static_cast<double>(waiter->share.cost) / lane.weight;
    std::erase_if(band.finish, [&](const auto& f) { return f.second <= band.now; });
    waiter->charged = band.id;
    remove(line, waiter);  // may erase the lane and the band
    grant(*waiter, std::move(*lease));
    b = line.bands.begin();
  }
}

void WaitQueue::correct(std::string_view model, std::string_view key, const QueueShare& share,
                        std::int64_t used) {
  if (share.charged == 0) return;
  auto line = lines_.find(model);
  if (line == lines_.end()) return;
  auto band = line->second.bands.find(share.priority);
  if (band == line->second.bands.end() || band->second.id != share.charged) return;
  Band& b = band->second;
  const double delta = static_cast<double>(used - std::max<std::int64_t>(1, share.cost)) /
                       (share.weight > 0 ? share.weight : 1);
  // Virtual time never runs back: a refund brings a key level with the
  // band's time at most.
  if (auto lane = b.lanes.find(key); lane != b.lanes.end()) {
    lane->second.start = std::max(b.now, lane->second.start + delta);
  } else if (auto f = b.finish.find(key); f != b.finish.end()) {
    f->second += delta;
    if (f->second <= b.now) b.finish.erase(f);
  } else if (delta > 0) {
    b.finish.emplace(std::string(key), b.now + delta);
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

void WaitQueue::refuse_model(const std::string& model) {
  auto it = lines_.find(model);
  if (it == lines_.end()) return;
  std::vector<std::shared_ptr<Waiter>> refused;
  for_each_waiter(it->second, [&](const std::shared_ptr<Waiter>& w) { refused.push_back(w); });
  for (auto& w : refused) {
    remove(it->second, w);
    w->refused = true;
    w->timer.cancel();
  }
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
