// The read buffer of an upstream connection. A stream gives its buffer back
// while its engine is silent and takes one again when the next event comes
// (UpstreamCall::read_some), so at an engine's pace every token cost a
// malloc and a free of 4 KiB, past glibc's per-thread cache (which serves
// blocks up to 1,032 bytes): 200-300 instructions an event more than this
// (docs/performance.md). Blocks of that size are kept, a few a thread, for
// the next taker: a stream holds one from its read until it next waits.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>

#include <cstddef>

namespace switchyard::http {

// Blocks of kReadBlock bytes from the calling thread's few kept ones when
// it has one, else from operator new; other sizes from operator new.
inline constexpr std::size_t kReadBlock = 4 * 1024;
void* take_read_block(std::size_t bytes);
void give_read_block(void* block, std::size_t bytes);

template <class T>
struct ReadBlockAllocator {
  using value_type = T;
  ReadBlockAllocator() = default;
  template <class U>
  ReadBlockAllocator(const ReadBlockAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(take_read_block(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { give_read_block(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const ReadBlockAllocator<U>&) const noexcept {
    return true;
  }
};

using ReadBuffer = boost::beast::basic_flat_buffer<ReadBlockAllocator<char>>;

}  // namespace switchyard::http
