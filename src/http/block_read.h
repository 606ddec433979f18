// A socket read for a relay: it takes its buffer's block only when there
// are bytes to read, and after a read that did not fill the buffer it waits
// for the socket's next edge without a system call. Asio 1.26's own reads
// do neither, and a stream paid for it on every token (docs/performance.md):
// * async_read_some needs its buffer while it waits, so a stream whose
//   engine is silent held a read block (4 KiB) for as long as it was;
// * async_wait re-arms the descriptor (epoll_ctl) on every wait;
// * a read that did not fill its buffer leaves the socket's next read
//   speculative: one more recv, failing with EAGAIN.
// The read is a reactor operation like Asio's own: the reactor's read
// queue, close(), cancel() and per-operation cancellation end it as they
// end any read. Linux's epoll reactor only (Debian 12's Boost 1.81).
#pragma once

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "http/read_buffer.h"

namespace switchyard::http {

namespace block_read_detail {

namespace asio_detail = boost::asio::detail;
using Status = asio_detail::reactor_op::status;

static_assert(std::is_same_v<asio_detail::reactor, asio_detail::epoll_reactor>,
              "block_read.h works on Asio's epoll reactor only");

// One non-blocking read into `buffer`, at most `limit` bytes: a block is
// taken for it when the buffer has none and given back when nothing came.
// Exhausted when the read did not fill the room it had: the socket's queue
// is empty, and the reactor waits for its next edge before reading again.
// (A close that came with the bytes read makes no edge of its own: see
// async_read_block.)
template <class Alloc>
Status read_once(int fd, boost::beast::basic_flat_buffer<Alloc>& buffer, std::size_t limit,
                 boost::system::error_code& ec, std::size_t& got) {
  got = 0;
  try {
    if (buffer.capacity() == 0) buffer.reserve(kReadBlock);
    const auto room = buffer.prepare(boost::beast::read_size(buffer, limit));
    for (;;) {
      const ssize_t n = ::recv(fd, room.data(), room.size(), 0);
      if (n > 0) {
        got = static_cast<std::size_t>(n);
        buffer.commit(got);
        return got < room.size() ? Status::done_and_exhausted : Status::done;
      }
      if (n == 0) {
        ec = boost::asio::error::eof;
        return Status::done_and_exhausted;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (buffer.size() == 0) buffer.shrink_to_fit();
        return Status::not_done;
      }
      ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
      return Status::done;
    }
  } catch (const std::bad_alloc&) {
    ec = boost::asio::error::no_buffer_space;
    return Status::done;
  }
}

// The operations' memory: one block a thread kept for the next read. A
// stream's reads follow one another (each frees its operation before the
// upcall that starts the next), so a read costs no malloc; Asio's own
// recycling is off (CMakeLists.txt) and would take memalign's slower path.
struct SpareOpMemory {
  void* memory = nullptr;
  std::size_t size = 0;
  ~SpareOpMemory() { ::operator delete(memory); }
};
inline thread_local SpareOpMemory spare_op_memory;

inline void* take_op_memory(std::size_t size) {
  auto& spare = spare_op_memory;
  if (spare.memory && spare.size >= size) return std::exchange(spare.memory, nullptr);
  return ::operator new(size);
}
inline void give_op_memory(void* memory, std::size_t size) noexcept {
  auto& spare = spare_op_memory;
  if (spare.memory) return ::operator delete(memory);
  spare.memory = memory;
  spare.size = size;
}

template <class Buffer, class Handler, class IoExecutor>
class Op : public asio_detail::reactor_op {
 public:
  // As BOOST_ASIO_DEFINE_HANDLER_PTR's, its memory from take_op_memory.
  struct ptr {
    Handler* h;
    Op* v;
    Op* p;
    ~ptr() { reset(); }
    static Op* allocate(Handler&) {
      static_assert(alignof(Op) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
      return static_cast<Op*>(take_op_memory(sizeof(Op)));
    }
    void reset() {
      if (p) {
        p->~Op();
        p = nullptr;
      }
      if (v) {
        give_op_memory(v, sizeof(Op));
        v = nullptr;
      }
    }
  };

