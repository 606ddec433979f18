#include "plan/gguf_reader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "../support.h"
#include "gguf_test_writer.h"
#include "plan/ggml_types.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

using testing::Bytes;
using testing::GgufWriter;

Result<GgufFile> parse(const Bytes& bytes) {
  return read_gguf(bytes);
}

TEST(GgufReader, ReadsTheRealTinyModel) {
  auto file = read_gguf_file(kStories);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->version, 3u);
  EXPECT_EQ(file->metadata.size(), 19u);
  EXPECT_EQ(file->tensors.size(), 48u);
  ASSERT_NE(file->find("general.architecture"), nullptr);
  EXPECT_EQ(*file->find("general.architecture")->as_string(), "llama");
  EXPECT_EQ(file->find("llama.block_count")->as_uint(), 5u);
  EXPECT_EQ(file->find("llama.attention.head_count_kv")->as_uint(), 4u);
  // A string array keeps its length only; numeric arrays of up to 65536 keep their elements.
  const GgufValue* tokens = file->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->array_length, 512u);
  EXPECT_TRUE(tokens->elements.empty());
  EXPECT_EQ(file->find("tokenizer.ggml.token_type")->elements.size(), 512u);
  // 48 f32 tensors, data packed from the first 32-byte boundary after the tensor infos.
  EXPECT_EQ(file->data_offset, 14176u);
  EXPECT_EQ(file->tensor_bytes, 1171200u);
  EXPECT_EQ(file->data_offset + file->data_bytes, std::filesystem::file_size(kStories));
  EXPECT_EQ(file->tensors[4].name, "blk.0.attn_k.weight");
  EXPECT_EQ(file->tensors[4].dims, (std::vector<uint64_t>{64, 32}));
}

TEST(GgufReader, ReadsEveryScalarType) {
  GgufWriter w;
  w.scalar<uint8_t>("a.u8", testing::kU8, 200)
      .scalar<int8_t>("a.i8", testing::kI8, -5)
      .scalar<uint16_t>("a.u16", testing::kU16, 60000)
      .scalar<int16_t>("a.i16", testing::kI16, 1234)
      .scalar<uint32_t>("a.u32", testing::kU32, 4000000000u)
      .scalar<int32_t>("a.i32", testing::kI32, -7)
      .scalar<float>("a.f32", testing::kF32, 0.5f)
      .boolean("a.bool", true)
      .scalar<uint64_t>("a.u64", testing::kU64, 1ull << 40)
      .scalar<int64_t>("a.i64", testing::kI64, 42)
      .scalar<double>("a.f64", testing::kF64, 2.25)
      .str("a.str", "hello");
  auto file = parse(w.bytes());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->find("a.u8")->as_uint(), 200u);
  EXPECT_EQ(file->find("a.i8")->as_uint(), std::nullopt);  // negative
  EXPECT_EQ(file->find("a.i8")->as_double(), -5.0);
  EXPECT_EQ(file->find("a.u16")->as_uint(), 60000u);
  EXPECT_EQ(file->find("a.i16")->as_uint(), 1234u);
  EXPECT_EQ(file->find("a.u32")->as_uint(), 4000000000u);
  EXPECT_EQ(file->find("a.f32")->as_double(), 0.5);
  EXPECT_EQ(file->find("a.f32")->as_uint(), std::nullopt);
  EXPECT_EQ(file->find("a.bool")->as_uint(), std::nullopt);
  EXPECT_EQ(file->find("a.u64")->as_uint(), 1ull << 40);
  EXPECT_EQ(file->find("a.i64")->as_uint(), 42u);
  EXPECT_EQ(file->find("a.f64")->as_double(), 2.25);
  EXPECT_EQ(*file->find("a.str")->as_string(), "hello");
}

