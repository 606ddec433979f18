#include "plan/ggml_types.h"

#include <array>
#include <string>

namespace switchyard::plan {
namespace {

constexpr uint32_t kQkK = 256;  // QK_K, the super-block size of the k-quants

// (block size, type size) per ggml_type id. Source: llama.cpp gguf-py/gguf/constants.py
// GGML_QUANT_SIZES and GGMLQuantizationType (ggml-org/llama.cpp), which mirror ggml.c's
// type_traits table (blck_size, sizeof(block_*)). Ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (the
// repacked Q4_0_x_y / IQ4_NL_x_y layouts) were removed from GGUF files and are rejected.
struct Entry {
  uint32_t id;
  GgmlTypeTraits traits;
};

constexpr std::array kTypes = {
    Entry{0, {"F32", 1, 4}},
    Entry{1, {"F16", 1, 2}},
    Entry{2, {"Q4_0", 32, 2 + 16}},
    Entry{3, {"Q4_1", 32, 2 + 2 + 16}},
    Entry{6, {"Q5_0", 32, 2 + 4 + 16}},
    Entry{7, {"Q5_1", 32, 2 + 2 + 4 + 16}},
    Entry{8, {"Q8_0", 32, 2 + 32}},
    Entry{9, {"Q8_1", 32, 4 + 4 + 32}},
    Entry{10, {"Q2_K", kQkK, 2 + 2 + kQkK / 16 + kQkK / 4}},
    Entry{11, {"Q3_K", kQkK, 2 + kQkK / 4 + kQkK / 8 + 12}},
    Entry{12, {"Q4_K", kQkK, 2 + 2 + kQkK / 2 + 12}},
    Entry{13, {"Q5_K", kQkK, 2 + 2 + kQkK / 2 + kQkK / 8 + 12}},
    Entry{14, {"Q6_K", kQkK, 2 + kQkK / 2 + kQkK / 4 + kQkK / 16}},
    Entry{15, {"Q8_K", kQkK, 4 + kQkK + kQkK / 8}},
    Entry{16, {"IQ2_XXS", kQkK, 2 + kQkK / 4}},
    Entry{17, {"IQ2_XS", kQkK, 2 + kQkK / 4 + kQkK / 32}},
    Entry{18, {"IQ3_XXS", kQkK, 2 + kQkK / 4 + kQkK / 8}},
    Entry{19, {"IQ1_S", kQkK, 2 + kQkK / 8 + kQkK / 16}},
    Entry{20, {"IQ4_NL", 32, 2 + 16}},
    Entry{21, {"IQ3_S", kQkK, 2 + kQkK / 4 + kQkK / 8 + kQkK / 32 + 4}},
    Entry{22, {"IQ2_S", kQkK, 2 + kQkK / 4 + kQkK / 16}},
    Entry{23, {"IQ4_XS", kQkK, 2 + 2 + kQkK / 2 + kQkK / 64}},
    Entry{24, {"I8", 1, 1}},
    Entry{25, {"I16", 1, 2}},
    Entry{26, {"I32", 1, 4}},
    Entry{27, {"I64", 1, 8}},
    Entry{28, {"F64", 1, 8}},
    Entry{29, {"IQ1_M", kQkK, kQkK / 8 + kQkK / 16 + kQkK / 32}},
    Entry{30, {"BF16", 1, 2}},
    Entry{34, {"TQ1_0", kQkK, 2 + 4 * 13}},
    Entry{35, {"TQ2_0", kQkK, 2 + 64}},
    Entry{39, {"MXFP4", 32, 1 + 16}},
    Entry{40, {"NVFP4", 64, 4 + 32}},
    Entry{41, {"Q1_0", 128, 2 + 16}},
};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type) {
  for (const auto& entry : kTypes) {
    if (entry.id == type) return entry.traits;
  }
  return std::nullopt;
}

Result<uint64_t> ggml_tensor_bytes(uint32_t type, uint64_t elements) {
  const auto traits = ggml_type_traits(type);
  if (!traits) {
    return Error{"unknown ggml tensor type " + std::to_string(type) +
                 " (not in ggml's type table; the file may be newer than this tool)"};
  }
  if (elements % traits->block_size != 0) {
    return Error{"a " + std::string(traits->name) + " tensor of " + std::to_string(elements) +
                 " elements is not a whole number of " + std::to_string(traits->block_size) +
                 "-element blocks"};
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements / traits->block_size, uint64_t{traits->type_size}, &bytes)) {
    return Error{"tensor size overflows 64 bits"};
  }
  return bytes;
}

}  // namespace switchyard::plan
