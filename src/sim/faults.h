// Failure injection for the simulator: an engine that refuses, resets,
// stalls, dies or is still loading on cue, so a gateway's failure paths can
// be tested against real HTTP. The decisions live here; the dialect
// (llamacpp_api.cpp) asks at a few fixed points and carries them out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace switchyard::sim {

// The status the process exits with when a fault ends it, so a test can tell
// an injected death from a crash.
constexpr int kFaultExitStatus = 3;

// Each fault is off by default. Validated once, by the CLI (sim_command.cpp):
// counts are 0..INT_MAX (the exit counts at least 1), the delay is 0..3600 s,
// and reset and stall exclude each other.
struct FaultOptions {
  // The first N valid completion requests (chat or text) get 503
  // unavailable_error without taking a slot. Default 0. Requests that fail
  // validation (400) do not use up N.
  int fail_before_first_byte = 0;
  // After a completion has produced this many tokens (streamed: sent this
  // many token chunks), the connection is reset (RST, no final chunk).
  // 0 resets right after the stream's headers (and chat's role chunk), or
  // after prefill for a non-streamed request. A completion that ends with
  // fewer tokens ends normally. Default off.
  std::optional<int> reset_after_tokens;
  // Like reset_after_tokens, but then nothing more is sent and the
  // connection and the slot stay held until the client goes away, as a hung
  // engine does. Default off. Excludes reset_after_tokens.
  std::optional<int> stall_after_tokens;
  // The process exits with kFaultExitStatus right after the N-th completion
  // request to end has ended (response written in full, cut by a fault, or
  // abandoned by its client): exactly N completions end, and any others then
  // in flight are cut off. Refused and invalid requests do not count.
  // Default off.
  std::optional<int> exit_after_requests;
  // The process exits with kFaultExitStatus once the engine has produced
  // this many tokens in all requests together, checked where the per-token
  // faults are (after a streamed token's chunk is sent), so a lone stream
  // sees exactly N token chunks and then a closed connection. Takes
  // precedence over reset and stall at the same token. Default off.
  std::optional<std::uint64_t> exit_after_tokens;
  // For this long after start every request, /health included, gets
  // llama-server's 503 "Loading model". Wall-clock seconds, not scaled by
  // the speed factor: it models a model load, not generation. Default 0.
  double startup_delay_seconds = 0;
};

// What a completion does after producing a token.
enum class TokenFault { none, reset, stall, exit };

// The state of the faults over the process's life. One thread (the sim's
// io_context), no locks.
class Faults {
 public:
  using clock = std::chrono::steady_clock;

  // `started` is when loading began; startup_delay_seconds counts from it.
  explicit Faults(FaultOptions options, clock::time_point started = clock::now());

  const FaultOptions& options() const { return options_; }

  // Whether the simulated model is still loading at `now`.
  bool loading(clock::time_point now = clock::now()) const;

  // Asked once per valid completion request before it takes a slot; true
  // means refuse it (503), and uses up one of fail_before_first_byte.
  bool refuse_completion();

  // Asked by a completion after it produced `produced` tokens (0: before the
  // first), when the engine has produced `engine_total` tokens in all.
  TokenFault after_tokens(int produced, std::uint64_t engine_total) const;

  // Called when a completion that was not refused ends, however it ended;
  // true means the process must exit now (exit_after_requests).
  bool completion_ended();

 private:
  const FaultOptions options_;
  const clock::time_point ready_at_;
  // Guarded by the io_context's thread.
  int refused_ = 0;
  int ended_ = 0;
};

// Logs `why`, flushes the log and ends the process at once with
// kFaultExitStatus: no destructors, no goodbyes, as a crashing engine.
[[noreturn]] void exit_for_fault(std::string_view why);

}  // namespace switchyard::sim
