// GET /admin/keys (behind the admin key, gateway/admin_access.h): every key
// the gateway knows, by name and, for stored keys, the prefix `keys list`
// shows (never the key, nor a config key's first characters, which may be
// most of it), with its limits, today's usage (requests, tokens) and what it
// holds now (requests running, sessions seated, requests waiting). The
// dashboard's keys panel shows the same list.
#pragma once

#include <boost/json/array.hpp>

#include <string>
#include <vector>

#include "gateway/admission.h"
#include "gateway/api_keys.h"
#include "gateway/usage_today.h"
#include "tenancy/key_store.h"

namespace switchyard::gateway {

struct KeysView {
  const ApiKeys& keys;
  const std::vector<tenancy::KeyRecord>& stored;  // for their prefixes
  Admit& admit;
  const UsageToday& usage;
};

boost::json::array keys_json(const KeysView& view);

// GET /admin/keys's body: {"keys": keys_json(view)}.
std::string keys_body(const KeysView& view);

}  // namespace switchyard::gateway
