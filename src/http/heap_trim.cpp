#include "http/heap_trim.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

namespace switchyard::http {

HeapTrimmer::HeapTrimmer(boost::asio::any_io_executor executor, HeapTrimOptions options,
                         std::function<void()> trim)
    : options_(options), trim_(std::move(trim)), timer_(std::move(executor)) {}

void HeapTrimmer::default_trim() {
  malloc_trim(0);
}

void HeapTrimmer::opened(std::size_t open_now) {
  open_ = open_now;
  peak_ = std::max(peak_, open_now);
}

void HeapTrimmer::closed(std::size_t open_now) {
  open_ = open_now;
  if (pending_ || peak_ < open_now + options_.burst) return;
  pending_ = true;
  timer_.expires_after(options_.delay);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    // Cancelled: the trimmer may be gone, so touch nothing.
    if (ec) return;
    pending_ = false;
    trim_();
    ++trims_;
    peak_ = open_;
  });
}

void HeapTrimmer::cancel() {
  timer_.cancel();
}

}  // namespace switchyard::http
