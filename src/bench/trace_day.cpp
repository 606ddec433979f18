#include "bench/trace_day.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "bench/report_json.h"

namespace switchyard::bench {

namespace {

// Times in the trace to the millisecond: lines stay short and diff well.
double to_ms(double seconds) {
  return std::round(seconds * 1000) / 1000;
}

}  // namespace

Result<bool> validate(const DayOptions& o) {
  if (!(o.compress > 0)) return Error{"--compress: must be positive"};
  if (!(o.duration_s > 0)) return Error{"--duration: must be positive"};
  if (o.trickle_sessions < 0) return Error{"--trickle-sessions: must be >= 0"};
  if (!(o.trickle_gap_s > 0)) return Error{"--trickle-gap: must be positive"};
  if (o.trickle_input < 1) return Error{"--trickle-input: must be at least 1"};
  if (o.trickle_growth < 0) return Error{"--trickle-growth: must be >= 0"};
  if (o.trickle_output < 1) return Error{"--trickle-output: must be at least 1"};
  if (o.trickle_turns < 1) return Error{"--trickle-turns: must be at least 1"};
  if (o.burst_requests < 0) return Error{"--burst: must be >= 0"};
  if (o.burst_at_s < 0) return Error{"--burst-at: must be >= 0"};
  if (o.burst_input < 1) return Error{"--burst-input: must be at least 1"};
  if (o.burst_output < 1) return Error{"--burst-output: must be at least 1"};
  if (o.cold_requests < 0) return Error{"--cold: must be >= 0"};
  if (o.cold_at_s < 0) return Error{"--cold-at: must be >= 0"};
  if (o.cold_gap_s < 0) return Error{"--cold-gap: must be >= 0"};
  if (o.cold_input < 1) return Error{"--cold-input: must be at least 1"};
  if (o.cold_output < 1) return Error{"--cold-output: must be at least 1"};
  return true;
}

std::vector<TraceEntry> make_day(const DayOptions& o) {
  std::vector<TraceEntry> day;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(1.0 / o.trickle_gap_s);
  int chats = 0;
  for (int lane = 0; lane < o.trickle_sessions; ++lane) {
    // Each lane is a chat after a chat; its first turn after one gap, so
    // the lanes do not start together.
    double t = gap(rng);
    while (t < o.duration_s) {
      const std::string session = fmt::format("chat-{}", ++chats);
      long input = o.trickle_input;
      for (int turn = 0; turn < o.trickle_turns && t < o.duration_s; ++turn) {
        day.push_back({to_ms(t / o.compress), input, o.trickle_output, session, "trickle", "", 0});
        input += o.trickle_output + o.trickle_growth;
        t += gap(rng);
      }
    }
  }
  for (int i = 0; i < o.burst_requests; ++i)
    day.push_back({to_ms(o.burst_at_s / o.compress), o.burst_input, o.burst_output,
                   fmt::format("burst-{}", i + 1), "burst", "", 0});
  for (int i = 0; i < o.cold_requests; ++i)
    day.push_back({to_ms((o.cold_at_s + i * o.cold_gap_s) / o.compress), o.cold_input,
                   o.cold_output, fmt::format("cold-{}", i + 1), "cold", "", 0});
  std::stable_sort(day.begin(), day.end(),
                   [](const TraceEntry& a, const TraceEntry& b) { return a.t < b.t; });
  return day;
}

int run_make_trace(const DayOptions& o, const std::string& out_path) {
  if (auto ok = validate(o); !ok) {
    std::cerr << "switchyard bench make-trace: " << ok.error().message << "\n";
    return 2;
  }
  std::string text;
  for (const auto& e : make_day(o)) text += trace_line(e) + "\n";
  if (out_path.empty() || out_path == "-") {
    std::cout << text << std::flush;
    return 0;
  }
  if (auto w = write_file_atomically(out_path, text); !w) {
    std::cerr << "switchyard bench make-trace: " << w.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace switchyard::bench
