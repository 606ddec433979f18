#include "plan/compute_buffers.h"

#include <algorithm>

namespace switchyard::plan {

ComputeEstimate estimate_compute(const ComputeInput& in) {
  const ModelFacts& m = *in.model;
  ComputeEstimate e;
  const uint64_t tokens = std::min<uint64_t>(in.n_ctx, in.n_ubatch);
  e.n_tokens = static_cast<uint32_t>(tokens);
  const double t = static_cast<double>(tokens);
  const double n_kv = static_cast<double>(in.n_ctx);
  const double embd = m.n_embd;
  constexpr double f32 = 4;

  // One layer's live tensors, all f32 [width, n_tokens]. Attention: the residual stream and the
  // normed input (2 x n_embd), Q and the attention output (n_head x head dims), the KQ mask
  // [n_kv, n_tokens] (f16 with flash attention). Without flash attention the KQ matrix
  // [n_kv, n_tokens, n_head] is materialised: this is what makes a long context's buffer large.
  // These terms reproduce llama-server's log for a dense 7B model without flash attention
  // exactly: 164.00 MiB at -c 2048 and 2144.00 MiB at -c 32768 (docs/plan.md).
  const double mask = n_kv * t * 2;
  const double qo = static_cast<double>(m.n_head) * (m.key_length + m.value_length) * t * f32;
  const double kq = static_cast<double>(m.n_head) * n_kv * t * f32;
  const double without_fa = 4 * embd * t * f32 + n_kv * t * f32 + kq;
  const double attention = in.flash_attention ? 2 * embd * t * f32 + qo + mask : without_fa;
  // FFN: the residual, the normed input, gate and up [n_ff, n_tokens].
  const double ffn = (2 * embd + 2 * static_cast<double>(m.n_ff)) * t * f32;
  e.layer_card = std::max(attention, ffn);
  e.layer_card_without_fa = std::max(without_fa, ffn);
  // The output layer: the normed hidden state and the logits [n_vocab, n_tokens].
  const double logits = (embd + static_cast<double>(m.n_vocab)) * t * f32;
  e.output_card = std::max(e.layer_card, logits);
  // The CPU keeps the token embeddings (llama.cpp never offloads the input layer) and builds the
  // mask there in f32 before copying it over.
  e.host = embd * t * f32 + n_kv * t * f32;
  e.host_output = static_cast<double>(m.n_vocab) * std::max<uint32_t>(in.n_seq, 1) * f32;
  return e;
}

}  // namespace switchyard::plan
