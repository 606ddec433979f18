// Reads an OpenAI completion stream's events into a RequestRecord: when
// content arrived, usage, llama.cpp timings, finish reason, in-stream errors.
#pragma once

#include <string_view>

#include "bench/request_record.h"

namespace switchyard::bench {

class StreamParser {
 public:
  explicit StreamParser(RequestRecord& record) : record_(record) {}

  // One event's data payload (sse_data), arrived `at_ms` after the send.
  void on_data(std::string_view data, double at_ms);

  // After the stream ended normally at `end_ms`: fills e2e, normalises the
  // chunk gaps to per-token, and marks a missing usage or [DONE].
  void finish(double end_ms);

  bool saw_done() const { return done_; }

 private:
  RequestRecord& record_;
  double last_chunk_ms_ = -1;
  bool done_ = false;
};

}  // namespace switchyard::bench
