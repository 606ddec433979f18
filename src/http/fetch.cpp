#include "http/fetch.h"

#include <boost/asio.hpp>

#include <optional>

#include <fmt/format.h>

#include "http/upstream.h"

namespace switchyard::http {

namespace net = boost::asio;

// Runs one UpstreamCall on a private io_context: one code path for talking
// HTTP to engines, whether from the gateway or from a command-line tool.
Result<FetchResponse> fetch(const FetchRequest& request) {
  auto url = parse_url(request.url);
  if (!url) return url.error();
  const std::string path_and_query = [&] {
    constexpr std::string_view scheme = "http://";
    std::string_view rest = std::string_view(request.url).substr(scheme.size());
    auto slash = rest.find('/');
    return slash == std::string_view::npos ? std::string("/") : std::string(rest.substr(slash));
  }();

  net::io_context io;
  UpstreamOptions options;
  options.connect_timeout = request.timeout;
  options.first_byte_timeout = request.timeout;
  options.idle_timeout = request.timeout;
  Url origin = *url;
  origin.path.clear();  // the full path travels in the target
  UpstreamPool pool(io.get_executor(), origin, options);

  std::optional<Result<FetchResponse>> outcome;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        UpstreamCall call(pool);
        UpstreamRequest req;
        req.method = request.method;
        req.target = path_and_query;
        for (const auto& [n, v] : request.headers) req.headers.add(n, v);
        req.body = request.body;
        auto head = co_await call.send(req);
        if (!head) {
          outcome = head.error();
          co_return;
        }
        auto body = co_await call.read_all(std::size_t(256) << 20);
        if (!body) {
          outcome = body.error();
          co_return;
        }
        FetchResponse response;
        response.status = head->status;
        for (const auto& [n, v] : head->headers) response.headers.emplace_back(n, v);
        response.body = std::move(*body);
        outcome = std::move(response);
      },
      // Done: stop rather than wait for the loop to run dry, which the idle
      // connection's deadline timer would delay (http/socket_deadline.h).
      [&io](std::exception_ptr) { io.stop(); });
  io.run_for(request.timeout + std::chrono::milliseconds(100));
  if (!outcome)
    return Error{
        fmt::format("{}: no complete response within {} ms", request.url, request.timeout.count())};
  return std::move(*outcome);
}

}  // namespace switchyard::http
