// Storage sizes of ggml tensor types: how many bytes a tensor of a given type and element count
// occupies. Used to sum a GGUF model's weight size from its tensor infos without reading weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"

namespace switchyard::plan {

// One ggml type's block layout: `type_size` bytes hold `block_size` elements.
struct GgmlTypeTraits {
  std::string_view name;
  uint32_t block_size;
  uint32_t type_size;
};

// The traits of ggml type id `type` (the `ggml_type` enum value stored in GGUF tensor infos), or
// nothing when the id is unknown or was removed from the format.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type);

// Bytes taken by `elements` elements of ggml type `type`. Fails when the type is unknown, when the
// element count is not a whole number of blocks, or when the size overflows 64 bits.
Result<uint64_t> ggml_tensor_bytes(uint32_t type, uint64_t elements);

}  // namespace switchyard::plan
