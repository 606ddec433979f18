// What the access log and the metrics record of one request as it moves
// through the pipeline.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "openai/usage.h"

namespace switchyard::gateway {

struct RequestRecord {
  std::string id;  // X-Request-Id
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string model;     // resolved model, once known
  std::string instance;  // the instance that answered, once chosen
  std::size_t bytes_in = 0;
  std::size_t bytes_out = 0;
  int status = 0;
  double ttfb = -1;  // seconds to the first byte sent; < 0 if none
  int attempts = 0;
  bool client_gone = false;
  std::optional<openai::Usage> usage;

  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

}  // namespace switchyard::gateway
