// Who may use the admin routes (the admin API, the dashboard and its event
// stream), and from where:
//  * a client presenting the configured `admin_key` ("Authorization:
//    Bearer", or the HttpOnly cookie a login POST sets, so that the key is
//    never in a URL); without one, loopback clients only, so that an admin
//    API is never open to the network by default;
//  * only under a Host this gateway is known by (DNS rebinding: a page whose
//    name resolves to 127.0.0.1 must not reach it);
//  * state changes only from no page or a same-origin one, as JSON (a
//    cross-origin "no-cors" form or fetch can send neither that Origin nor
//    that Content-Type).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "openai/api_error.h"
#include "tenancy/sha256.h"

namespace switchyard::gateway {

// Login tickets: what the dashboard's cookie carries instead of the admin
// key. Random, held as digests, valid for `lifetime`, at most `capacity` at
// once (the oldest goes first). Single-threaded (the I/O thread).
class AdminTickets {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::string_view cookie = "switchyard_admin";

  explicit AdminTickets(std::chrono::seconds lifetime = std::chrono::hours(12),
                        std::size_t capacity = 256)
      : lifetime_(lifetime), capacity_(capacity) {}
  // A new ticket, valid from `now`.
  std::string issue(Clock::time_point now);
  bool valid(std::string_view ticket, Clock::time_point now) const;
  // The Set-Cookie values for `ticket`: one for /admin and one for /models
  // (llama.cpp router mode's load and unload, which the dashboard also
  // sends), so that the browser sends it to the admin routes only.
  std::vector<std::string> set_cookies(std::string_view ticket) const;
  // The ticket a request's Cookie header carries, if any.
  static std::optional<std::string_view> presented(const http::Headers& headers);

 private:
  std::chrono::seconds lifetime_;
  std::size_t capacity_;
  std::map<tenancy::Digest, Clock::time_point> expiry_;  // by the ticket's digest
};

// Why `head` may not use an admin route (401 or 403), or nullopt when it may.
// The key is read as API keys are ("Authorization: Bearer" or "x-api-key"),
// or a valid login ticket in the cookie stands for it.
std::optional<openai::ApiError> admin_refusal(const http::RequestHead& head,
                                              std::string_view admin_key,
                                              const AdminTickets* tickets = nullptr,
                                              AdminTickets::Clock::time_point now = {});

// 403 when the request's Host is none of: an IP address, `localhost`, the
// host of `listen`, a name in `admin_hosts`. A request without Host (not a
// browser) passes.
std::optional<openai::ApiError> host_refusal(const http::RequestHead& head, std::string_view listen,
                                             const std::vector<std::string>& admin_hosts);

// For requests that change state (any method but GET and HEAD): 403 when a
// browser says another site or origin sent it (Sec-Fetch-Site, Origin), 415
// unless the body is declared JSON.
std::optional<openai::ApiError> cross_origin_refusal(const http::RequestHead& head);

// The headers /ui's page and files are sent with: a Content-Security-Policy
// allowing only the gateway's own scripts, styles and connections, no
// framing, no MIME sniffing, no referrer.
void add_page_headers(http::Headers& headers);

// Whether "address:port" (RequestHead::remote) is a loopback address.
bool is_loopback(std::string_view remote);

}  // namespace switchyard::gateway
