// Asio's reactor keeps a state per descriptor for as many sockets as were
// ever open at once and reuses them, never freeing one: after 9,500 idle
// streams closed, their 19,000 states (3.2 MiB) stayed in the process. These
// give the states of closed sockets back, once it is safe.
//
// A state is only safe to free once no reactor event can still name it: an
// event the reactor queued before its socket closed runs later, on the
// state. The states closed before mark_descriptor_states() are past that
// point once an operation queued after the mark has run on the I/O thread,
// because that thread runs its queue in order. Two conditions make that
// true, and the gateway and the simulator keep both: the io_context is run
// by one thread, and no child process holds a copy of a socket while that
// thread runs (epoll reports events of a closed socket while a copy is
// open): an engine is started on that thread, which waits until the child
// has closed every descriptor and exec'd (fleet/child_process.cpp).
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <cstdint>

namespace switchyard::http {

// Starts a reclaim: the states of sockets closed so far may be freed by a
// reclaim_descriptor_states() given this mark.
std::uint64_t mark_descriptor_states();

// On the thread that runs `executor`'s io_context, from an operation queued
// there after the mark: frees that reactor's states of sockets closed before
// `mark`, and gives the memory of the states' chunks that hold none back to
// the heap. Returns the states freed.
std::size_t reclaim_descriptor_states(const boost::asio::any_io_executor& executor,
                                      std::uint64_t mark);

// The bytes held for descriptor states, live or free (tests).
std::size_t descriptor_state_bytes();

}  // namespace switchyard::http
