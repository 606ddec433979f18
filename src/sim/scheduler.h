// The simulated engine's continuous-batching scheduler, free of clocks and
// I/O: each step() advances every running sequence by one token (more with
// speculative decoding), interleaves prompt processing up to a token budget,
// and says how long that step takes in model seconds. The Engine
// (engine.h) paces steps in real time; tests drive step() directly with a
// virtual clock.
//
// Two KV disciplines, one per dialect:
//  * slots (llama-server): max_seqs slots of slot_context tokens each, KV
//    reserved per slot, so nothing is ever preempted; a slot reuses the
//    common prefix with its previous prompt (cache_n).
//  * paged (vLLM): one pool of blocks shared by all sequences; prompts hit
//    cached blocks by chained hash; when a running sequence needs a block
//    and none is free, the newest running sequence is preempted (its blocks
//    freed, recomputed when it is admitted again).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "sim/host_prompt_cache.h"
#include "sim/kv_pool.h"
#include "sim/timing_model.h"
#include "sim/tokenizer.h"

namespace switchyard::sim {

enum class SchedulerMode { slots, paged };

struct SchedulerOptions {
  SchedulerMode mode = SchedulerMode::slots;
  // Sequences running at once: llama-server's slots (-np), vLLM's
  // --max-num-seqs. More requests wait, first come first served. Default 1.
  int max_seqs = 1;
  // slots: the context of one slot (prompt + output), llama-server's -c / -np.
  // Default 8192.
  int slot_context = 8192;
  // paged: size of the KV pool in tokens, rounded down to whole blocks; the
  // longest sequence must fit. Default 65536.
  int kv_capacity_tokens = 65536;
  // paged: tokens per KV block (vLLM --block-size). Default 16.
  int block_size = 16;
  // Reuse cached prefixes (llama-server cache_prompt, vLLM
  // --enable-prefix-caching). Default on.
  bool prefix_caching = true;
  // slots: llama-server's host-memory prompt cache in MiB (--cache-ram): a
  // slot's prompt is saved to RAM before the slot takes a different one and
  // restored for a similar prompt later (host_prompt_cache.h). 0 disables
  // it, -1 lifts the byte limit (n_ctx tokens then). Default 0, so a bare
  // scheduler keeps one prompt per slot; `switchyard sim` defaults to
  // llama-server's 8192 (common/common.h, cache_ram_mib).
  int cache_ram_mib = 0;
  // slots: KV state per token, in bytes: what a prompt takes in that cache
  // and what saving or restoring it copies. Default 32 KiB (a 196608-token
  // slot of the 27B presets then needs 6 GiB beside ~16 GiB of Q4 weights
  // on a 24 GB card; BRIEF.md's hybrid model is about the same).
  int kv_bytes_per_token = 32 * 1024;
  // Tokens one step may process, decode tokens included: llama-server's
  // n_batch (2048), vLLM's --max-num-batched-tokens. Longer prompts are
  // prefilled in chunks over several steps. Default 2048.
  int max_batched_tokens = 2048;
  TimingOptions timing;
  // Seeds the generated token ids and speculative acceptance.
  std::uint64_t seed = 42;
  // Generated tokens are drawn uniformly from [first_output_token,
  // first_output_token + output_token_count).
  Token first_output_token = 0;
  int output_token_count = 1;
};

// What a request asked for, kept for llama-server's /slots.
struct RequestInfo {
  int n_predict = -1;
  bool ignore_eos = false;
  bool stream = false;
};

struct SeqRequest {
  std::vector<Token> prompt;  // not empty
  // Tokens the sequence generates before it finishes (decided by the caller:
  // the limit, the model's natural length, the context left).
  int n_out = 0;
  // slots: reuse the slot's cached prefix (llama-server cache_prompt).
  bool cache_prompt = true;
  // slots: run on this slot (waiting for it), or -1 for the best free one.
  int id_slot = -1;
  RequestInfo info;
};

using SeqId = std::uint64_t;

// What one step did to one sequence.
struct SeqEvent {
  SeqId id = 0;
  std::vector<Token> tokens;  // generated this step
  bool prefill_done = false;  // its prompt (or recompute) finished this step
  bool finished = false;      // generated n_out tokens; slot and blocks freed
  bool preempted = false;     // evicted to make room; waits to recompute
  int cached = 0;             // with prefill_done: prompt tokens served from cache
};

struct Step {
  double seconds = 0;  // model time the step takes
  std::vector<SeqId> admitted;
  std::vector<SeqEvent> events;
  int decode_seqs = 0;     // sequences that decoded
  int prefill_tokens = 0;  // prompt tokens processed
  int busy = 0;            // sequences holding a slot or running
  // Speculative decoding, this step.
  int drafts = 0;
  int draft_tokens = 0;
  int accepted_tokens = 0;
  std::vector<int> accepted_per_position;  // size spec_draft_tokens
};

// A slot as llama-server's /slots shows it: the running or last sequence.
struct SlotView {
  int id = 0;
  bool busy = false;
  bool used = false;  // has run a sequence since start
  SeqId seq = 0;
  int n_prompt = 0;
  int n_cached = 0;
  int n_decoded = 0;
  int n_remain = 0;
  RequestInfo info;
};

struct SchedulerCounters {
  std::uint64_t steps = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t prefix_queries = 0;  // prompt tokens looked up (paged)
  std::uint64_t prefix_hits = 0;     // of which found cached (paged)
};

class Scheduler {
 public:
  // Options are validated by the caller (see validate() in engine.h).
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();

