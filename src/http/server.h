// An HTTP/1.1 server: accepts connections and runs one session coroutine per
// connection, handing each request to a Handler.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "http/exchange.h"

namespace switchyard::http {

struct ServerOptions {
  // Address and port to listen on; port 0 lets the system choose a free one.
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;
  // Largest request body accepted. Larger ones get 413, decided from
  // Content-Length before the body is read. Agent requests reach several MiB.
  std::uint64_t body_limit = 32ull << 20;
  // How long a connection may take to send the next request's headers
  // (keep-alive idle time included). Slow or idle clients are closed after it.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(60)};
  // How long reading one request body may take.
  std::chrono::milliseconds body_timeout{std::chrono::seconds(60)};
  // How long one write to the client may block (a stalled reader).
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  // Open client connections at most; the next one is answered 503 at once
  // and closed, and the log says so once per episode. Each connection may
  // hold an upstream connection too, so a cap below the descriptor limit
  // turns running out of descriptors into prompt refusals (serve derives it
  // from RLIMIT_NOFILE, docs/reliability.md). 0: no cap.
  std::size_t max_connections = 0;
  // Paths still served at the cap (health probes, metrics scrapes): up to
  // kProbeReserve connections past max_connections are read far enough to
  // see their path (within kProbeHeaderTimeout); a GET of one of these is
  // answered, then closed, anything else gets the 503. Empty: no reserve.
  std::vector<std::string> probe_paths;
  static constexpr std::size_t kProbeReserve = 8;
  static constexpr std::chrono::milliseconds kProbeHeaderTimeout{2000};
  // Value of the Server header.
  std::string server_name = "switchyard";
  // Keep-alive limits as engines set them (the simulator: cpp-httplib's 5 s and
  // 100 requests, uvicorn's 5 s); all off for the gateway's own server.
  // A connection that sends no request for this long is closed without an
  // answer (it also bounds reading the headers once a request starts).
  // nullopt: only header_timeout applies.
  std::optional<std::chrono::milliseconds> keep_alive_idle;
  // Requests served on one connection; the last response says
  // `Connection: close`. 0: no limit.
  unsigned keep_alive_max = 0;
  // Whether every response on a connection kept open carries
  // `Keep-Alive: timeout=T, max=M` (cpp-httplib does; T in whole seconds,
  // rounded down, so it never promises more than keep_alive_idle).
  bool advertise_keep_alive = false;
};

class Server {
 public:
  // `handler` must outlive the server and every session it started.
  Server(boost::asio::any_io_executor executor, Handler& handler, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens. The error names the address and the reason, e.g.
  // "127.0.0.1:8080 is already in use".
  Result<std::uint16_t> listen();
  // Starts accepting on the executor. Precondition: listen() succeeded.
  void start();
  // Closes the listening socket; sessions already running go on.
  void stop_accepting();
  // Requests being handled right now (read complete, response not finished).
  std::size_t active_requests() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::http