TEST(GgufReader, KeepsIntegerAndBoolArrays) {
  GgufWriter w;
  w.array<int16_t>("x.heads", testing::kI16, {8, 0, 4})
      .array<uint8_t>("x.flags", testing::kBool, {1, 0, 1})
      .array<int32_t>("x.negative", testing::kI32, {1, -1});
  auto file = parse(w.bytes());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->find("x.heads")->as_uint_array(), (std::vector<uint64_t>{8, 0, 4}));
  EXPECT_EQ(file->find("x.flags")->as_uint_array(), (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(file->find("x.negative")->as_uint_array(), std::nullopt);
}

TEST(GgufReader, AcceptsVersionTwoAndHonoursAlignment) {
  GgufWriter w;
  w.version(2).u32("general.alignment", 64).tensor("t", {16}, testing::kTypeF32);
  auto file = parse(w.bytes(false));
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->alignment, 64u);
  EXPECT_EQ(file->data_offset % 64, 0u);
}

TEST(GgufReader, RejectsWrongMagic) {
  Bytes bytes = GgufWriter().bytes();
  bytes[0] = std::byte{'G'};
  bytes[3] = std::byte{'L'};
  auto file = parse(bytes);
  ASSERT_FALSE(file);
  EXPECT_TRUE(mentions(file.error(), "magic is 'GGUL'")) << file.error().message;
}

TEST(GgufReader, RejectsUnsupportedVersions) {
  auto v1 = parse(GgufWriter().version(1).bytes());
  ASSERT_FALSE(v1);
  EXPECT_TRUE(mentions(v1.error(), "version 1")) << v1.error().message;
  auto big_endian = parse(GgufWriter().version(0x03000000).bytes());
  ASSERT_FALSE(big_endian);
  EXPECT_TRUE(mentions(big_endian.error(), "big-endian")) << big_endian.error().message;
  EXPECT_FALSE(parse(GgufWriter().version(7).bytes()));
}

// Every prefix of a valid header is a truncated file: each must fail cleanly, none may crash.
TEST(GgufReader, RejectsEveryTruncation) {
  GgufWriter w = testing::field_case_model();
  w.u32_array("qwen35.extra", {1, 2, 3}).str_array("tokenizer.ggml.tokens", {"a", "bc", ""});
  const Bytes full = w.bytes(false);
  ASSERT_TRUE(parse(full));
  for (size_t n = 0; n < full.size(); ++n) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto file = parse(prefix);
    ASSERT_FALSE(file) << "a " << n << "-byte prefix parsed";
    EXPECT_EQ(file.error().message.rfind("GGUF: ", 0), 0u) << file.error().message;
  }
}

TEST(GgufReader, RejectsAbsurdCountsWithoutAllocating) {
  // Tensor and key/value counts far beyond what the bytes could hold fail at once.
  Bytes header;
  testing::put_bytes(header, "GGUF", 4);
  testing::put<uint32_t>(header, 3);
  testing::put<uint64_t>(header, 1ull << 62);  // tensors
  testing::put<uint64_t>(header, 0);
  auto tensors = parse(header);
  ASSERT_FALSE(tensors);
  EXPECT_TRUE(mentions(tensors.error(), "tensor count")) << tensors.error().message;

  Bytes kvs;
  testing::put_bytes(kvs, "GGUF", 4);
  testing::put<uint32_t>(kvs, 3);
  testing::put<uint64_t>(kvs, 0);
  testing::put<uint64_t>(kvs, ~0ull);
  auto kv = parse(kvs);
  ASSERT_FALSE(kv);
  EXPECT_TRUE(mentions(kv.error(), "metadata count")) << kv.error().message;
}

