#!/usr/bin/env python3
"""Writes the seed corpus for tests/fuzz/gguf_fuzz.cpp into tests/fuzz/corpus/gguf/.

Small GGUF headers (ggml docs/gguf.md, version 3, little-endian, no tensor data) covering what the
reader and the model-facts code branch on: every value type, per-layer arrays, hybrid and MLA
layouts, sliding windows and split metadata; plus the first 3 KiB of the real stories260K.gguf.
Run from the repository root:  python3 tests/fuzz/make_gguf_corpus.py [path/to/stories260K.gguf]
"""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gguf")

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
       U64: "Q", I64: "q", F64: "d"}
F32_TYPE, F16_TYPE, Q8_0_TYPE, Q4_K_TYPE = 0, 1, 8, 12


def s(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def value(vtype, v):
    if vtype == STRING:
        return s(v)
    if vtype == ARRAY:
        etype, items = v
        return struct.pack("<IQ", etype, len(items)) + b"".join(value(etype, i) for i in items)
    return struct.pack("<" + FMT[vtype], v)


def gguf(kvs, tensors=()):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        out += s(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset = 0
    for name, dims, ttype, nbytes in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        offset += (nbytes + 31) // 32 * 32
    return out


def arch(name, **keys):
    kvs = [("general.architecture", STRING, name)]
    for key, (vtype, v) in keys.items():
        kvs.append((name + "." + key.replace("__", "."), vtype, v))
    return kvs


SEEDS = {
    "llama-minimal.gguf": gguf(
        arch("llama", block_count=(U32, 2), context_length=(U32, 4096),
             embedding_length=(U32, 256), attention__head_count=(U32, 4),
             attention__head_count_kv=(U32, 2)),
        [("token_embd.weight", [256, 32], F16_TYPE, 256 * 32 * 2),
         ("blk.0.attn_q.weight", [256, 256], Q8_0_TYPE, 256 * 256 // 32 * 34)]),
    "hybrid-interval.gguf": gguf(
        arch("qwen35", block_count=(U32, 8), context_length=(U32, 262144),
             embedding_length=(U32, 1024), attention__head_count=(U32, 8),
             attention__head_count_kv=(U32, 4), attention__key_length=(U32, 256),
             attention__value_length=(U32, 256), full_attention_interval=(U32, 4),
             ssm__conv_kernel=(U32, 4), ssm__inner_size=(U32, 2048), ssm__state_size=(U32, 128),
             ssm__group_count=(U32, 16), ssm__time_step_rank=(U32, 16)),
        [("token_embd.weight", [1024, 256], Q4_K_TYPE, 1024 * 256 // 256 * 144)]),
    "hybrid-zero-heads.gguf": gguf(
        arch("jamba", block_count=(U32, 4), embedding_length=(U32, 512),
             attention__head_count=(U32, 8),
             attention__head_count_kv=(ARRAY, (I16, [0, 0, 0, 8])),
             ssm__conv_kernel=(U32, 4), ssm__inner_size=(U32, 1024), ssm__state_size=(U32, 16))),
    "sliding-pattern.gguf": gguf(
        arch("gemma3", block_count=(U16, 6), attention__head_count=(U32, 8),
             attention__head_count_kv=(ARRAY, (U32, [4, 4, 4, 4, 4, 2])),
             attention__key_length=(U32, 256), attention__value_length=(U32, 256),
             attention__sliding_window=(U32, 1024),
             attention__sliding_window_pattern=(ARRAY, (BOOL, [True] * 5 + [False])))),
    "mla.gguf": gguf(
        arch("deepseek2", block_count=(U64, 3), embedding_length=(U32, 2048),
             attention__head_count=(U32, 16), attention__head_count_kv=(U32, 1),
             attention__key_length=(U32, 576), attention__value_length=(U32, 512),
             attention__kv_lora_rank=(U32, 512), attention__key_length_mla=(U32, 192),
             attention__value_length_mla=(U32, 128), rope__dimension_count=(U32, 64))),
    "split-shard.gguf": gguf(
        arch("llama", block_count=(U32, 2), embedding_length=(U32, 64),
             attention__head_count=(U32, 4))
        + [("split.no", U16, 0), ("split.count", U16, 2), ("split.tensors.count", I32, 2)],
        [("t0", [64, 64], F32_TYPE, 64 * 64 * 4)]),
    "all-value-types.gguf": gguf(
        [("general.architecture", STRING, "rwkv6"), ("rwkv6.block_count", I8, 2),
         ("rwkv6.embedding_length", I64, 64), ("rwkv6.wkv.head_size", U8, 64),
         ("a.u16", U16, 7), ("a.i16", I16, -7), ("a.u32", U32, 7), ("a.i32", I32, -7),
         ("a.f32", F32, 0.5), ("a.bool", BOOL, True), ("a.f64", F64, 2.5),
         ("a.strings", ARRAY, (STRING, ["x", "", "yz"])),
         ("a.nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["q"])])),
         ("general.alignment", U32, 64)]),
    "mamba.gguf": gguf(
        arch("mamba", block_count=(U32, 4), embedding_length=(U32, 768),
             ssm__conv_kernel=(U32, 4), ssm__inner_size=(U32, 1536), ssm__state_size=(U32, 16),
             ssm__time_step_rank=(U32, 48))),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    stories = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/models/stories260K.gguf"
    if os.path.exists(stories):
        with open(stories, "rb") as f:
            head = f.read(3072)
        with open(os.path.join(OUT, "stories260K-head.gguf"), "wb") as f:
            f.write(head)
    for name in sorted(os.listdir(OUT)):
        print(name, os.path.getsize(os.path.join(OUT, name)))


if __name__ == "__main__":
    main()
