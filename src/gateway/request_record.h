// What the access log and the metrics record of one request as it moves
// through the pipeline.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "openai/usage.h"

namespace switchyard::gateway {

struct RequestRecord {
  // How a request ended, beyond its status line.
  enum class Outcome {
    ok,
    error,            // answered with a 4xx/5xx status
    upstream_failed,  // the engine failed after the client had bytes
    client_closed,    // the client left before the end
    shutting_down,    // the drain ran out and the gateway ended it (DrainCutoff)
  };

  std::string id;  // X-Request-Id
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string model;     // resolved model, once known
  std::string instance;  // the instance that answered, once chosen
  std::size_t bytes_in = 0;
  std::size_t bytes_out = 0;
  int status = 0;
  std::string error_code;  // the code of the error the gateway answered with, if any
  double ttfb = -1;        // seconds to the first byte sent; < 0 if none
  double queued = 0;       // seconds it waited in the model's queue for a slot
  int attempts = 0;
  std::vector<std::string> failed_on;  // instances an attempt failed on, in order
  bool client_gone = false;
  bool upstream_failed = false;  // after the first byte
  bool shut_down = false;        // ended by the drain's cutoff
  std::optional<openai::Usage> usage;

  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // The status as logged: 499 for a client that left before any answer.
  int logged_status() const { return client_gone && status == 0 ? 499 : status; }
  Outcome outcome() const {
    if (upstream_failed) return Outcome::upstream_failed;
    if (shut_down) return Outcome::shutting_down;
    if (client_gone) return Outcome::client_closed;
    return status >= 400 ? Outcome::error : Outcome::ok;
  }
};

const char* to_string(RequestRecord::Outcome outcome);

}  // namespace switchyard::gateway
