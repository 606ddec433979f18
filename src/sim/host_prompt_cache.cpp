#include "sim/host_prompt_cache.h"

#include <algorithm>

#include "sim/prefix_cache.h"

namespace switchyard::sim {

HostPromptCache::HostPromptCache(std::size_t limit_bytes, std::size_t limit_tokens,
                                 std::size_t bytes_per_token)
    : limit_bytes_(limit_bytes),
      limit_tokens_(limit_tokens),
      bytes_per_token_(std::max<std::size_t>(1, bytes_per_token)) {}

std::size_t HostPromptCache::tokens() const {
  std::size_t n = 0;
  for (const auto& e : entries_) n += e.size();
  return n;
}

std::size_t HostPromptCache::save(const std::vector<Token>& prompt) {
  if (prompt.empty()) return 0;
  const auto whole = [](const std::vector<Token>& a, const std::vector<Token>& b) {
    return static_cast<std::size_t>(common_prefix(a, b)) == a.size();
  };
  for (const auto& e : entries_)
    if (whole(prompt, e)) return 0;
  const std::size_t add = bytes(prompt);
  if (limit_bytes_ > 0 && add > limit_bytes_) return 0;
  std::erase_if(entries_, [&](const std::vector<Token>& e) { return whole(e, prompt); });
  if (limit_bytes_ > 0)
    while (!entries_.empty() && size() + add > limit_bytes_) entries_.pop_front();
  entries_.push_back(prompt);
  update();
  return add;
}

std::size_t HostPromptCache::load(std::vector<Token>& slot, const std::vector<Token>& prompt) {
  if (prompt.empty()) return 0;
  const auto n = static_cast<float>(prompt.size());
  const int base = common_prefix(slot, prompt);
  // An empty slot takes any entry.
  float keep_best =
      slot.empty() ? -1.0f : static_cast<float>(base) / static_cast<float>(slot.size());
  float sim_best = static_cast<float>(base) / n;
  auto best = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int common = common_prefix(*it, prompt);
    const float keep = static_cast<float>(common) / static_cast<float>(it->size());
    const float sim = static_cast<float>(common) / n;
    if (keep < 0.25f) continue;
    if (keep_best < keep && sim_best < sim) {
      keep_best = keep;
      sim_best = sim;
      best = it;
    }
  }
  if (best == entries_.end()) return 0;
  slot = std::move(*best);
  entries_.erase(best);
  return bytes(slot);
}

void HostPromptCache::update() {
  if (limit_bytes_ > 0)
    while (!entries_.empty() && size() > limit_bytes_) entries_.pop_front();
  // A byte limit bounds the tokens too (llama-server raises its token limit
  // to what the bytes allow); without one, n_ctx tokens do.
  if (limit_bytes_ == 0 && limit_tokens_ > 0)
    while (!entries_.empty() && tokens() > limit_tokens_) entries_.pop_front();
}

}  // namespace switchyard::sim
