// Who may use the admin routes (the admin API and the dashboard): a client
// presenting the configured `admin_key`; without one, loopback clients only,
// so that an admin API is never open to the network by default.
#pragma once

#include <optional>
#include <string_view>

#include "http/message.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

// Why `head` may not use an admin route (401 or 403), or nullopt when it may.
// The key is read as API keys are: "Authorization: Bearer" or "x-api-key";
// with `key_in_query` also from a `key=` query parameter (URL-encoded), for
// the dashboard's EventSource, which cannot send headers.
std::optional<openai::ApiError> admin_refusal(const http::RequestHead& head,
                                              std::string_view admin_key,
                                              bool key_in_query = false);

// The URL-decoded value of the query parameter `name` in `target`, or
// nullopt when absent.
std::optional<std::string> query_parameter(std::string_view target, std::string_view name);

// Whether "address:port" (RequestHead::remote) is a loopback address.
bool is_loopback(std::string_view remote);

}  // namespace switchyard::gateway
