// Gives the heap back to the kernel after a burst of closed connections.
//
// Each connection's buffers are freed in blocks well under glibc's mmap
// threshold, so they go back to malloc's free lists and stay in the process
// (RSS) until something calls malloc_trim: 5,000 streams closed left the
// gateway at its peak RSS, and each further burst grew it (issue 12).
// malloc_trim(0) returns every free page of every arena, but walks the heap,
// so it runs once per burst, not per close, and once the burst's closes have
// stopped: a trim in the middle of a burst left the rest of it (up to
// `burst` connections' buffers, some 3 MiB) in the process. Before it, Asio's
// states of the closed sockets are freed (http/descriptor_states.h).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace switchyard::http {

struct HeapTrimOptions {
  // Connections that must have closed since the peak (or the last trim)
  // before a trim is due. Default 256: about 8 MiB of buffers; fewer closes
  // are not worth a heap walk.
  std::size_t burst = 256;
  // How long without a close before a due trim runs, so that the rest of
  // the burst (and the upstream connections closing with it) is freed by
  // then and one trim covers all of it; a burst that goes on is trimmed
  // 4 delays after the trim came due, and once more when it stops. Default
  // 250 ms.
  std::chrono::milliseconds delay{250};
};

// One per server, on its executor's thread; not thread-safe.
class HeapTrimmer {
 public:
  // `trim` releases free heap memory; default_trim calls malloc_trim(0).
  HeapTrimmer(boost::asio::any_io_executor executor, HeapTrimOptions options = {},
              std::function<void()> trim = default_trim);
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // Called after a connection opened or closed, with how many are open now.
  void opened(std::size_t open_now);
  void closed(std::size_t open_now);

  // Stops a pending trim (the server is stopping).
  void cancel();

  // Trims run so far.
  std::size_t trims() const { return trims_; }

  static void default_trim();

 private:
  using clock = std::chrono::steady_clock;
  void wait(clock::duration d);
  // Frees Asio's states of sockets closed before `mark`, then trims.
  void release(std::uint64_t mark);

  const HeapTrimOptions options_;
  const std::function<void()> trim_;
  boost::asio::steady_timer timer_;
  std::size_t peak_ = 0;  // most connections open since the last trim
  std::size_t open_ = 0;  // open now, as last told
  bool pending_ = false;
  bool tail_ = false;  // the last trim ran while its burst went on
  clock::time_point due_{};
  clock::time_point last_close_{};
  std::size_t trims_ = 0;
};

}  // namespace switchyard::http
