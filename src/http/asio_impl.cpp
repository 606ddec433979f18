// The one translation unit that compiles Asio's and Beast's implementations
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/object_pool.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstddef>
#include <new>

#include "http/descriptor_states.h"
#include "http/slab.h"

// Asio's reactor keeps a state per descriptor for as many sockets as were
// ever open at once, and never frees one (it reuses them). Allocated one by
// one they lay across the whole heap after a burst, and malloc_trim could
// return little around them: after 9,500 idle streams closed the gateway
// kept 71 of the peak's 116 MiB, with them in a slab 22 (bench/scaling.sh).
// In the slab, each state comes after the epoch its socket closed in, so
// that those closed long enough ago can be freed (http/descriptor_states.h).
namespace boost::asio::detail {

namespace {

using State = epoll_reactor::descriptor_state;

struct alignas(std::max_align_t) ClosedIn {
  std::uint64_t epoch = 0;
};

switchyard::http::Slab& descriptor_states() {
  // Never destroyed: a reactor may free its states during static destruction.
  static auto* slab = new switchyard::http::Slab(sizeof(ClosedIn) + sizeof(State), 256);
  return *slab;
}

ClosedIn& closed_in(State* state) {
  return *std::launder(
      reinterpret_cast<ClosedIn*>(reinterpret_cast<std::byte*>(state) - sizeof(ClosedIn)));
}

std::atomic<std::uint64_t> current_epoch{1};
// Set by reclaim_descriptor_states() around the one allocation it makes, so
// that the pool frees its old states under the reactor's own lock.
thread_local std::uint64_t reclaim_below = 0;
thread_local std::size_t reclaimed = 0;

}  // namespace

template <>
State* object_pool_access::create<State, bool>(bool locking) {
  void* block = descriptor_states().allocate();
  new (block) ClosedIn{};
  return new (static_cast<std::byte*>(block) + sizeof(ClosedIn)) State(locking);
}

template <>
void object_pool_access::destroy<State>(State* state) {
  state->~State();
  descriptor_states().release(reinterpret_cast<std::byte*>(state) - sizeof(ClosedIn));
}

// Asio's alloc(), after freeing the free states closed before the mark when
// a reclaim asks for it.
template <>
template <>
State* object_pool<State>::alloc<bool>(bool locking) {
  if (reclaim_below != 0) {
    for (State** link = &free_list_; *link != nullptr;) {
      State* state = *link;
      if (closed_in(state).epoch < reclaim_below) {
        *link = object_pool_access::next(state);
        object_pool_access::destroy(state);
        ++reclaimed;
      } else {
        link = &object_pool_access::next(state);
      }
    }
  }
  State* o = free_list_;
  if (o)
    free_list_ = object_pool_access::next(free_list_);
  else
    o = object_pool_access::create<State>(locking);
  object_pool_access::next(o) = live_list_;
  object_pool_access::prev(o) = nullptr;
  if (live_list_) object_pool_access::prev(live_list_) = o;
  live_list_ = o;
  return o;
}

// Asio's free(), which also notes the epoch the state's socket closed in.
template <>
void object_pool<State>::free(State* o) {
  closed_in(o).epoch = current_epoch.load(std::memory_order_relaxed);
  if (live_list_ == o) live_list_ = object_pool_access::next(o);
  if (object_pool_access::prev(o))
    object_pool_access::next(object_pool_access::prev(o)) = object_pool_access::next(o);
  if (object_pool_access::next(o))
    object_pool_access::prev(object_pool_access::next(o)) = object_pool_access::prev(o);
  object_pool_access::next(o) = free_list_;
  object_pool_access::prev(o) = nullptr;
  free_list_ = o;
}

}  // namespace boost::asio::detail

namespace switchyard::http {

std::uint64_t mark_descriptor_states() {
  return boost::asio::detail::current_epoch.fetch_add(1) + 1;
}

std::size_t reclaim_descriptor_states(const boost::asio::any_io_executor& executor,
                                      std::uint64_t mark) {
  namespace detail = boost::asio::detail;
  // Opening a socket is how to reach the reactor's pool under its lock.
  boost::asio::ip::tcp::socket probe(executor);
  boost::system::error_code ec;
  detail::reclaimed = 0;
  detail::reclaim_below = mark;
  probe.open(boost::asio::ip::tcp::v4(), ec);
  detail::reclaim_below = 0;
  probe.close(ec);
  detail::descriptor_states().give_back();
  return detail::reclaimed;
}

std::size_t descriptor_state_bytes() {
  return boost::asio::detail::descriptor_states().bytes();
}

}  // namespace switchyard::http

#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
