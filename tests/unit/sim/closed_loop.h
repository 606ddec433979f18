// A closed-loop benchmark client on a virtual clock, driving the Scheduler
// directly: N streams, each sending a fresh random-vocabulary prompt and
// waiting for `n_out` forced tokens before sending the next, as BRIEF.md's
// method does — without sockets, timers or wall time.
#pragma once

#include <random>
#include <set>

#include "sim/scheduler.h"

namespace switchyard::sim::testing {

struct LoopResult {
  double seconds = 0;
  long tokens = 0;
  std::uint64_t preemptions = 0;
  double tokens_per_second() const { return tokens / seconds; }
};

inline LoopResult closed_loop(SchedulerOptions options, int streams, int requests_per_stream,
                              int prompt_len = 2048, int n_out = 256) {
  options.first_output_token = 300;
  options.output_token_count = 500;
  Scheduler s(options);
  std::mt19937 rng(7);
  std::uniform_int_distribution<Token> word(300, 1299);
  auto request = [&] {
    SeqRequest r;
    for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(word(rng));
    r.n_out = n_out;
    return r;
  };
  std::vector<int> left(streams, requests_per_stream);
  std::map<SeqId, int> owner;
  for (int i = 0; i < streams; ++i) owner[s.submit(request())] = i;
  s.admit();
  LoopResult out;
  int active = streams;
  while (active > 0) {
    const Step step = s.step();
    out.seconds += step.seconds;
    for (const auto& e : step.events) {
      out.tokens += static_cast<long>(e.tokens.size());
      if (!e.finished) continue;
      const int stream = owner[e.id];
      if (--left[stream] > 0)
        owner[s.submit(request())] = stream;
      else
        --active;
    }
    s.admit();
  }
  out.preemptions = s.counters().preemptions;
  return out;
}

}  // namespace switchyard::sim::testing
