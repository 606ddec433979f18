// Output tokens as they stream through the gateway, per instance, in
// one-second buckets: a generation rate over a recent window that a busy
// engine cannot hide. (llama-server's tokens_predicted_total grows only when a
// request finishes, so a server busy with long requests looks idle, and its
// predicted_tokens_seconds is a lifetime average.)
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace switchyard::obs {

// Used from the gateway's one I/O thread (not locked).
class GenerationMeter {
 public:
  using clock = std::chrono::steady_clock;
  // Seconds of history kept: the longest window rate() can answer for.
  static constexpr int kHistorySeconds = 900;

  class Series;
  // The series of `instance`: a reference valid as long as the meter, so
  // that a stream looks its instance up once, not once a token.
  Series& series(const std::string& instance);
  // `tokens` output tokens of `instance` (of `series`) were relayed at `now`.
  void add(const std::string& instance, std::int64_t tokens, clock::time_point now = clock::now());
  static void add(Series& series, std::int64_t tokens, clock::time_point now = clock::now());
  // Tokens per second over the whole seconds of the last `window` before
  // `now` (the current, partial second excluded); 0 for an unknown instance.
  double rate(const std::string& instance, std::chrono::seconds window,
              clock::time_point now = clock::now()) const;
  // The sum of every instance's rate().
  double total_rate(std::chrono::seconds window, clock::time_point now = clock::now()) const;

 private:
  static std::int64_t second_of(clock::time_point t);
  static void advance(Series& s, std::int64_t second);
  static double rate_of(const Series& s, std::int64_t now_second, std::int64_t window);

  std::map<std::string, Series, std::less<>> series_;
};

class GenerationMeter::Series {
  friend class GenerationMeter;
  std::vector<std::int64_t> buckets = std::vector<std::int64_t>(kHistorySeconds);
  std::int64_t last_second = -1;  // the second buckets[last_second % size] holds; none yet
};

}  // namespace switchyard::obs
