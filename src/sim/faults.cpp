#include "sim/faults.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

namespace switchyard::sim {

Faults::Faults(FaultOptions options, clock::time_point started)
    : options_(options),
      ready_at_(started + std::chrono::duration_cast<clock::duration>(
                              std::chrono::duration<double>(options.startup_delay_seconds))) {}

bool Faults::loading(clock::time_point now) const {
  return now < ready_at_;
}

bool Faults::refuse_completion() {
  if (refused_ >= options_.fail_before_first_byte) return false;
  ++refused_;
  return true;
}

TokenFault Faults::after_tokens(int produced, std::uint64_t engine_total) const {
  if (options_.exit_after_tokens && engine_total >= *options_.exit_after_tokens)
    return TokenFault::exit;
  if (options_.reset_after_tokens && produced == *options_.reset_after_tokens)
    return TokenFault::reset;
  if (options_.stall_after_tokens && produced == *options_.stall_after_tokens)
    return TokenFault::stall;
  return TokenFault::none;
}

bool Faults::completion_ended() {
  ++ended_;
  return options_.exit_after_requests && ended_ >= *options_.exit_after_requests;
}

void exit_for_fault(std::string_view why) {
  spdlog::warn("sim: exiting with status {}: {}", kFaultExitStatus, why);
  spdlog::default_logger()->flush();
  std::_Exit(kFaultExitStatus);
}

}  // namespace switchyard::sim
