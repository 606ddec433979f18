#include "plan/gguf_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include "plan/ggml_types.h"

namespace switchyard::plan {
namespace {

// Limits from ggml's docs/gguf.md and gguf.cpp: keys are at most 65535 bytes, tensor names at most
// 64, tensors have at most 4 dimensions. Arrays of arrays are legal but unused by real models; the
// depth bound keeps a hostile file from recursing the stack away.
constexpr uint64_t kMaxKeyBytes = 65535;
constexpr uint64_t kMaxTensorNameBytes = 64;
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;

// The smallest encodings, used to reject counts the remaining bytes cannot possibly hold before
// allocating or looping: a key/value is a key length, a type and at least one value byte; a tensor
// info is a name length, a dimension count, one dimension, a type and an offset.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

// Where bytes come from: a span in memory or a file read sequentially. `remaining()` is exact in
// both cases, which is what makes every length check possible.
class Source {
 public:
  virtual ~Source() = default;
  // Reads exactly n bytes, or returns false (and reads nothing useful) when fewer remain.
  virtual bool read(void* dst, size_t n) = 0;
  // Skips exactly n bytes, or returns false when fewer remain.
  virtual bool skip(uint64_t n) = 0;

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return size_ - position_; }
  uint64_t size() const { return size_; }

 protected:
  explicit Source(uint64_t size) : size_(size) {}
  uint64_t size_;
  uint64_t position_ = 0;
};

class SpanSource final : public Source {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : Source(bytes.size()), bytes_(bytes) {}

  bool read(void* dst, size_t n) override {
    if (n > remaining()) return false;
    if (n > 0) std::memcpy(dst, bytes_.data() + position_, n);
    position_ += n;
    return true;
  }
  bool skip(uint64_t n) override {
    if (n > remaining()) return false;
    position_ += n;
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
};

class FileSource final : public Source {
 public:
  FileSource(std::ifstream& in, uint64_t size) : Source(size), in_(in) {}

  bool read(void* dst, size_t n) override {
    if (n > remaining()) return false;
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n) return false;
    position_ += n;
    return true;
  }
  bool skip(uint64_t n) override {
    if (n > remaining()) return false;
    // Short skips (token strings) go through the stream buffer; long ones seek.
    if (n <= (64u << 10)) {
      in_.ignore(static_cast<std::streamsize>(n));
      if (static_cast<uint64_t>(in_.gcount()) != n) return false;
    } else {
      in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
      if (!in_) return false;
    }
    position_ += n;
    return true;
  }

 private:
  std::ifstream& in_;
};

std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

uint64_t scalar_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

// The least bytes one value of `type` can take: what bounds an array's claimed length.
uint64_t min_value_bytes(GgufValueType type) {
  if (type == GgufValueType::kString) return 8;
  if (type == GgufValueType::kArray) return 4 + 8;
  return scalar_bytes(type);
}

bool known_type(uint32_t type) {
  return type <= static_cast<uint32_t>(GgufValueType::kFloat64);
}

// Parses one GGUF stream. Methods return false after recording the first error; nothing after a
// failure is trusted.
class Parser {
 public:
  explicit Parser(Source& source) : source_(source) {}

  Result<GgufFile> parse() {
    GgufFile file;
    file.input_bytes = source_.size();
    if (!parse_header(file) || !parse_metadata(file) || !parse_alignment(file) ||
        !parse_tensor_infos(file)) {
      return Error{error_};
    }
    return file;
  }

 private:
  bool fail(const std::string& what) {
    error_ = "GGUF: " + what + " (at byte " + std::to_string(source_.position()) + ")";
    return false;
  }
  bool truncated(const std::string& while_reading) {
    return fail("file is truncated while reading " + while_reading);
  }

  template <class T>
  bool read_le(T& out, const std::string& what) {
    std::array<unsigned char, sizeof(T)> raw{};
    if (!source_.read(raw.data(), raw.size())) return truncated(what);
    // Assemble little-endian bytes explicitly so the reader is right on any host.
    uint64_t bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) bits |= uint64_t{raw[i]} << (8 * i);
    if constexpr (sizeof(T) == 8) {
      std::memcpy(&out, &bits, 8);
    } else {
      auto narrow = static_cast<std::conditional_t<
          sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>(bits);
      std::memcpy(&out, &narrow, sizeof(T));
    }
    return true;
  }

