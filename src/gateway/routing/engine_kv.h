// What an engine's own /metrics say about the size of its KV cache, for
// engines without llama-server's /props (vLLM): the prefix index of an
// instance holds what its cache holds.
#pragma once

#include <optional>
#include <string_view>

namespace switchyard::gateway {

// vLLM's pool in tokens: num_gpu_blocks × block_size of
// vllm:cache_config_info; nullopt when the text has no such series (or it
// does not parse). The pool is shared by all sequences, so it is the
// instance's cache as a whole.
std::optional<long> vllm_kv_pool_tokens(std::string_view metrics_text);

}  // namespace switchyard::gateway
