#include "http/read_buffer.h"

#include <array>
#include <new>

namespace switchyard::http {

namespace {

struct KeptBlocks {
  static constexpr std::size_t kMax = 8;
  std::array<void*, kMax> blocks{};
  std::size_t count = 0;
  KeptBlocks() = default;
  KeptBlocks(const KeptBlocks&) = delete;
  KeptBlocks& operator=(const KeptBlocks&) = delete;
  ~KeptBlocks() {
    while (count > 0) ::operator delete(blocks[--count]);
  }
};

thread_local KeptBlocks kept;

}  // namespace

void* take_read_block(std::size_t bytes) {
  if (bytes == kReadBlock && kept.count > 0) return kept.blocks[--kept.count];
  return ::operator new(bytes);
}

void give_read_block(void* block, std::size_t bytes) {
  if (bytes == kReadBlock && kept.count < KeptBlocks::kMax) {
    kept.blocks[kept.count++] = block;
    return;
  }
  ::operator delete(block);
}

}  // namespace switchyard::http