TEST(GgufReader, RejectsHugeStringAndArrayLengths) {
  const auto start = std::chrono::steady_clock::now();

  Bytes huge_string;
  testing::put<uint64_t>(huge_string, 1ull << 60);
  auto s = parse(GgufWriter().raw("general.name", testing::kString, huge_string).bytes());
  ASSERT_FALSE(s);
  EXPECT_TRUE(mentions(s.error(), "general.name")) << s.error().message;

  Bytes huge_key;  // a key length beyond the file
  testing::put_bytes(huge_key, "GGUF", 4);
  testing::put<uint32_t>(huge_key, 3);
  testing::put<uint64_t>(huge_key, 0);
  testing::put<uint64_t>(huge_key, 1);
  testing::put<uint64_t>(huge_key, ~0ull);
  EXPECT_FALSE(parse(huge_key));

  for (uint32_t element : {testing::kU32, testing::kString, testing::kArray, testing::kF64}) {
    Bytes array;
    testing::put<uint32_t>(array, element);
    testing::put<uint64_t>(array, 1ull << 61);
    auto a = parse(GgufWriter().raw("x.arr", testing::kArray, array).bytes());
    ASSERT_FALSE(a) << "element type " << element;
    EXPECT_TRUE(mentions(a.error(), "claims")) << a.error().message;
  }

  // A string inside a string array that claims more bytes than remain.
  Bytes strings;
  testing::put<uint32_t>(strings, testing::kString);
  testing::put<uint64_t>(strings, 1);
  testing::put<uint64_t>(strings, 1ull << 50);
  EXPECT_FALSE(parse(GgufWriter().raw("x.strs", testing::kArray, strings).bytes()));

  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(GgufReader, SkipsOverlongStringsInsteadOfKeepingThem) {
  const std::string template_text(GgufValue::kMaxKeptStringBytes + 1, 'x');
  auto file = parse(GgufWriter().str("tokenizer.chat_template", template_text).bytes());
  ASSERT_TRUE(file) << file.error().message;
  const GgufValue* value = file->find("tokenizer.chat_template");
  EXPECT_TRUE(value->string_skipped);
  EXPECT_EQ(value->as_string(), nullptr);
}

TEST(GgufReader, RejectsMalformedValues) {
  auto bad_type = parse(GgufWriter().raw("x.y", 13, Bytes(8)).bytes());
  ASSERT_FALSE(bad_type);
  EXPECT_TRUE(mentions(bad_type.error(), "unknown value type 13")) << bad_type.error().message;

  auto bad_bool = parse(GgufWriter().scalar<uint8_t>("x.flag", testing::kBool, 2).bytes());
  ASSERT_FALSE(bad_bool);
  EXPECT_TRUE(mentions(bad_bool.error(), "x.flag")) << bad_bool.error().message;

  auto duplicate = parse(GgufWriter().u32("x.n", 1).u32("x.n", 2).bytes());
  ASSERT_FALSE(duplicate);
  EXPECT_TRUE(mentions(duplicate.error(), "duplicate")) << duplicate.error().message;

  auto bad_alignment = parse(GgufWriter().u32("general.alignment", 48).bytes());
  ASSERT_FALSE(bad_alignment);
  EXPECT_TRUE(mentions(bad_alignment.error(), "alignment")) << bad_alignment.error().message;
}

TEST(GgufReader, RejectsArraysNestedTooDeep) {
  // array<array<array<...>>> nested 6 deep, each with one element.
  Bytes nested;
  for (int depth = 0; depth < 6; ++depth) {
    testing::put<uint32_t>(nested, testing::kArray);
    testing::put<uint64_t>(nested, 1);
  }
  testing::put<uint32_t>(nested, testing::kU8);
  testing::put<uint64_t>(nested, 0);
  auto file = parse(GgufWriter().raw("x.deep", testing::kArray, nested).bytes());
  ASSERT_FALSE(file);
  EXPECT_TRUE(mentions(file.error(), "deeper")) << file.error().message;
}

TEST(GgufReader, RejectsBadTensorInfos) {
  auto unknown = parse(GgufWriter().tensor("w", {32}, 99).bytes(false));
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(mentions(unknown.error(), "tensor 'w'")) << unknown.error().message;
  EXPECT_TRUE(mentions(unknown.error(), "unknown ggml tensor type 99")) << unknown.error().message;

  auto partial_block = parse(GgufWriter().tensor("q", {33}, testing::kTypeQ8_0).bytes(false));
  ASSERT_FALSE(partial_block);
  EXPECT_TRUE(mentions(partial_block.error(), "blocks")) << partial_block.error().message;

  auto five_dims = parse(GgufWriter().tensor("t", {1, 1, 1, 1, 1}, testing::kTypeF32).bytes(false));
  ASSERT_FALSE(five_dims);
  EXPECT_TRUE(mentions(five_dims.error(), "5 dimensions")) << five_dims.error().message;

  auto overflow =
      parse(GgufWriter().tensor("big", {1ull << 40, 1ull << 40}, testing::kTypeF32).bytes(false));
  ASSERT_FALSE(overflow);
  EXPECT_TRUE(mentions(overflow.error(), "overflow")) << overflow.error().message;

  auto long_name =
      parse(GgufWriter().tensor(std::string(65, 'n'), {4}, testing::kTypeF32).bytes(false));
  ASSERT_FALSE(long_name);
}

TEST(GgufReader, RejectsMisalignedTensorOffsets) {
  Bytes image = GgufWriter().tensor("a", {8}, testing::kTypeF32).bytes(false);
  // The offset is the last 8 bytes of the only tensor info.
  image[image.size() - 8] = std::byte{4};
  auto file = parse(image);
  ASSERT_FALSE(file);
  EXPECT_TRUE(mentions(file.error(), "not a multiple of the alignment")) << file.error().message;
}

TEST(GgufReader, FileReaderChecksTheTensorDataIsThere) {
  testing::TempDir dir;
  // The stories260K header without its weights: parses from memory, is truncated as a file.
  std::ifstream in(kStories, std::ios::binary);
  std::vector<char> head(14176);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  const auto path = dir / "header-only.gguf";
  std::ofstream(path, std::ios::binary)
      .write(head.data(), static_cast<std::streamsize>(head.size()));

  const auto* begin = reinterpret_cast<const std::byte*>(head.data());
  EXPECT_TRUE(read_gguf({begin, head.size()}));
  auto file = read_gguf_file(path);
  ASSERT_FALSE(file);
  EXPECT_TRUE(mentions(file.error(), "truncated")) << file.error().message;

  auto missing = read_gguf_file(dir / "nope.gguf");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(mentions(missing.error(), "nope.gguf")) << missing.error().message;
}

TEST(GgmlTypes, BlockSizesMatchGgml) {
  EXPECT_EQ(ggml_tensor_bytes(0, 10).value(), 40u);     // F32
  EXPECT_EQ(ggml_tensor_bytes(1, 10).value(), 20u);     // F16
  EXPECT_EQ(ggml_tensor_bytes(2, 64).value(), 36u);     // Q4_0: 18 B per 32
  EXPECT_EQ(ggml_tensor_bytes(8, 64).value(), 68u);     // Q8_0: 34 B per 32
  EXPECT_EQ(ggml_tensor_bytes(12, 512).value(), 288u);  // Q4_K: 144 B per 256
  EXPECT_EQ(ggml_tensor_bytes(14, 256).value(), 210u);  // Q6_K: 210 B per 256
  EXPECT_EQ(ggml_tensor_bytes(30, 3).value(), 6u);      // BF16
  EXPECT_EQ(ggml_tensor_bytes(39, 32).value(), 17u);    // MXFP4
  EXPECT_FALSE(ggml_tensor_bytes(4, 32));               // Q4_2: removed
  EXPECT_FALSE(ggml_tensor_bytes(1000, 32));
  EXPECT_FALSE(ggml_tensor_bytes(12, 100));  // not whole blocks
}

}  // namespace
}  // namespace switchyard::plan
