#include "http/heap_trim.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/block_cache.h"
#include "http/descriptor_states.h"

namespace switchyard::http {

HeapTrimmer::HeapTrimmer(boost::asio::any_io_executor executor, HeapTrimOptions options,
                         std::function<void()> trim)
    : options_(options), trim_(std::move(trim)), timer_(std::move(executor)) {}

void HeapTrimmer::default_trim() {
  release_thread_blocks();
  malloc_trim(0);
}

void HeapTrimmer::opened(std::size_t open_now) {
  open_ = open_now;
  peak_ = std::max(peak_, open_now);
}

void HeapTrimmer::closed(std::size_t open_now) {
  open_ = open_now;
  last_close_ = clock::now();
  if (pending_ || (peak_ < open_now + options_.burst && !tail_)) return;
  pending_ = true;
  due_ = last_close_;
  wait(options_.delay);
}

void HeapTrimmer::wait(clock::duration d) {
  timer_.expires_after(d);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    // Cancelled: the trimmer may be gone, so touch nothing.
    if (ec) return;
    const auto now = clock::now(), quiet = last_close_ + options_.delay,
               latest = due_ + 4 * options_.delay;
    if (now < quiet && now < latest) return wait(std::min(quiet, latest) - now);
    tail_ = now < quiet;
    release(mark_descriptor_states());
  });
}

void HeapTrimmer::release(std::uint64_t mark) {
  // Expired at once, the timer completes after what the loop has queued by
  // now: the reactor's events for sockets closed before the mark.
  timer_.expires_after(clock::duration::zero());
  timer_.async_wait([this, mark](const boost::system::error_code& ec) {
    if (ec) return;
    const std::size_t freed = reclaim_descriptor_states(timer_.get_executor(), mark);
    pending_ = false;
    trim_();
    ++trims_;
    spdlog::info(
        "memory: {} connection(s) closed since the peak, {} socket state(s) freed, heap "
        "trimmed",
        peak_ - open_, freed);
    peak_ = open_;
  });
}

void HeapTrimmer::cancel() {
  timer_.cancel();
}

}  // namespace switchyard::http
