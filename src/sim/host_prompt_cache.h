// llama-server's host-memory prompt cache (`--cache-ram`, on by default
// since llama.cpp PR 16391): a slot's prompt is copied to RAM before the
// slot is given to a different prompt, and a later similar prompt restores
// it into whatever slot it gets, so `cache_n` counts the restored tokens.
// Modelled on tools/server/server-task.cpp (server_prompt_cache::alloc,
// ::load, ::update) and server-context.cpp (get_available_slot, the
// cache_idle_slots save after a task is launched).
#pragma once

#include <cstddef>
#include <list>
#include <vector>

#include "sim/tokenizer.h"

namespace switchyard::sim {

class HostPromptCache {
 public:
  // At most `limit_bytes` (0: no byte limit, then at most `limit_tokens`,
  // llama-server's n_ctx), each token's KV state taking `bytes_per_token`.
  HostPromptCache(std::size_t limit_bytes, std::size_t limit_tokens, std::size_t bytes_per_token);

  // Copies `prompt` in (server_prompt_cache::alloc): nothing when it is
  // empty, already held whole by one entry, or larger than the limit;
  // entries it holds whole are dropped, the oldest go until it fits.
  // Returns the bytes copied.
  std::size_t save(const std::vector<Token>& prompt);
  // Replaces `slot` (the tokens a slot holds) by the entry sharing a longer
  // prefix with `prompt` both as a share of the entry (at least a quarter
  // of it: large prompts are not thrashed) and as a share of `prompt`
  // (server_prompt_cache::load); the entry leaves the cache. Returns the
  // bytes copied back, 0 when nothing better is held.
  std::size_t load(std::vector<Token>& slot, const std::vector<Token>& prompt);

  std::size_t entries() const { return entries_.size(); }
  std::size_t tokens() const;

 private:
  std::size_t bytes(const std::vector<Token>& t) const { return t.size() * bytes_per_token_; }
  std::size_t size() const { return tokens() * bytes_per_token_; }
  // Drops the oldest entries past the limits (server_prompt_cache::update).
  void update();

  const std::size_t limit_bytes_;
  const std::size_t limit_tokens_;
  const std::size_t bytes_per_token_;
  std::list<std::vector<Token>> entries_;  // oldest first
};

}  // namespace switchyard::sim