  const SchedulerOptions& options() const { return options_; }
  const TimingModel& timing() const { return timing_; }

  // Queues a sequence; admit() may start it at once.
  SeqId submit(SeqRequest request);
  // Starts waiting sequences while slots (and KV) allow; returns them.
  std::vector<SeqId> admit();
  // Forgets a sequence wherever it is, freeing its slot and blocks.
  void cancel(SeqId id);
  // Stops computing a running sequence but keeps its slot (a hung request).
  void hold(SeqId id);

  // Whether step() would do anything.
  bool has_work() const;
  // Plans and applies one step: admission, KV for the decoders (preempting
  // when short), decode of every running sequence, prompt chunks in the
  // remaining token budget.
  Step step();

  int running() const { return static_cast<int>(running_.size()); }
  int waiting() const { return static_cast<int>(waiting_.size()); }
  bool is_waiting(SeqId id) const;
  double kv_usage() const;
  int kv_blocks() const;
  std::vector<SlotView> slots() const;
  const SchedulerCounters& counters() const { return counters_; }

 private:
  struct Seq;
  Seq* find(SeqId id);
  bool admissible(const Seq& s) const;
  bool admit_one(Seq& s);
  struct SlotChoice {
    int slot = -1;
    bool by_similarity = false;  // else the least recently used free slot
  };
  SlotChoice pick_slot(const Seq& s) const;
  // llama-server's prompt-cache update when a slot is taken (-> seconds of copying).
  void swap_prompt(int slot, bool by_similarity, const Seq& s);
  bool reserve_decode_blocks(Seq& s, int tokens, Step& step);
  void preempt(Seq& s, Step& step);
  void register_blocks(Seq& s);
  void release(Seq& s);
  void update_slot_view(const Seq& s);
  int draw_accepted();

  const SchedulerOptions options_;
  const TimingModel timing_;
  std::mt19937_64 rng_;
  std::map<SeqId, std::unique_ptr<Seq>> seqs_;
  std::vector<SeqId> running_;  // admission order: the back is preempted first
  std::deque<SeqId> waiting_;
  std::vector<SlotView> slot_views_;
  std::vector<std::vector<Token>> slot_history_;  // each slot's cached tokens
  std::vector<std::uint64_t> slot_last_used_;
  std::optional<KvPool> pool_;                   // paged only
  std::optional<HostPromptCache> prompt_cache_;  // slots with cache_ram_mib != 0
  double copy_seconds_ = 0;                      // prompt-cache copies the next step waits for
  SchedulerCounters counters_;
  SeqId next_id_ = 0;
  std::uint64_t use_clock_ = 0;
};

}  // namespace switchyard::sim
