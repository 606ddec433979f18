#include "http/client_watch.h"

#include <vector>

#include "http/beast_glue.h"

namespace switchyard::http {

namespace {

// A one-byte peek rather than a wait for readability: Asio tries the peek
// without touching epoll and then queues it on the registration the socket
// already has, where a readiness wait costs an epoll_ctl each time. A peek
// that finds data is a pipelined request, so the client is still there.
template <typename Handler>
auto peek(tcp::socket& socket, char& byte, Handler&& handler) {
  return socket.async_receive(net::buffer(&byte, 1), tcp::socket::message_peek,
                              std::forward<Handler>(handler));
}

// After a peek: end of stream or an error means the client closed or reset.
bool peer_closed(const boost::system::error_code& ec) {
  return ec && ec != net::error::operation_aborted;
}

}  // namespace

struct ClientWatch::State {
  State(tcp::socket& s, std::function<void()> f) : socket(s), on_gone(std::move(f)) {}

  void arm(const std::shared_ptr<State>& self) {
    peek(socket, byte,
         net::bind_cancellation_slot(cancel.slot(),
                                     [self](const boost::system::error_code& ec, std::size_t) {
                                       if (!self->active || !peer_closed(ec)) return;
                                       self->active = false;
                                       self->on_gone();
                                     }));
  }

  tcp::socket& socket;
  std::function<void()> on_gone;
  net::cancellation_signal cancel;
  char byte = 0;  // the peek's buffer, alive as long as the operation
  bool active = true;
};

ClientWatch& ClientWatch::operator=(ClientWatch&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
  }
  return *this;
}

void ClientWatch::reset() {
  if (!state_) return;
  if (state_->active) {
    state_->active = false;
    state_->cancel.emit(net::cancellation_type::all);  // a no-op until the peek is armed
  }
  state_.reset();
}

// Watches wait in two generations: those added since the last tick, and
// those added before it, which each tick arms. No clock is read per request.
struct ClientWatches::Ticker : std::enable_shared_from_this<Ticker> {
  Ticker(net::any_io_executor executor, std::chrono::milliseconds t) : timer(executor), tick(t) {}

  void add(const std::shared_ptr<ClientWatch::State>& watch) {
    fresh.push_back(watch);
    if (!ticking) start();
  }

  void start() {
    ticking = true;
    timer.expires_after(tick);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      self->ticking = false;
      if (!ec) self->ticked();
    });
  }

  void ticked() {
    for (const auto& weak : aging) {
      if (auto watch = weak.lock(); watch && watch->active) watch->arm(watch);
    }
    aging.clear();
    aging.swap(fresh);
    if (!aging.empty()) start();
  }

  net::steady_timer timer;
  const std::chrono::milliseconds tick;
  std::vector<std::weak_ptr<ClientWatch::State>> fresh, aging;
  bool ticking = false;
};

ClientWatches::ClientWatches(net::any_io_executor executor, std::chrono::milliseconds tick)
    : ticker_(std::make_shared<Ticker>(std::move(executor), tick)) {}

ClientWatches::~ClientWatches() {
  ticker_->timer.cancel();
}

ClientWatch ClientWatches::watch(tcp::socket& socket, std::function<void()> on_gone) {
  auto state = std::make_shared<ClientWatch::State>(socket, std::move(on_gone));
  ticker_->add(state);
  return ClientWatch(std::move(state));
}

awaitable<bool> until_client_leaves(tcp::socket& socket) {
  char byte = 0;
  auto [ec, peeked] = co_await peek(socket, byte, use_tuple);
  if (peer_closed(ec)) co_return true;
  if (ec == net::error::operation_aborted) co_return false;
  net::steady_timer forever(socket.get_executor(), net::steady_timer::time_point::max());
  co_await forever.async_wait(use_tuple);
  co_return false;
}

}  // namespace switchyard::http
