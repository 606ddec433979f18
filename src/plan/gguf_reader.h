// A GGUF header reader: the header, the metadata key/values and the tensor infos of one file,
// never the weights. Format: ggml's docs/gguf.md (versions 2 and 3, little-endian).
//
// Hostile input is expected (the reader is fuzzed): every count and length is checked against the
// bytes that remain before anything is allocated, so a malformed file gives an Error naming what
// was wrong and where, never a crash or an allocation larger than the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace switchyard::plan {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// One metadata value. Integers of every width keep their value (unsigned as uint64_t, signed as
// int64_t), floats as double. Arrays keep their length always and their elements only when they
// are numbers or bools and there are at most kMaxKeptArrayElements of them: the planner reads
// per-layer arrays, never a tokenizer's 150,000-entry vocabulary. Strings longer than
// kMaxKeptStringBytes are skipped (kept empty, `string_skipped` set).
struct GgufValue {
  using Scalar = std::variant<uint64_t, int64_t, double, bool>;

  static constexpr uint64_t kMaxKeptArrayElements = 65536;
  static constexpr uint64_t kMaxKeptStringBytes = 1 << 20;

  GgufValueType type = GgufValueType::kUint8;
  Scalar scalar;                                       // the value of a number or bool
  std::string string;                                  // the value of a string
  bool string_skipped = false;                         // a string too long to keep
  GgufValueType element_type = GgufValueType::kUint8;  // arrays only
  uint64_t array_length = 0;                           // arrays only
  std::vector<Scalar> elements;                        // arrays of numbers/bools, when kept

  bool is_array() const { return type == GgufValueType::kArray; }
  bool elements_kept() const { return is_array() && elements.size() == array_length; }

  // A non-negative integer value of any integer type; nothing for floats, bools, strings, arrays
  // and negative numbers.
  std::optional<uint64_t> as_uint() const;
  // Any number (integer or float) as a double.
  std::optional<double> as_double() const;
  // A string value, or nullptr.
  const std::string* as_string() const;
  // The elements of a kept array of non-negative integers or bools (true = 1).
  std::optional<std::vector<uint64_t>> as_uint_array() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = 0;    // ggml_type id
  uint64_t offset = 0;  // relative to the start of the tensor data
  uint64_t bytes = 0;   // storage size from ggml's type table
};

struct GgufFile {
  uint32_t version = 0;
  std::map<std::string, GgufValue, std::less<>> metadata;
  std::vector<GgufTensorInfo> tensors;
  uint64_t alignment = 32;    // general.alignment, or the format's default
  uint64_t data_offset = 0;   // file offset where tensor data starts
  uint64_t data_bytes = 0;    // end of the last tensor's data, relative to data_offset
  uint64_t tensor_bytes = 0;  // sum of every tensor's storage size: the weights
  uint64_t input_bytes = 0;   // size of the file (or span) that was read

  const GgufValue* find(std::string_view key) const;
};

// Parses a GGUF image held in memory. The tensor data need not be present (a header-only prefix
// parses), so this is what the fuzzer drives.
Result<GgufFile> read_gguf(std::span<const std::byte> bytes);

// Reads the header, metadata and tensor infos of the file at `path`, reading none of the weights,
// and checks that the file is long enough to hold the tensor data it describes.
Result<GgufFile> read_gguf_file(const std::filesystem::path& path);

}  // namespace switchyard::plan
