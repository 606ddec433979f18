// The one translation unit that compiles Asio's and Beast's implementations
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/object_pool.hpp>

#include <new>

#include "http/slab.h"

// Asio's reactor keeps a state per descriptor for as many sockets as were
// ever open at once, and never frees one (it reuses them). Allocated one by
// one they lay across the whole heap after a burst, and malloc_trim could
// return little around them: after 9,500 idle streams closed the gateway
// kept 71 of the peak's 116 MiB, with them in a slab 22 (bench/scaling.sh).
namespace boost::asio::detail {

namespace {
switchyard::http::Slab& descriptor_states() {
  // Never destroyed: a reactor may free its states during static destruction.
  static auto* slab = new switchyard::http::Slab(sizeof(epoll_reactor::descriptor_state), 256);
  return *slab;
}
}  // namespace

template <>
epoll_reactor::descriptor_state* object_pool_access::create<epoll_reactor::descriptor_state, bool>(
    bool locking) {
  return new (descriptor_states().allocate()) epoll_reactor::descriptor_state(locking);
}

template <>
void object_pool_access::destroy<epoll_reactor::descriptor_state>(
    epoll_reactor::descriptor_state* state) {
  state->~descriptor_state();
  descriptor_states().release(state);
}

}  // namespace boost::asio::detail

#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
