// The operator's console: GET /ui (the embedded dashboard) and GET
// /admin/events (the status as server-sent events, one a second).
#pragma once

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "gateway/console_feed.h"
#include "gateway/model_catalog.h"
#include "http/exchange.h"
#include "http/message.h"
#include "obs/status.h"

namespace switchyard::gateway {

// /ui is the page; /ui/<file> its scripts and styles; anything else 404.
http::Response ui_response(std::string_view path);

// The dashboard's picture as JSON: the snapshot, models and aliases, the
// running and recent requests, this second's chart point, and with
// `history` the points of the last 15 minutes.
std::string console_json(const obs::StatusSnapshot& status, const ModelCatalog& catalog,
                         const ConsoleFeed& feed, bool history);

// Streams `picture(first)` as one SSE event a second until the client
// leaves or `ending()` says the gateway is shutting down.
boost::asio::awaitable<void> stream_events(http::Exchange& exchange,
                                           std::function<std::string(bool first)> picture,
                                           std::function<bool()> ending);

}  // namespace switchyard::gateway
