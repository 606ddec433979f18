// The simulator against real llama-server captures (shared/reference/llamacpp):
// the gateway and its tests are only as good as the stand-in is faithful, so
// the wire format (headers, SSE framing, keys and their order) must match.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { SHARED, USER_MESSAGES, fetchJson, metricValue, postStream, readSse, startSim, stopAll, streamContent, waitUntil } from './harness.mjs';

const REF = path.join(SHARED, 'reference/llamacpp');
const ref = (name) => fs.readFileSync(path.join(REF, name), 'utf8');
const refHeaders = (name) => Object.fromEntries(ref(name).split('\r\n').slice(1).filter(Boolean)
  .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
const refEvents = (name) => ref(name).split('\n\n').filter(Boolean).map((b) => b.replace(/^data: /, ''));

// The structure of a JSON value: keys in order, recursively, with leaf types.
// Arrays are described by their first element, so token-dependent lengths do
// not matter but the element shape does.
function shape(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, shape(x)]);
  return typeof v;
}

// Chat stream chunks by role in the stream.
function chatKinds(jsonEvents) {
  return {
    role: jsonEvents.find((e) => e.choices[0]?.delta?.role),
    content: jsonEvents.find((e) => typeof e.choices[0]?.delta?.content === 'string'),
    finish: jsonEvents.find((e) => e.choices[0]?.finish_reason),
    usage: jsonEvents.find((e) => e.choices.length === 0),
  };
}

const TIMEOUT = { timeout: 15_000 };

const waitForIdle = (url) => waitUntil(async () => metricValue((await fetchJson(`${url}/metrics`)).text, 'llamacpp:requests_processing') === 0,
  { what: 'an idle sim' });

