// The simulator against real llama-server captures (shared/reference/llamacpp):
// the gateway and its tests are only as good as the stand-in is faithful, so
// the wire format (headers, SSE framing, keys and their order) must match.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { SHARED, USER_MESSAGES, fetchJson, metricValue, postStream, readSse, startSim, stopAll, streamContent } from './harness.mjs';

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

  test('/metrics carries llama.cpp gauges and the sim high-water marks', TIMEOUT, async () => {
    const res = await fetchJson(`${sim.url}/metrics`);
    assert.equal(res.status, 200);
    for (const name of ['llamacpp:requests_processing', 'llamacpp:requests_deferred',
      'switchyard_sim:requests_processing_max', 'switchyard_sim:requests_deferred_total'])
      assert.notEqual(metricValue(res.text, name), undefined, `${name} in /metrics`);
    assert.equal(metricValue(res.text, 'llamacpp:requests_processing'), 0);
  });
});