  // Reads a length-prefixed string of at most `max_bytes` bytes. Longer strings (up to what the
  // file holds) are skipped when `skip_if_longer` and rejected otherwise.
  bool read_string(std::string& out, uint64_t max_bytes, const std::string& what,
                   bool skip_if_longer = false, bool* skipped = nullptr) {
    uint64_t length = 0;
    if (!read_le(length, "the length of " + what)) return false;
    if (length > source_.remaining()) {
      return fail("the length of " + what + " is " + std::to_string(length) +
                  " bytes, more than the " + std::to_string(source_.remaining()) +
                  " bytes left in the file");
    }
    if (length > max_bytes) {
      if (!skip_if_longer) {
        return fail(what + " is " + std::to_string(length) + " bytes long; at most " +
                    std::to_string(max_bytes) + " are allowed");
      }
      if (skipped) *skipped = true;
      out.clear();
      return source_.skip(length) || truncated(what);
    }
    out.resize(length);
    return source_.read(out.data(), length) || truncated(what);
  }

  bool read_scalar(GgufValueType type, GgufValue::Scalar& out, const std::string& what) {
    switch (type) {
      case GgufValueType::kUint8: {
        uint8_t v = 0;
        if (!read_le(v, what)) return false;
        out = uint64_t{v};
        return true;
      }
      case GgufValueType::kInt8: {
        int8_t v = 0;
        if (!read_le(v, what)) return false;
        out = int64_t{v};
        return true;
      }
      case GgufValueType::kUint16: {
        uint16_t v = 0;
        if (!read_le(v, what)) return false;
        out = uint64_t{v};
        return true;
      }
      case GgufValueType::kInt16: {
        int16_t v = 0;
        if (!read_le(v, what)) return false;
        out = int64_t{v};
        return true;
      }
      case GgufValueType::kUint32: {
        uint32_t v = 0;
        if (!read_le(v, what)) return false;
        out = uint64_t{v};
        return true;
      }
      case GgufValueType::kInt32: {
        int32_t v = 0;
        if (!read_le(v, what)) return false;
        out = int64_t{v};
        return true;
      }
      case GgufValueType::kUint64: {
        uint64_t v = 0;
        if (!read_le(v, what)) return false;
        out = v;
        return true;
      }
      case GgufValueType::kInt64: {
        int64_t v = 0;
        if (!read_le(v, what)) return false;
        out = v;
        return true;
      }
      case GgufValueType::kFloat32: {
        float v = 0;
        if (!read_le(v, what)) return false;
        out = double{v};
        return true;
      }
      case GgufValueType::kFloat64: {
        double v = 0;
        if (!read_le(v, what)) return false;
        out = v;
        return true;
      }
      case GgufValueType::kBool: {
        uint8_t v = 0;
        if (!read_le(v, what)) return false;
        // The spec calls anything but 0 or 1 invalid.
        if (v > 1) return fail(what + " is a bool holding " + std::to_string(v));
        out = v == 1;
        return true;
      }
      case GgufValueType::kString:
      case GgufValueType::kArray:
        break;
    }
    return fail(what + " is not a scalar");
  }

  // Skips one array body (used for nested arrays, whose contents nothing reads).
  bool skip_array(const std::string& what, int depth) {
    if (depth > kMaxArrayDepth) return fail(what + " nests arrays deeper than 4 levels");
    uint32_t raw_type = 0;
    uint64_t length = 0;
    if (!read_le(raw_type, "the element type of " + what)) return false;
    if (!known_type(raw_type)) {
      return fail(what + " has unknown element type " + std::to_string(raw_type));
    }
    if (!read_le(length, "the length of " + what)) return false;
    const auto type = static_cast<GgufValueType>(raw_type);
    if (!check_array_fits(type, length, what)) return false;
    if (type == GgufValueType::kString) {
      for (uint64_t i = 0; i < length; ++i) {
        uint64_t n = 0;
        if (!read_le(n, "a string in " + what)) return false;
        if (!source_.skip(n)) return fail("a string in " + what + " runs past the end of file");
      }
      return true;
    }
    if (type == GgufValueType::kArray) {
      for (uint64_t i = 0; i < length; ++i) {
        if (!skip_array(what, depth + 1)) return false;
      }
      return true;
    }
    return source_.skip(length * scalar_bytes(type)) || truncated(what);
  }

  bool check_array_fits(GgufValueType type, uint64_t length, const std::string& what) {
    const uint64_t min_bytes = min_value_bytes(type);
    if (min_bytes != 0 && length > source_.remaining() / min_bytes) {
      return fail(what + " claims " + std::to_string(length) + " elements, more than the " +
                  std::to_string(source_.remaining()) + " bytes left in the file could hold");
    }
    return true;
  }