describe('sim: llama-server wire format', () => {
  let sim;
  before(async () => { sim = await startSim({ speedFactor: 50, seed: 7, alias: 'stories260K' }); });
  after(stopAll);

  test('streamed chat: headers, framing, chunk shapes match the capture', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/chat/completions`,
      { messages: USER_MESSAGES, max_tokens: 8, stream_options: { include_usage: true } });
    assert.equal(res.status, 200);
    const want = refHeaders('chat_stream.headers');
    assert.equal(res.headers.get('content-type'), want['content-type']);
    assert.equal(res.headers.get('x-accel-buffering'), want['x-accel-buffering']);
    assert.equal(res.headers.get('transfer-encoding'), 'chunked');

    const { raw, events } = await readSse(res);
    // Exactly `data: <one line>\n\n` per event, as llama-server writes it.
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    assert.equal(events.at(-1).data, '[DONE]');

    const got = chatKinds(events.slice(0, -1).map((e) => e.json));
    const capture = chatKinds(refEvents('chat_stream.sse').slice(0, -1).map((d) => JSON.parse(d)));
    for (const kind of ['role', 'content', 'finish', 'usage']) {
      assert.ok(got[kind], `the sim sent a ${kind} chunk`);
      assert.deepEqual(shape(got[kind]), shape(capture[kind]), `${kind} chunk shape`);
    }
    // Order: role first, then content, finish, usage, [DONE].
    assert.equal(events[0].json, got.role);
    assert.equal(events.at(-2).json, got.usage);
    assert.equal(events.at(-3).json, got.finish);
    assert.equal(streamContent(events).count, got.usage.usage.completion_tokens);
    assert.equal(got.usage.usage.completion_tokens, 8);
  });

  test('streamed chat without include_usage: timings ride on the finish chunk, no usage chunk', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/chat/completions`, { messages: USER_MESSAGES, max_tokens: 4 });
    const { events } = await readSse(res);
    const got = chatKinds(events.slice(0, -1).map((e) => e.json));
    const capture = chatKinds(refEvents('chat_stream_no_include_usage.sse').slice(0, -1).map((d) => JSON.parse(d)));
    assert.equal(got.usage, undefined);
    assert.equal(capture.usage, undefined);
    assert.deepEqual(shape(got.finish), shape(capture.finish));
    assert.equal(events.at(-1).data, '[DONE]');
  });

  test('streamed /v1/completions: chunk shapes match the capture', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 8 });
    assert.equal(res.status, 200);
    const { raw, events } = await readSse(res);
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    const capture = refEvents('v1_completions_stream.sse');
    assert.equal(events.at(-1).data, '[DONE]');
    assert.deepEqual(shape(events[0].json), shape(JSON.parse(capture[0])), 'content chunk');
    assert.deepEqual(shape(events.at(-2).json), shape(JSON.parse(capture.at(-2))), 'final chunk');
    assert.equal(events.at(-2).json.usage.completion_tokens, 8);
  });

  test('non-streamed chat and completions: body shapes and headers match the captures', TIMEOUT, async () => {
    const chat = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES, max_tokens: 8 } });
    assert.equal(chat.status, 200);
    assert.equal(chat.headers.get('content-type'), refHeaders('chat_nonstream.headers')['content-type']);
    assert.deepEqual(shape(chat.body), shape(JSON.parse(ref('chat_nonstream.body'))));

    const text = await fetchJson(`${sim.url}/v1/completions`, { body: { prompt: 'Once upon a time', max_tokens: 8 } });
    assert.equal(text.status, 200);
    assert.equal(text.headers.get('content-type'), refHeaders('v1_completions.headers')['content-type']);
    assert.deepEqual(shape(text.body), shape(JSON.parse(ref('v1_completions.body'))));
  });

  test('errors, tokenizer, models, health and embeddings match the captures', TIMEOUT, async () => {
    const noMessages = await fetchJson(`${sim.url}/v1/chat/completions`, { body: {} });
    assert.equal(noMessages.status, 400);
    assert.deepEqual(noMessages.body, JSON.parse(ref('error_no_messages.body')));

    const badJson = await fetchJson(`${sim.url}/v1/chat/completions`, { body: '{"messages": ' });
    assert.equal(badJson.status, 500);
    assert.deepEqual(shape(badJson.body), shape(JSON.parse(ref('error_bad_json.body'))));

    const emb = await fetchJson(`${sim.url}/v1/embeddings`, { body: { input: 'x' } });
    assert.equal(emb.status, 501);
    assert.deepEqual(emb.body, JSON.parse(ref('embeddings_disabled.body')));

    const tok = await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time', with_pieces: true } });
    assert.deepEqual(shape(tok.body), shape(JSON.parse(ref('tokenize.body'))));
    const ids = (await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time' } })).body.tokens;
    const detok = await fetchJson(`${sim.url}/detokenize`, { body: { tokens: ids } });
    assert.deepEqual(shape(detok.body), shape(JSON.parse(ref('detokenize.body'))));
    assert.equal(detok.body.content.trim(), 'Once upon a time');

    const models = await fetchJson(`${sim.url}/v1/models`);
    assert.deepEqual(shape(models.body), shape(JSON.parse(ref('v1_models.body'))));
    assert.equal(models.body.data[0].id, 'stories260K');

    const health = await fetchJson(`${sim.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, JSON.parse(ref('health.body')));
  });

  test('ignore_eos + max_tokens gives exactly N tokens; without max_tokens it stops on its own', TIMEOUT, async () => {
    const exact = await fetchJson(`${sim.url}/v1/chat/completions`,
      { body: { messages: USER_MESSAGES, max_tokens: 40, ignore_eos: true } });
    assert.equal(exact.body.usage.completion_tokens, 40);
    assert.equal(exact.body.choices[0].finish_reason, 'length');

    const free = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES } });
    assert.equal(free.body.choices[0].finish_reason, 'stop');
    assert.ok(free.body.usage.completion_tokens >= 16 && free.body.usage.completion_tokens <= 128,
      `16..128 tokens, got ${free.body.usage.completion_tokens}`);
  });

  test('/slots: idle and busy shapes match the captures; fail_on_no_slot=1 is 503 when all are busy', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 });  // a slot never used yet
    const idle = await fetchJson(`${sim.url}/slots`);
    assert.equal(idle.status, 200);
    const capturedIdle = JSON.parse(ref('slots.body'));
    assert.deepEqual(shape(idle.body[0]), shape(capturedIdle[0]));
    assert.equal((await fetchJson(`${sim.url}/slots?fail_on_no_slot=1`)).status, 200);

    // A long request keeps the only slot busy (1000 tokens at 65 tok/s x50: ~0.3 s).
    const ctrl = new AbortController();
    const busyReq = postStream(`${sim.url}/completion`, { prompt: 'Once upon a time', n_predict: 1000, ignore_eos: true, stream: true },
      { signal: ctrl.signal });
    const res = await busyReq;
    const reader = res.body.getReader();
    await reader.read();
    const busy = await fetchJson(`${sim.url}/slots`);
    assert.deepEqual(shape(busy.body[0]), shape(JSON.parse(ref('slots_busy.body'))[0]));
    assert.equal(busy.body[0].is_processing, true);
    assert.equal(busy.body[0].params.n_predict, 1000);
    const none = await fetchJson(`${sim.url}/slots?fail_on_no_slot=1`);
    assert.equal(none.status, 503);
    assert.deepEqual(Object.keys(none.body.error), ['code', 'message', 'type']);
    ctrl.abort();
    await reader.cancel().catch(() => {});
    // After use an idle slot keeps the last task's fields, as slots_after.body shows.
    await waitForIdle(sim.url);
    const after = await fetchJson(`${sim.url}/slots`);
    assert.deepEqual(shape(after.body[0]), shape(JSON.parse(ref('slots_after.body'))[1]));
    await sim.stop();
  });

  test('POST /completion: body and stream shapes as the captures, stop chunk without [DONE]', TIMEOUT, async () => {
    const full = await fetchJson(`${sim.url}/completion`, { body: { prompt: 'Once upon a time', n_predict: 256, ignore_eos: true } });
    assert.equal(full.status, 200);
    const captured = JSON.parse(ref('completion_ignore_eos.body'));
    assert.deepEqual(shape(full.body), shape(captured));
    assert.equal(full.body.tokens_predicted, 256);
    assert.equal(full.body.stop_type, 'limit');
    assert.equal(full.body.timings.predicted_n, 256);
    assert.deepEqual(full.body.generation_settings.logit_bias, captured.generation_settings.logit_bias);

    // A token-id prompt, streamed, repeated: the slot's prefix is reused.
    const ids = (await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time there was' } })).body.tokens;
    let last;
    for (let i = 0; i < 2; i++) {
      const res = await postStream(`${sim.url}/completion`, { prompt: ids, n_predict: 8, stream: true });
      const { raw, events } = await readSse(res);
      assert.match(raw, /^(data: [^\n]+\n\n)+$/);
      assert.ok(!raw.includes('[DONE]'));
      const capture = refEvents('completion_stream.sse').map((d) => JSON.parse(d));
      assert.deepEqual(shape(events[0].json), shape(capture[0]), 'token chunk');
      assert.deepEqual(shape(events.at(-1).json), shape(capture.at(-1)), 'stop chunk');
      assert.equal(events.at(-1).json.stop, true);
      assert.equal(events.length, 9);
      last = events.at(-1).json;
    }
    assert.equal(last.timings.cache_n, ids.length - 1, 'all but the last prompt token from the slot cache');
    assert.equal(last.timings.prompt_n, 1);
  });

  test('POST /apply-template and the context limit', TIMEOUT, async () => {
    const t = await fetchJson(`${sim.url}/apply-template`, { body: { messages: [{ role: 'user', content: 'Hi' }] } });
    assert.deepEqual(t.body, JSON.parse(ref('apply_template.body')));
    assert.equal(t.headers.get('content-type'), refHeaders('apply_template.headers')['content-type']);

    const ctx = (await fetchJson(`${sim.url}/props`)).body.default_generation_settings.n_ctx;
    const tooLong = await fetchJson(`${sim.url}/completion`, { body: { prompt: Array(ctx + 5).fill(300), n_predict: 4 } });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.type, 'exceed_context_size_error');
    assert.equal(tooLong.body.error.n_ctx, ctx);
  });

  test('/metrics: the llama.cpp names in the capture\'s order', TIMEOUT, async () => {
    const names = (text) => text.split('\n').filter((l) => l.startsWith('# TYPE')).map((l) => l.split(' ')[2]);
    const got = names((await fetchJson(`${sim.url}/metrics`)).text).filter((n) => n.startsWith('llamacpp:'));
    assert.deepEqual(got, names(ref('metrics.body')));
  });

  test('/metrics carries llama.cpp gauges and the sim high-water marks', TIMEOUT, async () => {
    const res = await fetchJson(`${sim.url}/metrics`);
    assert.equal(res.status, 200);
    for (const name of ['llamacpp:requests_processing', 'llamacpp:requests_deferred',
      'switchyard_sim:requests_processing_max', 'switchyard_sim:requests_deferred_total'])
      assert.notEqual(metricValue(res.text, name), undefined, `${name} in /metrics`);
    assert.equal(metricValue(res.text, 'llamacpp:requests_processing'), 0);
  });
});

describe('sim: the engine model over llama.cpp\'s API', () => {
  after(stopAll);

  test('requests beyond the slots wait inside the sim, counted as deferred', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 2, slots: 1 });  // ~0.23 s per request
    const body = { messages: USER_MESSAGES, max_tokens: 30, ignore_eos: true };
    const all = Promise.all([1, 2, 3].map(() => fetchJson(`${sim.url}/v1/chat/completions`, { body })));
    await waitUntil(async () => metricValue((await fetchJson(`${sim.url}/metrics`)).text, 'llamacpp:requests_deferred') === 2,
      { what: 'two deferred' });
    for (const r of await all) assert.equal(r.body.usage.completion_tokens, 30);
    const text = (await fetchJson(`${sim.url}/metrics`)).text;
    assert.equal(metricValue(text, 'switchyard_sim:requests_processing_max'), 1);
    assert.equal(metricValue(text, 'switchyard_sim:requests_deferred_total'), 2);
    assert.equal(metricValue(text, 'llamacpp:tokens_predicted_total'), 90);
    await sim.stop();
  });

  test('--over-report inflates the self-reported speed, not the delivered one', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 20 }, ['--over-report', 10]);
    const t0 = performance.now();
    const r = await fetchJson(`${sim.url}/completion`, { body: { prompt: 'Once', n_predict: 40, ignore_eos: true } });
    const wall = (performance.now() - t0) / 1000;
    const t = r.body.timings;
    assert.ok(Math.abs(t.predicted_per_second - 10 * 1000 * t.predicted_n / t.predicted_ms) < 1e-6 * t.predicted_per_second);
    assert.ok(t.predicted_per_second > 5 * (40 / wall), `reported ${t.predicted_per_second}, delivered ${40 / wall}`);
    const reported = metricValue((await fetchJson(`${sim.url}/metrics`)).text, 'llamacpp:predicted_tokens_seconds');
    assert.ok(reported > 5 * 65 * 20, `llamacpp:predicted_tokens_seconds ${reported}`);
    await sim.stop();
  });
});
