// A socket's receive and send as the system calls themselves. glibc's
// recv() and sendmsg() are cancellation points: in a process with threads
// each call switches asynchronous cancellation on and off around the system
// call, some 35 instructions a call, and Asio's socket_ops add their own
// error bookkeeping to a send (docs/performance.md). The gateway cancels no
// thread. Both return what the system call does, with errno on failure.
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>

namespace switchyard::http {

inline long receive(int fd, void* data, std::size_t size) {
  return ::syscall(SYS_recvfrom, fd, data, size, 0, nullptr, nullptr);
}

// A gathered send that raises no SIGPIPE.
inline long send_gathered(int fd, const iovec* pieces, std::size_t count) {
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(pieces);
  message.msg_iovlen = count;
  return ::syscall(SYS_sendmsg, fd, &message, MSG_NOSIGNAL);
}

}  // namespace switchyard::http
