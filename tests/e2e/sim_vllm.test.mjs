// The simulator's vLLM dialect: the OpenAI server's shapes, vLLM's error body
// (vllm/entrypoints/openai/protocol.py ErrorResponse), its request extras
// (ignore_eos, min_tokens, token-id prompts), the paged KV pool (preemption
// exactly when it overflows), the block-hashed prefix cache and /metrics.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { USER_MESSAGES, fetchJson, metricValue, postStream, readSse, startSim, stopAll, waitUntil } from './harness.mjs';

const TIMEOUT = { timeout: 20_000 };
const MODEL = 'qwen-27b';
const ids = (n, first = 300) => Array.from({ length: n }, (_, i) => first + (i % 900));

async function metrics(url) {
  return (await fetchJson(`${url}/metrics`)).text;
}
const m = (text, name, labels = {}) => metricValue(text, name, { model_name: MODEL, ...labels });

function expectVllmError(res, status, type) {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(Object.keys(res.body.error), ['message', 'type', 'param', 'code']);
  assert.equal(res.body.error.code, status);
  assert.equal(res.body.error.type, type);
}

describe('sim --dialect vllm', () => {
  after(stopAll);
  afterEach(stopAll);

  test('models, health, tokenizer and errors have vLLM\'s shapes', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 100, alias: MODEL }, ['--dialect', 'vllm', '--max-model-len', 4096]);
    const health = await fetchJson(`${sim.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(health.text, '');

    const models = await fetchJson(`${sim.url}/v1/models`);
    assert.deepEqual(Object.keys(models.body), ['object', 'data']);
    assert.deepEqual(Object.keys(models.body.data[0]),
      ['id', 'object', 'created', 'owned_by', 'root', 'parent', 'max_model_len', 'permission']);
    assert.equal(models.body.data[0].id, MODEL);
    assert.equal(models.body.data[0].max_model_len, 4096);

    const tok = await fetchJson(`${sim.url}/tokenize`, { body: { prompt: 'Once upon a time' } });
    assert.deepEqual(Object.keys(tok.body), ['count', 'max_model_len', 'tokens', 'token_strs']);
    assert.equal(tok.body.count, 4);
    const detok = await fetchJson(`${sim.url}/detokenize`, { body: { tokens: tok.body.tokens } });
    assert.equal(detok.body.prompt, 'Once upon a time');

    expectVllmError(await fetchJson(`${sim.url}/v1/chat/completions`, { body: { model: 'other', messages: USER_MESSAGES } }),
      404, 'NotFoundError');
    const long = await fetchJson(`${sim.url}/v1/completions`, { body: { model: MODEL, prompt: ids(4000), max_tokens: 200 } });
    expectVllmError(long, 400, 'BadRequestError');
    assert.match(long.body.error.message, /maximum context length is 4096 tokens/);
    expectVllmError(await fetchJson(`${sim.url}/v1/chat/completions`, { body: { model: MODEL } }), 400, 'BadRequestError');
    assert.equal((await fetchJson(`${sim.url}/slots`)).status, 404);
  });

  test('completions: token-id prompts, ignore_eos, min_tokens, response and stream shapes', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 100, alias: MODEL }, ['--dialect', 'vllm']);
    const text = await fetchJson(`${sim.url}/v1/completions`,
      { body: { model: MODEL, prompt: ids(50), max_tokens: 40, ignore_eos: true } });
    assert.equal(text.status, 200, text.text);
    assert.deepEqual(Object.keys(text.body), ['id', 'object', 'created', 'model', 'choices', 'usage', 'kv_transfer_params']);
    assert.match(text.body.id, /^cmpl-/);
    assert.equal(text.body.usage.prompt_tokens, 50);
    assert.equal(text.body.usage.completion_tokens, 40);
    assert.equal(text.body.choices[0].finish_reason, 'length');

    // min_tokens: no EOS before 150 tokens (the sim's natural length is 16-128).
    const min = await fetchJson(`${sim.url}/v1/chat/completions`,
      { body: { model: MODEL, messages: USER_MESSAGES, min_tokens: 150, max_tokens: 400 } });
    assert.equal(min.body.usage.completion_tokens, 150);
    assert.equal(min.body.choices[0].finish_reason, 'stop');
    assert.deepEqual(Object.keys(min.body.choices[0].message).slice(0, 2), ['role', 'content']);

    const res = await postStream(`${sim.url}/v1/chat/completions`,
      { model: MODEL, messages: USER_MESSAGES, max_tokens: 5, ignore_eos: true, stream_options: { include_usage: true } });
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const { raw, events } = await readSse(res);
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    assert.equal(events.at(-1).data, '[DONE]');
    assert.deepEqual(events[0].json.choices[0].delta, { role: 'assistant', content: '' });
    const usage = events.at(-2).json;
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage.completion_tokens, 5);
    assert.equal(events.at(-3).json.choices[0].finish_reason, 'length');
    assert.equal(events.length, 1 + 5 + 1 + 1 + 1);
  });

  test('the KV pool preempts exactly when it overflows', TIMEOUT, async () => {
    // 64 blocks of 16 tokens. A 200-token prompt with 300 forced tokens peaks
    // at 32 blocks: two sequences fit exactly, a third overflows the pool.
    const sim = await startSim({ speedFactor: 200, alias: MODEL },
      ['--dialect', 'vllm', '--slots', 8, '--kv-capacity-tokens', 1024, '--block-size', 16, '--max-model-len', 992, '--no-prefix-cache']);
    const run = (n) => Promise.all(Array.from({ length: n }, (_, i) => fetchJson(`${sim.url}/v1/completions`,
      { body: { model: MODEL, prompt: ids(200, 300 + 100 * i), max_tokens: 300, ignore_eos: true } })));
    for (const r of await run(2)) assert.equal(r.body.usage.completion_tokens, 300);
    let text = await metrics(sim.url);
    assert.equal(m(text, 'vllm:num_preemptions_total'), 0, 'two sequences fit');
    assert.match(text, /vllm:cache_config_info\{[^}]*block_size="16"[^}]*num_gpu_blocks="64"[^}]*\} 1\.0/);

    for (const r of await run(3)) assert.equal(r.body.usage.completion_tokens, 300, 'preempted sequences still complete');
    text = await metrics(sim.url);
    assert.ok(m(text, 'vllm:num_preemptions_total') > 0, 'three overflow the pool');
    assert.equal(m(text, 'vllm:num_requests_running'), 0);
    assert.equal(m(text, 'vllm:kv_cache_usage_perc'), 0);
  });

  test('the prefix cache hits full blocks across requests and counts them', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 100, alias: MODEL }, ['--dialect', 'vllm']);
    const prompt = ids(200);
    const body = { model: MODEL, prompt, max_tokens: 4, ignore_eos: true };
    const first = await fetchJson(`${sim.url}/v1/completions`, { body });
    assert.equal(first.body.usage.prompt_tokens_details.cached_tokens, 0);
    const second = await fetchJson(`${sim.url}/v1/completions`, { body });
    assert.equal(second.body.usage.prompt_tokens_details.cached_tokens, 192, '12 full blocks of 16');
    const text = await metrics(sim.url);
    assert.equal(m(text, 'vllm:prefix_cache_queries_total'), 400);
    assert.equal(m(text, 'vllm:prefix_cache_hits_total'), 192);
  });

  test('/metrics: gauges, counters, histograms, speculative decoding', TIMEOUT, async () => {
    // About 0.4 s per request: 200 tokens at ~1.9 per 3.8 ms step.
    const sim = await startSim({ speedFactor: 4, alias: MODEL },
      ['--dialect', 'vllm', '--slots', 4, '--spec-draft-tokens', 3, '--spec-acceptance', 0.5]);
    const running = Array.from({ length: 2 }, () => fetchJson(`${sim.url}/v1/completions`,
      { body: { model: MODEL, prompt: ids(64), max_tokens: 200, ignore_eos: true } }));
    // Both running (and neither finished: they take ~0.4 s each).
    let text = await waitUntil(async () => {
      const t = await metrics(sim.url);
      return m(t, 'vllm:num_requests_running') === 2 ? t : null;
    }, { what: 'both requests running' });
    assert.equal(m(text, 'vllm:num_requests_waiting'), 0);
    assert.ok(m(text, 'vllm:kv_cache_usage_perc') > 0);
    await Promise.all(running);
    text = await metrics(sim.url);
    for (const h of ['time_to_first_token_seconds', 'e2e_request_latency_seconds', 'request_queue_time_seconds'])
      assert.equal(m(text, `vllm:${h}_count`), 2, h);
    assert.ok(m(text, 'vllm:inter_token_latency_seconds_count') > 0);
    assert.equal(m(text, 'vllm:e2e_request_latency_seconds_bucket', { le: '+Inf' }), 2);
    assert.equal(m(text, 'vllm:generation_tokens_total'), 400);
    const drafts = m(text, 'vllm:spec_decode_num_drafts_total');
    assert.ok(drafts > 0 && drafts < 400, `drafts ${drafts}: fewer steps than tokens`);
    assert.equal(m(text, 'vllm:spec_decode_num_draft_tokens_total'), 3 * drafts);
    const accepted = m(text, 'vllm:spec_decode_num_accepted_tokens_total');
    const perPos = [0, 1, 2].map((p) => m(text, 'vllm:spec_decode_num_accepted_tokens_per_pos_total', { position: String(p) }));
    assert.equal(perPos.reduce((a, b) => a + b, 0), accepted);
    assert.ok(perPos[0] >= perPos[1] && perPos[1] >= perPos[2]);
  });
});