  bool read_array(GgufValue& value, const std::string& what) {
    uint32_t raw_type = 0;
    if (!read_le(raw_type, "the element type of " + what)) return false;
    if (!known_type(raw_type)) {
      return fail(what + " has unknown element type " + std::to_string(raw_type));
    }
    value.element_type = static_cast<GgufValueType>(raw_type);
    if (!read_le(value.array_length, "the length of " + what)) return false;
    if (!check_array_fits(value.element_type, value.array_length, what)) return false;

    if (value.element_type == GgufValueType::kString) {
      // Only the count is kept: string arrays are vocabularies and merges.
      for (uint64_t i = 0; i < value.array_length; ++i) {
        uint64_t n = 0;
        if (!read_le(n, "a string in " + what)) return false;
        if (n > source_.remaining()) {
          return fail("a string in " + what + " is " + std::to_string(n) +
                      " bytes, more than the " + std::to_string(source_.remaining()) +
                      " left in the file");
        }
        if (!source_.skip(n)) return truncated(what);
      }
      return true;
    }
    if (value.element_type == GgufValueType::kArray) {
      for (uint64_t i = 0; i < value.array_length; ++i) {
        if (!skip_array(what, 2)) return false;
      }
      return true;
    }
    if (value.array_length > GgufValue::kMaxKeptArrayElements) {
      return source_.skip(value.array_length * scalar_bytes(value.element_type)) || truncated(what);
    }
    value.elements.resize(value.array_length);  // bounded by check_array_fits and the cap above
    for (auto& element : value.elements) {
      if (!read_scalar(value.element_type, element, "an element of " + what)) return false;
    }
    return true;
  }

  bool parse_header(GgufFile& file) {
    std::array<char, 4> magic{};
    if (!source_.read(magic.data(), magic.size())) {
      return fail("not a GGUF file: shorter than the 4-byte magic");
    }
    if (std::string_view(magic.data(), 4) != "GGUF") {
      return fail("not a GGUF file: the magic is '" + printable({magic.data(), 4}) +
                  "', expected 'GGUF'");
    }
    if (!read_le(file.version, "the version")) return false;
    if (file.version == 1) {
      return fail("GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are");
    }
    if (file.version != 2 && file.version != 3) {
      // A byte-swapped small version means a big-endian file.
      const uint32_t swapped = __builtin_bswap32(file.version);
      if (swapped == 2 || swapped == 3) {
        return fail("big-endian GGUF files are not supported");
      }
      return fail("unsupported GGUF version " + std::to_string(file.version) +
                  " (versions 2 and 3 are)");
    }
    return true;
  }

  bool parse_metadata(GgufFile& file) {
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;
    if (!read_le(tensor_count, "the tensor count")) return false;
    if (!read_le(kv_count, "the metadata count")) return false;
    tensor_count_ = tensor_count;
    if (kv_count > source_.remaining() / kMinKvBytes) {
      return fail("metadata count " + std::to_string(kv_count) + " is more than the " +
                  std::to_string(source_.remaining()) + " bytes left in the file could hold");
    }
    for (uint64_t i = 0; i < kv_count; ++i) {
      std::string key;
      if (!read_string(key, kMaxKeyBytes, "metadata key #" + std::to_string(i))) return false;
      const std::string what = "metadata '" + printable(key) + "'";
      uint32_t raw_type = 0;
      if (!read_le(raw_type, "the type of " + what)) return false;
      if (!known_type(raw_type)) {
        return fail(what + " has unknown value type " + std::to_string(raw_type));
      }
      GgufValue value;
      value.type = static_cast<GgufValueType>(raw_type);
      bool ok = false;
      if (value.type == GgufValueType::kString) {
        ok = read_string(value.string, GgufValue::kMaxKeptStringBytes, what, true,
                         &value.string_skipped);
      } else if (value.type == GgufValueType::kArray) {
        ok = read_array(value, what);
      } else {
        ok = read_scalar(value.type, value.scalar, what);
      }
      if (!ok) return false;
      if (!file.metadata.emplace(std::move(key), std::move(value)).second) {
        return fail("duplicate " + what);
      }
    }
    return true;
  }

  bool parse_alignment(GgufFile& file) {
    const GgufValue* value = file.find("general.alignment");
    if (value == nullptr) return true;
    const auto alignment = value->as_uint();
    if (!alignment || *alignment == 0 || (*alignment & (*alignment - 1)) != 0) {
      return fail("general.alignment must be a power of two");
    }
    file.alignment = *alignment;
    return true;
  }

