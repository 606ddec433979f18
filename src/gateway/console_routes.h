// The operator's console: GET /ui (the embedded dashboard) and GET
// /admin/events (the status as server-sent events, one a second).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "config/fleet_config.h"
#include "gateway/console_feed.h"
#include "gateway/model_catalog.h"
#include "gateway/model_control.h"
#include "gateway/profile_control.h"
#include "http/exchange.h"
#include "http/message.h"
#include "obs/status.h"

namespace switchyard::gateway {

// /ui is the page; /ui/<file> its scripts and styles; anything else 404.
http::Response ui_response(std::string_view path);

// The dashboard's picture as JSON: the snapshot, models and aliases, the
// profiles (as /admin/status has them; null when `profiles` is null), the
// keys (as /admin/keys has them), the running requests (the oldest
// ConsoleFeed::kRunningShown, and how many run) and the recent ones, this
// second's chart point, and with `history` the points of the last 15 minutes.
// With on-demand models (`residency`), also their residency: each one's state
// as /v1/models says it, its instances' memory per card, and each card's
// size and the memory in use by the gateway's figures.
std::string console_json(const obs::StatusSnapshot& status, const ModelCatalog& catalog,
                         const ConsoleFeed& feed, ProfileControl* profiles, ModelControl* residency,
                         const config::FleetConfig& config, boost::json::array keys, bool history);

// Streams `picture(first)` as one SSE event a second, and at once on
// `feed.changed()`, until the client leaves or `ending()` says the gateway
// is shutting down.
boost::asio::awaitable<void> stream_events(http::Exchange& exchange, ConsoleFeed& feed,
                                           std::function<std::string(bool first)> picture,
                                           std::function<bool()> ending);

}  // namespace switchyard::gateway
