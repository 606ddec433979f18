#include "sim/scheduler.h"

#include <algorithm>

#include "sim/prefix_cache.h"

namespace switchyard::sim {

namespace {

int blocks_for(int tokens, int block_size) {
  return (tokens + block_size - 1) / block_size;
}

// Host <-> device copies of a prompt's KV state (llama_state_seq_get/set_data):
// about half of PCIe 4.0 x16. An estimate, not a measurement: a 32K-token
// prompt at 32 KiB a token costs 0.07 s against a minute of prefill.
constexpr double kHostCopyBytesPerSecond = 16e9;

}  // namespace

enum class Phase { waiting, prefill, decode, held };

struct Scheduler::Seq {
  SeqId id = 0;
  SeqRequest request;
  Phase phase = Phase::waiting;
  // Prompt then output: what the KV cache holds once computed. After a
  // preemption the whole of it is prefilled again.
  std::vector<Token> tokens;
  int generated = 0;
  int computed = 0;               // leading tokens whose KV is computed
  int cached = 0;                 // tokens reused from cache at the last admission
  int slot = -1;                  // slots mode
  std::vector<BlockId> blocks;    // paged mode
  std::vector<BlockHash> hashes;  // chained hashes of the full blocks registered so far
};

Scheduler::Scheduler(SchedulerOptions options)
    : options_(std::move(options)), timing_(options_.timing), rng_(options_.seed) {
  if (options_.mode == SchedulerMode::slots) {
    slot_views_.resize(options_.max_seqs);
    slot_history_.resize(options_.max_seqs);
    slot_last_used_.resize(options_.max_seqs);
    for (int i = 0; i < options_.max_seqs; ++i) slot_views_[i].id = i;
    if (options_.cache_ram_mib != 0 && options_.prefix_caching) {
      const auto mib = static_cast<std::size_t>(std::max(0, options_.cache_ram_mib));
      prompt_cache_.emplace(mib << 20,
                            static_cast<std::size_t>(options_.slot_context) * options_.max_seqs,
                            static_cast<std::size_t>(std::max(1, options_.kv_bytes_per_token)));
    }
  } else {
    pool_.emplace(std::max(1, options_.kv_capacity_tokens / options_.block_size),
                  options_.block_size);
  }
}

Scheduler::~Scheduler() = default;

Scheduler::Seq* Scheduler::find(SeqId id) {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

bool Scheduler::is_waiting(SeqId id) const {
  auto it = seqs_.find(id);
  return it != seqs_.end() && it->second->phase == Phase::waiting;
}

SeqId Scheduler::submit(SeqRequest request) {
  auto s = std::make_unique<Seq>();
  s->id = ++next_id_;
  s->tokens = request.prompt;
  s->request = std::move(request);
  waiting_.push_back(s->id);
  seqs_.emplace(s->id, std::move(s));
  return next_id_;
}

Scheduler::SlotChoice Scheduler::pick_slot(const Seq& s) const {
  if (s.request.id_slot >= 0) {
    const int id = s.request.id_slot % options_.max_seqs;
    if (slot_views_[id].busy) return {};
    const int common = common_prefix(slot_history_[id], s.tokens);
    return {id, common * 10 > static_cast<int>(s.tokens.size())};
  }
  // llama-server (get_available_slot): the free slot whose cached tokens
  // share the longest prefix with the prompt, if that covers more than 10%
  // of the prompt (--slot-prompt-similarity, default 0.1, compared strictly);
  // otherwise the least recently used free slot.
  int best = -1;
  int best_common = 0;
  int lru = -1;
  for (int i = 0; i < options_.max_seqs; ++i) {
    if (slot_views_[i].busy) continue;
    const int common = common_prefix(slot_history_[i], s.tokens);
    if (common > best_common && common * 10 > static_cast<int>(s.tokens.size())) {
      best = i;
      best_common = common;
    }
    if (lru < 0 || slot_last_used_[i] < slot_last_used_[lru]) lru = i;
  }
  return best >= 0 ? SlotChoice{best, true} : SlotChoice{lru, false};
}

void Scheduler::swap_prompt(int slot, bool by_similarity, const Seq& s) {
  if (!prompt_cache_) return;
  auto& history = slot_history_[slot];
  std::size_t copied = 0;
  // get_available_slot: a slot chosen by similarity that would lose more
  // than half its tokens, or any slot chosen as least recently used, saves
  // its prompt and takes the best cached one instead.
  const int common = common_prefix(history, s.tokens);
  const bool update =
      by_similarity ? common * 2 < static_cast<int>(history.size()) : s.request.id_slot < 0;
  if (update) {
    copied += prompt_cache_->save(history);
    copied += prompt_cache_->load(history, s.tokens);
  }
  // cache_idle_slots (default on): once a task is launched, every idle
  // slot's prompt is saved too (kept in the slot: KV is not unified when
  // -np is given).
  for (int i = 0; i < options_.max_seqs; ++i)
    if (i != slot && !slot_views_[i].busy) copied += prompt_cache_->save(slot_history_[i]);
  copy_seconds_ += static_cast<double>(copied) / kHostCopyBytesPerSecond;
}

bool Scheduler::admissible(const Seq& s) const {
  if (options_.mode == SchedulerMode::slots) return pick_slot(s).slot >= 0;
  if (running() >= options_.max_seqs) return false;
  // Free blocks the prompt needs beyond those it would hit in the cache.
  const int bs = options_.block_size;
  const int total = static_cast<int>(s.tokens.size());
  int hit = 0;
  int hit_free = 0;
  if (options_.prefix_caching) {
    BlockHash parent = 0;
    for (int i = 0; i < (total - 1) / bs; ++i) {
      parent = block_hash(parent, s.tokens, i, bs);
      auto block = pool_->lookup(parent);
      if (!block) break;
      ++hit;
      if (pool_->is_free(*block)) ++hit_free;
    }
  }
  return blocks_for(total, bs) - hit <= pool_->free_blocks() - hit_free;
}

bool Scheduler::admit_one(Seq& s) {
  if (!admissible(s)) return false;
  const int total = static_cast<int>(s.tokens.size());
  if (options_.mode == SchedulerMode::slots) {
    const auto [slot, by_similarity] = pick_slot(s);
    swap_prompt(slot, by_similarity, s);
    // llama-server evaluates at least the last prompt token.
    s.cached = s.request.cache_prompt && options_.prefix_caching
                   ? std::min(common_prefix(slot_history_[slot], s.tokens), total - 1)
                   : 0;
    s.slot = slot;
    auto& view = slot_views_[slot];
    view.busy = true;
    view.used = true;
    slot_last_used_[slot] = ++use_clock_;
  } else {
    const int bs = options_.block_size;
    std::vector<BlockId> blocks;
    s.hashes.clear();
    if (options_.prefix_caching) {
      BlockHash parent = 0;
      for (int i = 0; i < (total - 1) / bs; ++i) {
        const BlockHash h = block_hash(parent, s.tokens, i, bs);
        auto block = pool_->lookup(h);
        if (!block) break;
        pool_->acquire(*block);
        blocks.push_back(*block);
        s.hashes.push_back(h);
        parent = h;
      }
      counters_.prefix_queries += total;
      counters_.prefix_hits += blocks.size() * bs;
    }
    auto fresh = pool_->allocate(blocks_for(total, bs) - static_cast<int>(blocks.size()));
    blocks.insert(blocks.end(), fresh->begin(), fresh->end());  // admissible() checked the room
    s.cached = static_cast<int>(s.hashes.size()) * bs;
    s.blocks = std::move(blocks);
  }
  s.computed = s.cached;
  s.phase = Phase::prefill;
  running_.push_back(s.id);
  update_slot_view(s);
  return true;
}

std::vector<SeqId> Scheduler::admit() {
  std::vector<SeqId> admitted;
  while (!waiting_.empty()) {
    Seq* s = find(waiting_.front());
    if (!admit_one(*s)) break;  // first come, first served: nobody overtakes
    admitted.push_back(s->id);
    waiting_.pop_front();
  }
  return admitted;
}

void Scheduler::update_slot_view(const Seq& s) {
  if (s.slot < 0) return;
  auto& v = slot_views_[s.slot];
  v.seq = s.id;
  v.n_prompt = static_cast<int>(s.request.prompt.size());
  v.n_cached = s.cached;
  v.n_decoded = s.generated;
  v.n_remain = s.request.n_out - s.generated;
  v.info = s.request.info;
}

void Scheduler::register_blocks(Seq& s) {
  if (!pool_ || !options_.prefix_caching) return;
  const int bs = options_.block_size;
  while (static_cast<int>(s.hashes.size()) < s.computed / bs && s.hashes.size() < s.blocks.size()) {
    const int i = static_cast<int>(s.hashes.size());
    const BlockHash h = block_hash(i == 0 ? 0 : s.hashes.back(), s.tokens, i, bs);
    pool_->register_hash(s.blocks[i], h);
    s.hashes.push_back(h);
  }
}

void Scheduler::release(Seq& s) {
  if (s.slot >= 0) {
    slot_views_[s.slot].busy = false;
    auto& history = slot_history_[s.slot];
    history.assign(s.tokens.begin(), s.tokens.begin() + s.computed);
    s.slot = -1;
  }
  if (pool_) {
    pool_->release(s.blocks);
    s.blocks.clear();
  }
  std::erase(running_, s.id);
}

void Scheduler::cancel(SeqId id) {
  Seq* s = find(id);
  if (!s) return;
  if (s->phase == Phase::waiting)
    std::erase(waiting_, id);
  else
    release(*s);
  seqs_.erase(id);
}

void Scheduler::hold(SeqId id) {
  if (Seq* s = find(id); s && s->phase != Phase::waiting) s->phase = Phase::held;
}

bool Scheduler::has_work() const {
  for (SeqId id : running_)
    if (seqs_.at(id)->phase != Phase::held) return true;
  return !waiting_.empty() && admissible(*seqs_.at(waiting_.front()));
}

void Scheduler::preempt(Seq& s, Step& step) {
  // vLLM recomputes a preempted sequence from scratch: prompt and output so
  // far are its new prompt (its freed blocks may still hit the cache).
  release(s);
  s.phase = Phase::waiting;
  s.computed = 0;
  s.hashes.clear();
  waiting_.push_front(s.id);
  ++counters_.preemptions;
  SeqEvent e;
  e.id = s.id;
  e.preempted = true;
  step.events.push_back(std::move(e));
}

bool Scheduler::reserve_decode_blocks(Seq& s, int tokens, Step& step) {
  const int need = blocks_for(static_cast<int>(s.tokens.size()) + tokens, options_.block_size) -
                   static_cast<int>(s.blocks.size());
  if (need <= 0) return true;
  for (;;) {
    if (auto fresh = pool_->allocate(need)) {
      s.blocks.insert(s.blocks.end(), fresh->begin(), fresh->end());
      return true;
    }
    // Out of blocks: preempt the newest running sequence, which may be s.
    Seq& victim = *find(running_.back());
    preempt(victim, step);
    if (&victim == &s) return false;
  }
}

int Scheduler::draw_accepted() {
  const int k = options_.timing.spec_draft_tokens;
  std::bernoulli_distribution accept(options_.timing.spec_acceptance);
  int a = 0;
  while (a < k && accept(rng_)) ++a;
  return a;
}

Step Scheduler::step() {
  Step step;
  const int k = options_.timing.spec_draft_tokens;
  step.accepted_per_position.assign(k, 0);

  // KV for this step's decode tokens, preempting when the pool runs dry.
  std::vector<Seq*> decoders;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Seq& s = *find(running_[i]);
    if (s.phase != Phase::decode) continue;
    if (pool_ && !reserve_decode_blocks(s, 1 + k, step)) break;  // s itself went
    decoders.push_back(&s);
  }
  // Sequences preempted after they were picked are no longer running.
  std::erase_if(decoders, [](Seq* s) { return s->phase != Phase::decode; });

  step.admitted = admit();
  step.busy = running();

  std::vector<SeqEvent> events;
  auto emit = [&](Seq& s, int n) -> SeqEvent& {
    SeqEvent e;
    e.id = s.id;
    for (int i = 0; i < n; ++i) {
      const Token t = options_.first_output_token +
                      static_cast<Token>(rng_() % static_cast<std::uint64_t>(
                                                      std::max(1, options_.output_token_count)));
      e.tokens.push_back(t);
      s.tokens.push_back(t);
    }
    s.generated += n;
    events.push_back(std::move(e));
    return events.back();
  };

  for (Seq* s : decoders) {
    int n = 1;
    if (k > 0) {
      const int a = draw_accepted();
      ++step.drafts;
      step.draft_tokens += k;
      step.accepted_tokens += a;
      for (int i = 0; i < a; ++i) ++step.accepted_per_position[i];
      n += a;
    }
    n = std::min(n, s->request.n_out - s->generated);
    s->computed = static_cast<int>(s->tokens.size());  // the token fed this step
    emit(*s, n);
  }
  step.decode_seqs = static_cast<int>(decoders.size());
  step.seconds = timing_.decode_seconds(step.decode_seqs * (1 + k)) + copy_seconds_;
  copy_seconds_ = 0;

  // Prompt chunks in what is left of the token budget, oldest first.
  int budget = options_.max_batched_tokens - step.decode_seqs * (1 + k);
  for (SeqId id : std::vector<SeqId>(running_)) {
    if (budget <= 0) break;
    Seq& s = *find(id);
    if (s.phase != Phase::prefill) continue;
    const int total = static_cast<int>(s.tokens.size());
    const int chunk = std::min(budget, total - s.computed);
    step.seconds += timing_.prefill_seconds(chunk, s.computed);
    step.prefill_tokens += chunk;
    budget -= chunk;
    s.computed += chunk;
    if (s.computed < total) continue;
    // The last prompt position yields the first token in the same step.
    s.phase = Phase::decode;
    SeqEvent& e = emit(s, std::min(1, s.request.n_out - s.generated));
    e.prefill_done = true;
    e.cached = s.cached;
  }

  for (auto& e : events) {
    Seq& s = *find(e.id);
    register_blocks(s);
    update_slot_view(s);
    if (s.generated >= s.request.n_out) {
      e.finished = true;
      s.computed = static_cast<int>(s.tokens.size());
      release(s);
      seqs_.erase(e.id);
    }
  }
  for (auto& e : events) step.events.push_back(std::move(e));
  ++counters_.steps;
  return step;
}

double Scheduler::kv_usage() const {
  if (pool_) return pool_->usage();
  int busy = 0;
  for (const auto& v : slot_views_) busy += v.busy;
  return static_cast<double>(busy) / std::max(1, options_.max_seqs);
}

int Scheduler::kv_blocks() const {
  return pool_ ? pool_->num_blocks() : 0;
}

std::vector<SlotView> Scheduler::slots() const {
  return slot_views_;
}

}  // namespace switchyard::sim
