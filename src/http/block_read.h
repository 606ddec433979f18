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
// end any read. One operation may read many times (async_read_blocks), so
// that a stream's reads take its handler once. Linux's epoll reactor only
// (Debian 12's Boost 1.81).
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
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "http/read_buffer.h"
#include "http/socket_calls.h"

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
      const long n = receive(fd, room.data(), room.size());
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

// What a read loop does next (async_read_blocks).
enum class Then {
  read,      // read when the socket's next edge comes (or at once, if it may have bytes)
  read_now,  // read first, then wait if nothing came
  resume,    // no read: the reader is called again from the loop
};

// The answer a reader completes with, handed to the handler as arguments.
template <class Handler, class Answer>
struct Completion {
  Handler handler;
  Answer answer;
  void operator()() { std::apply(std::move(handler), std::move(answer)); }
};

// One operation for all the reads its reader asks for: the handler, its
// work and its cancellation are taken once, not once a read (a stream reads
// once a token, and moving Asio's handlers cost a few hundred instructions
// each time: docs/performance.md).
template <class Socket, class Buffer, class Reader, class Handler, class IoExecutor>
class LoopOp : public asio_detail::reactor_op {
 public:
  // As BOOST_ASIO_DEFINE_HANDLER_PTR's, its memory from take_op_memory.
  struct ptr {
    Handler* h;
    LoopOp* v;
    LoopOp* p;
    ~ptr() { reset(); }
    static LoopOp* allocate(Handler&) {
      static_assert(alignof(LoopOp) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
      return static_cast<LoopOp*>(take_op_memory(sizeof(LoopOp)));
    }
    void reset() {
      if (p) {
        p->~LoopOp();
        p = nullptr;
      }
      if (v) {
        give_op_memory(v, sizeof(LoopOp));
        v = nullptr;
      }
    }
  };

  LoopOp(Socket& socket, Buffer& buffer, std::size_t limit, Reader&& reader, Handler& handler,
         const IoExecutor& io_ex)
      : reactor_op(boost::system::error_code(), &LoopOp::do_perform, &LoopOp::do_complete),
        socket_(socket),
        buffer_(buffer),
        limit_(limit),
        reader_(std::move(reader)),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  Buffer& buffer() { return buffer_; }

  static Status do_perform(reactor_op* base) {
    auto* o = static_cast<LoopOp*>(base);
    return read_once(o->socket_.native_handle(), o->buffer_, o->limit_, o->ec_,
                     o->bytes_transferred_);
  }

  // After a read (or a resume): the reader's next step, or its answer for
  // the handler. As Asio's reactive_socket_recv_op, the handler is moved
  // out and the operation freed before the upcall, which may start another.
  static void do_complete(void* owner, asio_detail::operation* base,
                          const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<LoopOp*>(base);
    ptr p = {std::addressof(o->handler_), o, o};
    if (!owner) return;  // the context is going away: freed, not called
    Then then = Then::read;
    auto answer = o->reader_.step(o->ec_, o->bytes_transferred_, then);
    if (!answer) {
      p.v = p.p = nullptr;
      o->socket_.next_read(o, then, true);
      return;
    }
    asio_detail::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    Completion<Handler, typename Reader::Answer> completion{std::move(o->handler_),
                                                            std::move(*answer)};
    p.h = std::addressof(completion.handler);
    p.reset();
    asio_detail::fenced_block b(asio_detail::fenced_block::half);
    w.complete(completion, completion.handler);
  }

 private:
  Socket& socket_;
  Buffer& buffer_;
  std::size_t limit_;
  Reader reader_;
  Handler handler_;
  asio_detail::handler_work<Handler, IoExecutor> work_;
};

// async_read_block's reader: one read, answered with its error and size.
struct OneRead {
  using Answer = std::tuple<boost::system::error_code, std::size_t>;
  bool now;
  Then start() const { return now ? Then::read_now : Then::read; }
  std::optional<Answer> step(const boost::system::error_code& ec, std::size_t bytes, Then&) const {
    return Answer{ec, bytes};
  }
};

// The completion signature of a reader's answer.
template <class Answer>
struct SignatureOf;
template <class... Args>
struct SignatureOf<std::tuple<Args...>> {
  using type = void(Args...);
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
    return async_read_blocks(buffer, limit, block_read_detail::OneRead{now},
                             std::forward<Token>(token));
  }

  // Reads as async_read_block does, as many times as `reader` asks, in one
  // operation; completes with the reader's answer. The reader has
  // `using Answer = std::tuple<...>` (the completion's arguments),
  // `block_read_detail::Then start()` and, after each read, or without one
  // after Then::resume, `std::optional<Answer> step(ec, bytes, Then& then)`:
  // the answer, or nullopt and what to do next in `then`. It runs on the
  // socket's executor and must not throw.
  template <class Buffer, class Reader, class Token>
  auto async_read_blocks(Buffer& buffer, std::size_t limit, Reader reader, Token&& token) {
    using Signature = typename block_read_detail::SignatureOf<typename Reader::Answer>::type;
    return boost::asio::async_initiate<Token, Signature>(
        [this, &buffer, limit](auto handler, Reader reader) {
          start(buffer, limit, std::move(reader), std::move(handler));
        },
        token, std::move(reader));
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

  template <class Buffer, class Reader, class Handler>
  void start(Buffer& buffer, std::size_t limit, Reader reader, Handler handler) {
    using Op = block_read_detail::LoopOp<BlockReadSocket, Buffer, Reader, Handler, executor_type>;
    auto& impl = impl_.get_implementation();
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    const auto then = reader.start();
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(*this, buffer, limit, std::move(reader), handler, get_executor());
    if (slot.is_connected())
      p.p->cancellation_key_ =
          &slot.template emplace<Cancellation>(reactor_, &impl.reactor_data_, impl.socket_);
    next_read(p.p, then, is_continuation);
    p.v = p.p = nullptr;
  }

  // Starts `op`'s next read (or its resume).
  template <class Op>
  void next_read(Op* op, block_read_detail::Then then, bool is_continuation) {
    namespace asio_detail = block_read_detail::asio_detail;
    using block_read_detail::Then;
    auto& impl = impl_.get_implementation();
    op->ec_ = {};
    op->bytes_transferred_ = 0;
    if (then == Then::resume) return reactor_->post_immediate_completion(op, is_continuation);
    // A socket that waits holds no block (the read takes one when it reads).
    if (op->buffer().size() == 0) op->buffer().shrink_to_fit();
    if (!(impl.state_ & asio_detail::socket_ops::non_blocking) &&
        !asio_detail::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true,
                                                            op->ec_)) {
      reactor_->post_immediate_completion(op, is_continuation);
    } else if (then == Then::read_now && impl.reactor_data_ && op->perform() != Op::not_done) {
      reactor_->post_immediate_completion(op, is_continuation);
    } else {
      reactor_->start_op(Reactor::read_op, impl.socket_, impl.reactor_data_, op, is_continuation,
                         true);
    }
  }

  template <class, class, class, class, class>
  friend class block_read_detail::LoopOp;

  Reactor* reactor_;
};

}  // namespace switchyard::http
