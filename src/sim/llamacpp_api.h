// llama-server's HTTP surface over the simulated engine: the same paths, JSON
// keys and key order, status codes, headers and SSE framing as a real
// llama-server (see ../shared/reference/llamacpp/ for the captures).
#pragma once

#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <string>

#include "http/exchange.h"
#include "sim/engine.h"
#include "sim/faults.h"
#include "sim/idle_sleep.h"

namespace switchyard::sim {

struct LlamacppApiOptions {
  // Name the model is served as (llama-server -a). Every response names it
  // whatever model the request asked for, as llama-server does; without an
  // alias that name is model_path.
  std::optional<std::string> model_alias;
  // The model file (llama-server -m), shown in /props as model_path.
  std::string model_path = "/models/sim.gguf";
  // llama-server --reranking: /rerank, /reranking, /v1/rerank answer; else 501.
  bool reranking = false;
  // False as llama-server --no-ui: /props says "ui": false, and llama.cpp's
  // web UI, talking to a router, hides the model.
  bool ui = true;
  // Injected failures; all off by default.
  FaultOptions faults;
  // llama-server --sleep-idle-seconds (outlives the handler); null: never sleeps.
  IdleSleep* idle_sleep = nullptr;
};

class LlamacppApi final : public http::Handler {
 public:
  // `engine` must outlive this handler; its mode is slots.
  LlamacppApi(Engine& engine, LlamacppApiOptions options);
  ~LlamacppApi() override;

  boost::asio::awaitable<void> handle(http::Request& request, http::Exchange& exchange) override;
  // The model as /v1/models lists it (and a router child reports it ready).
  boost::json::object model_info() const;
  http::Response protocol_error(int status, std::string message, std::string_view path) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::sim
