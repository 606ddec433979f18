// libFuzzer target for the GGUF reader: any byte string must give a GgufFile or an Error, never a
// crash, a hang or an allocation larger than the input. Parsed files are also turned into model
// facts and KV footprints, which read the same hostile metadata (block counts, per-layer arrays).
// Build line: docs/plan.md ("Fuzzing").
#include <cstddef>
#include <cstdint>
#include <span>

#include "plan/gguf_model.h"
#include "plan/gguf_reader.h"
#include "plan/kv_math.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::plan;
  const auto file = read_gguf(std::span(reinterpret_cast<const std::byte*>(data), size));
  if (!file) return 0;
  const auto facts = facts_from_gguf(*file, "fuzz-00001-of-00002.gguf");
  if (!facts) return 0;
  for (KvType type : {KvType::kF16, KvType::kQ4_0}) {
    const KvFootprint kv = kv_footprint(*facts, type);
    (void)kv.bytes_per_sequence(facts->context_length);
  }
  return 0;
}
