// vLLM's OpenAI-compatible server (`vllm serve`) over the simulated engine:
// /v1/models, /v1/chat/completions, /v1/completions (token-id prompts too),
// /v1/responses (with GET /v1/responses/{id} and POST .../cancel),
// /tokenize, /detokenize, /health, /version and /metrics with the `vllm:`
// names of shared/reference/README.md, and the sleep-mode endpoints. The
// engine's mode is paged.
#pragma once

#include <memory>
#include <string>

#include "http/exchange.h"
#include "sim/engine.h"
#include "sim/faults.h"

namespace switchyard::sim {

struct VllmApiOptions {
  // --served-model-name (vLLM's default: the --model path): requests naming
  // another model get 404.
  std::string model_name = "/models/sim.gguf";
  // --model, shown as the model card's `root`.
  std::string model_path = "/models/sim.gguf";
  // Injected failures; all off by default.
  FaultOptions faults;
  // vLLM's sleep mode (--enable-sleep-mode with VLLM_SERVER_DEV_MODE=1):
  // POST /sleep?level=1|2, POST /wake_up, GET /is_sleeping. Asleep, the
  // engine frees its GPU memory and answers completions 503. Off: 404, as
  // vLLM without dev mode.
  bool sleep_mode = false;
  // How long POST /wake_up takes before it answers, in wall-clock seconds
  // (already divided by the speed factor).
  double wake_seconds = 0;
  // VLLM_ENABLE_RESPONSES_API_STORE=1: responses are kept (sim/response_store.h)
  // for previous_response_id, retrieve and cancel. Off, as vLLM's default:
  // `store` is ignored and every id is unknown (404).
  bool store_responses = false;
};

class VllmApi final : public http::Handler {
 public:
  // `engine` must outlive this handler.
  VllmApi(Engine& engine, VllmApiOptions options);
  ~VllmApi() override;

  boost::asio::awaitable<void> handle(http::Request& request, http::Exchange& exchange) override;
  http::Response protocol_error(int status, std::string message, std::string_view path) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::sim