  Op(int fd, Buffer& buffer, std::size_t limit, Handler& handler, const IoExecutor& io_ex)
      : reactor_op(boost::system::error_code(), &Op::do_perform, &Op::do_complete),
        fd_(fd),
        buffer_(buffer),
        limit_(limit),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static Status do_perform(reactor_op* base) {
    auto* o = static_cast<Op*>(base);
    return read_once(o->fd_, o->buffer_, o->limit_, o->ec_, o->bytes_transferred_);
  }

  // As Asio's reactive_socket_recv_op: the handler is moved out and the
  // operation freed before the upcall, which may start the next read.
  static void do_complete(void* owner, asio_detail::operation* base,
                          const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<Op*>(base);
    ptr p = {std::addressof(o->handler_), o, o};
    asio_detail::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    asio_detail::binder2<Handler, boost::system::error_code, std::size_t> handler(
        o->handler_, o->ec_, o->bytes_transferred_);
    p.h = std::addressof(handler.handler_);
    p.reset();
    if (owner) {
      asio_detail::fenced_block b(asio_detail::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  }

 private:
  int fd_;
  Buffer& buffer_;
  std::size_t limit_;
  Handler handler_;
  asio_detail::handler_work<Handler, IoExecutor> work_;
};

}  // namespace block_read_detail

// A TCP socket whose reads can be block reads.
class BlockReadSocket : public boost::asio::ip::tcp::socket {
 public:
  explicit BlockReadSocket(const boost::asio::any_io_executor& executor)
      : tcp::socket(executor),
        reactor_(&boost::asio::use_service<block_read_detail::asio_detail::reactor>(
            boost::asio::query(executor, boost::asio::execution::context))) {}

  // Reads what the socket has, at most `limit` bytes, into `buffer`
  // (committed there); completes with (error_code, bytes). While it waits,
  // `buffer` holds no block if it held no bytes. `buffer` must outlive the
  // read, and the socket must be used from one thread at a time.
  //
  // After a read that did not fill its room the next one waits for the
  // socket's next edge, unless `now`: then it reads first. A peer's close
  // that came with the last bytes read makes no edge: a caller that needs
  // to see it passes `now` after peer_closed_or_sent() said so.
  template <class Buffer, class Token>
  auto async_read_block(Buffer& buffer, std::size_t limit, bool now, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this, &buffer, limit, now](auto handler) {
          start(buffer, limit, now, std::move(handler));
        },
        token);
  }

  // Whether the peer has closed, or sent bytes that are waiting, or the
  // socket failed: a look (a peek of one byte), taking nothing.
  bool peer_closed_or_sent() {
    char byte;
    const ssize_t n = ::recv(native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

 private:
  using tcp = boost::asio::ip::tcp;
  using Reactor = block_read_detail::asio_detail::reactor;

  // Cancels the read for a cancellation slot, as Asio's own reads do.
  struct Cancellation {
    Reactor* reactor;
    Reactor::per_descriptor_data* data;
    int fd;
    void operator()(boost::asio::cancellation_type_t type) {
      using boost::asio::cancellation_type;
      if (!!(type &
             (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
        reactor->cancel_ops_by_key(fd, *data, Reactor::read_op, this);
    }
  };

  template <class Buffer, class Handler>
  void start(Buffer& buffer, std::size_t limit, bool now, Handler handler) {
    namespace asio_detail = block_read_detail::asio_detail;
    using Op = block_read_detail::Op<Buffer, Handler, executor_type>;
    auto& impl = impl_.get_implementation();
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    // A socket that waits holds no block (the read takes one when it reads).
    if (buffer.size() == 0) buffer.shrink_to_fit();
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(impl.socket_, buffer, limit, handler, get_executor());
    if (slot.is_connected())
      p.p->cancellation_key_ =
          &slot.template emplace<Cancellation>(reactor_, &impl.reactor_data_, impl.socket_);
    boost::system::error_code ec;
    if (!(impl.state_ & asio_detail::socket_ops::non_blocking) &&
        !asio_detail::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true, ec)) {
      p.p->ec_ = ec;
      reactor_->post_immediate_completion(p.p, is_continuation);
    } else if (now && impl.reactor_data_ && p.p->perform() != Op::not_done) {
      reactor_->post_immediate_completion(p.p, is_continuation);
    } else {
      reactor_->start_op(Reactor::read_op, impl.socket_, impl.reactor_data_, p.p, is_continuation,
                         true);
    }
    p.v = p.p = nullptr;
  }

  Reactor* reactor_;
};

}  // namespace switchyard::http
