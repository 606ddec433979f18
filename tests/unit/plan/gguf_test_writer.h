// Test helper: writes small GGUF images (ggml docs/gguf.md, version 3, little-endian) so tests
// build their fixtures instead of shipping binaries. Independent of the reader on purpose: it
// encodes by hand and carries its own tiny type-size table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace switchyard::plan::testing {

using Bytes = std::vector<std::byte>;

inline void put_bytes(Bytes& out, const void* data, size_t n) {
  const auto* p = static_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + n);
}
template <class T>
void put(Bytes& out, T value) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));  // the test hosts are little-endian x86-64
  put_bytes(out, raw, sizeof(T));
}
inline void put_string(Bytes& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

// GGUF value type ids.
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
// ggml type ids used by the tests, with (block size, bytes per block).
enum : uint32_t { kTypeF32 = 0, kTypeF16 = 1, kTypeQ8_0 = 8, kTypeQ4_K = 12, kTypeQ6_K = 14 };

inline uint64_t test_tensor_bytes(uint32_t type, uint64_t elements) {
  switch (type) {
    case kTypeF32:
      return elements * 4;
    case kTypeF16:
      return elements * 2;
    case kTypeQ8_0:
      return elements / 32 * 34;
    case kTypeQ4_K:
      return elements / 256 * 144;
    case kTypeQ6_K:
      return elements / 256 * 210;
    default:
      return 0;
  }
}

class GgufWriter {
 public:
  GgufWriter& version(uint32_t v) {
    version_ = v;
    return *this;
  }

  // Scalars of any GGUF type, encoded as `T`.
  template <class T>
  GgufWriter& scalar(const std::string& key, uint32_t type, T value) {
    begin_kv(key, type);
    put(kvs_, value);
    return *this;
  }
  GgufWriter& u32(const std::string& key, uint32_t v) { return scalar(key, kU32, v); }
  GgufWriter& u64(const std::string& key, uint64_t v) { return scalar(key, kU64, v); }
  GgufWriter& str(const std::string& key, const std::string& v) {
    begin_kv(key, kString);
    put_string(kvs_, v);
    return *this;
  }
  GgufWriter& boolean(const std::string& key, bool v) {
    return scalar<uint8_t>(key, kBool, v ? 1 : 0);
  }
  // An array of integers, each encoded as `T` with GGUF element type `type`.
  template <class T>
  GgufWriter& array(const std::string& key, uint32_t type, const std::vector<T>& values) {
    begin_kv(key, kArray);
    put<uint32_t>(kvs_, type);
    put<uint64_t>(kvs_, values.size());
    for (T v : values) put(kvs_, v);
    return *this;
  }
  GgufWriter& u32_array(const std::string& key, const std::vector<uint32_t>& values) {
    return array(key, kU32, values);
  }
  GgufWriter& str_array(const std::string& key, const std::vector<std::string>& values) {
    begin_kv(key, kArray);
    put<uint32_t>(kvs_, kString);
    put<uint64_t>(kvs_, values.size());
    for (const auto& v : values) put_string(kvs_, v);
    return *this;
  }
  // A key whose value bytes the test writes itself (for malformed files).
  GgufWriter& raw(const std::string& key, uint32_t type, const Bytes& value) {
    begin_kv(key, type);
    kvs_.insert(kvs_.end(), value.begin(), value.end());
    return *this;
  }

  // A tensor with the next aligned offset (alignment 32).
  GgufWriter& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type) {
    uint64_t elements = 1;
    for (uint64_t d : dims) elements *= d;
    const uint64_t bytes = test_tensor_bytes(type, elements);
    put_string(infos_, name);
    put<uint32_t>(infos_, static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) put<uint64_t>(infos_, d);
    put<uint32_t>(infos_, type);
    put<uint64_t>(infos_, data_bytes_);
    data_bytes_ += (bytes + 31) / 32 * 32;
    ++tensors_;
    return *this;
  }

  uint64_t tensor_data_bytes() const { return data_bytes_; }

  // The whole image; `with_data` appends zero-filled tensor data after the aligned header.
  Bytes bytes(bool with_data = true) const {
    Bytes out;
    put_bytes(out, "GGUF", 4);
    put<uint32_t>(out, version_);
    put<uint64_t>(out, tensors_);
    put<uint64_t>(out, kv_count_);
    out.insert(out.end(), kvs_.begin(), kvs_.end());
    out.insert(out.end(), infos_.begin(), infos_.end());
    if (with_data) {
      out.resize((out.size() + 31) / 32 * 32 + data_bytes_);
    }
    return out;
  }

  void write(const std::filesystem::path& path, bool with_data = true) const {
    const Bytes b = bytes(with_data);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }

 private:
  void begin_kv(const std::string& key, uint32_t type) {
    put_string(kvs_, key);
    put<uint32_t>(kvs_, type);
    ++kv_count_;
  }

  uint32_t version_ = 3;
  uint64_t kv_count_ = 0;
  uint64_t tensors_ = 0;
  uint64_t data_bytes_ = 0;
  Bytes kvs_;
  Bytes infos_;
};

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("switchyard-plan-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The field report's hybrid model: 64 layers, full attention every 4th (16 KV layers) with 4 KV
// heads of 256 dims, gated-delta-net state on the other 48 (Qwen3.5-27B-like ssm.* values).
inline GgufWriter field_case_model() {
  GgufWriter w;
  w.str("general.architecture", "qwen35")
      .u32("qwen35.block_count", 64)
      .u32("qwen35.context_length", 262144)
      .u32("qwen35.embedding_length", 5120)
      .u32("qwen35.attention.head_count", 24)
      .u32("qwen35.attention.head_count_kv", 4)
      .u32("qwen35.attention.key_length", 256)
      .u32("qwen35.attention.value_length", 256)
      .u32("qwen35.full_attention_interval", 4)
      .u32("qwen35.ssm.conv_kernel", 4)
      .u32("qwen35.ssm.inner_size", 6144)
      .u32("qwen35.ssm.state_size", 128)
      .u32("qwen35.ssm.group_count", 16)
      .u32("qwen35.ssm.time_step_rank", 48)
      .tensor("token_embd.weight", {5120, 256}, kTypeQ8_0);
  return w;
}

}  // namespace switchyard::plan::testing