  bool parse_tensor_infos(GgufFile& file) {
    if (tensor_count_ > source_.remaining() / kMinTensorInfoBytes) {
      return fail("tensor count " + std::to_string(tensor_count_) + " is more than the " +
                  std::to_string(source_.remaining()) + " bytes left in the file could hold");
    }
    // The count is bounded by the bytes left, but in a multi-gigabyte file that is still a lot:
    // reserve modestly and let the vector grow only with infos actually read.
    file.tensors.reserve(std::min<uint64_t>(tensor_count_, 4096));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensorInfo info;
      if (!read_string(info.name, kMaxTensorNameBytes,
                       "the name of tensor #" + std::to_string(i))) {
        return false;
      }
      const std::string what = "tensor '" + printable(info.name) + "'";
      uint32_t n_dims = 0;
      if (!read_le(n_dims, "the dimension count of " + what)) return false;
      if (n_dims == 0 || n_dims > kMaxDims) {
        return fail(what + " has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
      }
      info.dims.resize(n_dims);
      uint64_t elements = 1;
      for (auto& dim : info.dims) {
        if (!read_le(dim, "a dimension of " + what)) return false;
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(elements, dim, &elements) ||
            elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return fail(what + " has an element count that overflows");
        }
      }
      if (!read_le(info.type, "the type of " + what)) return false;
      if (!read_le(info.offset, "the data offset of " + what)) return false;
      auto bytes = ggml_tensor_bytes(info.type, elements);
      if (!bytes) return fail(what + ": " + bytes.error().message);
      info.bytes = *bytes;
      if (info.offset % file.alignment != 0) {
        return fail(what + " has data offset " + std::to_string(info.offset) +
                    ", not a multiple of the alignment " + std::to_string(file.alignment));
      }
      uint64_t end = 0;
      if (__builtin_add_overflow(info.offset, info.bytes, &end) ||
          __builtin_add_overflow(file.tensor_bytes, info.bytes, &file.tensor_bytes)) {
        return fail(what + " has a data range that overflows");
      }
      file.data_bytes = std::max(file.data_bytes, end);
      file.tensors.push_back(std::move(info));
    }
    const uint64_t end_of_infos = source_.position();
    file.data_offset =
        end_of_infos + (file.alignment - end_of_infos % file.alignment) % file.alignment;
    return true;
  }

  Source& source_;
  uint64_t tensor_count_ = 0;
  std::string error_;
};

}  // namespace

std::optional<uint64_t> GgufValue::as_uint() const {
  if (is_array() || type == GgufValueType::kString || type == GgufValueType::kBool) {
    return std::nullopt;
  }
  if (const auto* u = std::get_if<uint64_t>(&scalar)) return *u;
  if (const auto* i = std::get_if<int64_t>(&scalar); i && *i >= 0) {
    return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

std::optional<double> GgufValue::as_double() const {
  if (is_array() || type == GgufValueType::kString || type == GgufValueType::kBool) {
    return std::nullopt;
  }
  if (const auto* u = std::get_if<uint64_t>(&scalar)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&scalar)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&scalar)) return *d;
  return std::nullopt;
}

const std::string* GgufValue::as_string() const {
  return type == GgufValueType::kString && !string_skipped ? &string : nullptr;
}

std::optional<std::vector<uint64_t>> GgufValue::as_uint_array() const {
  if (!elements_kept() || element_type == GgufValueType::kFloat32 ||
      element_type == GgufValueType::kFloat64) {
    return std::nullopt;
  }
  std::vector<uint64_t> out;
  out.reserve(elements.size());
  for (const auto& element : elements) {
    if (const auto* u = std::get_if<uint64_t>(&element)) {
      out.push_back(*u);
    } else if (const auto* i = std::get_if<int64_t>(&element); i && *i >= 0) {
      out.push_back(static_cast<uint64_t>(*i));
    } else if (const auto* b = std::get_if<bool>(&element)) {
      out.push_back(*b ? 1 : 0);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

Result<GgufFile> read_gguf(std::span<const std::byte> bytes) {
  SpanSource source(bytes);
  return Parser(source).parse();
}

Result<GgufFile> read_gguf_file(const std::filesystem::path& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error{path.string() + ": " + ec.message()};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path.string() + ": cannot open for reading"};
  FileSource source(in, size);
  auto file = Parser(source).parse();
  if (!file) return Error{path.string() + ": " + file.error().message};
  uint64_t data_end = 0;
  if (__builtin_add_overflow(file->data_offset, file->data_bytes, &data_end) || data_end > size) {
    return Error{path.string() + ": GGUF: file is truncated: its tensors need " +
                 std::to_string(file->data_offset) + " + " + std::to_string(file->data_bytes) +
                 " bytes but the file has " + std::to_string(size)};
  }
  return file;
}

}  // namespace switchyard::plan
