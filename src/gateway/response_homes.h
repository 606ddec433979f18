// Where each relayed response lives. An engine that stores responses (vLLM
// with VLLM_ENABLE_RESPONSES_API_STORE) answers a follow-up naming one in
// `previous_response_id`, and GET/DELETE /v1/responses/{id} or its cancel,
// only on the instance that made it; another instance of the same model
// lacks the conversation. So the gateway remembers, for the response ids it
// relayed, the instance, the model and the name the client used, the key
// and the session, and sends those requests there (docs/routing.md). The
// most recently used `capacity` are kept; an entry costs about 300 bytes.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

namespace switchyard::gateway {

struct ResponseHome {
  std::string instance;      // the instance's name
  std::string model;         // the canonical model it runs
  std::string client_model;  // the name the client asked for
  std::string key;           // the API key's name; empty without keys
  std::string session;       // the agent session it belonged to
};

// Single-threaded: the gateway's I/O thread.
class ResponseHomes {
 public:
  static constexpr std::size_t kDefaultCapacity = 50'000;
  explicit ResponseHomes(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // Remembers (or moves) `id` to `home`, forgetting the least recently used
  // past the capacity.
  void remember(std::string id, ResponseHome home);
  // The home of `id` when it was relayed for `key` (another key's response
  // is not found: ids are the only secret a stored response has); marks it
  // used. Null when unknown or forgotten.
  const ResponseHome* find(std::string_view id, std::string_view key);
  std::size_t size() const { return order_.size(); }

 private:
  using Entry = std::pair<std::string, ResponseHome>;
  const std::size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views into order_
};

}  // namespace switchyard::gateway
