// What a real engine makes the gateway do: its own model name in responses,
// usage only when asked, llama.cpp's native routes, Anthropic's Messages API,
// and the outcome of every request counted as it really ended.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, expectError, fetchJson, metricSum, postStream, readSse, simInstance, startGateway,
  stopAll, streamChat, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 20_000 };

describe('responses name the model the client asked for', () => {
  let gw;
  const api = (p) => `${gw.url}${p}`;
  before(async () => {
    // The engine knows the model by another name (as llama-server, which
    // reports its file path without --alias).
    const inst = { ...simInstance('gpu0', MODEL, { alias: '/models/qwen-27b-q4.gguf', seed: 3 }),
      served_model: '/models/qwen-27b-q4.gguf' };
    gw = await startGateway({ models: [{ name: MODEL, aliases: ['default'] }], instances: [inst] });
  });
  after(stopAll);

  test('a whole body and every chunk of a stream say the name asked for', TIMEOUT, async () => {
    const whole = await fetchJson(api('/v1/chat/completions'), { body: { model: 'default', messages: USER_MESSAGES, max_tokens: 4 } });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.body.model, 'default');
    assert.doesNotMatch(whole.text, /gguf/);
    const res = await postStream(api('/v1/chat/completions'), { model: MODEL, messages: USER_MESSAGES, max_tokens: 6 });
    const { raw, events } = await readSse(res);
    assert.doesNotMatch(raw, /gguf/, 'no chunk names the engine\'s file');
    for (const e of events.slice(0, -1)) assert.equal(e.json.model, MODEL);
  });

  test('a stream without include_usage gets no usage chunk, yet its tokens are counted', TIMEOUT, async () => {
    const tokens = async () => metricSum((await fetchJson(api('/metrics'))).text, 'switchyard_tokens_total', { model: MODEL, kind: 'completion' });
    const before = await tokens();
    const res = await postStream(api('/v1/chat/completions'), { model: MODEL, messages: USER_MESSAGES, max_tokens: 7, ignore_eos: true });
    const { events } = await readSse(res);
    assert.equal(events.at(-1).data, '[DONE]');
    assert.ok(events.every((e) => !e.json?.usage), 'no event carries usage');
    assert.ok(events.every((e) => e.json === undefined || e.json.choices.length > 0), 'no usage-only chunk');
    await waitUntil(async () => (await tokens()) === before + 7, { what: 'completion tokens counted' });
    // Asked for: it is there.
    const asked = await streamChat(gw.url, { model: MODEL, maxTokens: 5 });
    assert.equal(asked.usage?.completion_tokens, 5);
  });

  test('GET /v1/models/{id} for a model, an alias, and an unknown name', TIMEOUT, async () => {
    const model = await fetchJson(api(`/v1/models/${MODEL}`));
    assert.equal(model.status, 200, model.text);
    assert.equal(model.body.id, MODEL);
    assert.equal(model.body.object, 'model');
    const alias = await fetchJson(api('/v1/models/default'));
    assert.equal(alias.body.alias_of, MODEL);
    expectError(assert, await fetchJson(api('/v1/models/gpt-4')), 404, { code: 'model_not_found' });
  });

  test('llama.cpp routes without a model go to the default model', TIMEOUT, async () => {
    const native = await fetchJson(api('/completion'), { body: { prompt: 'Once upon', n_predict: 3 } });
    assert.equal(native.status, 200, native.text);
    assert.equal(typeof native.body.content, 'string');
    const tok = await fetchJson(api('/tokenize'), { body: { content: 'hello world' } });
    assert.equal(tok.status, 200, tok.text);
    assert.ok(Array.isArray(tok.body.tokens));
  });
});

describe('Anthropic Messages API', () => {
  let gw;
  const KEY = 'sk-claude';
  const api = (p) => `${gw.url}${p}`;
  before(async () => {
    gw = await startGateway({
      models: [{ name: MODEL, aliases: ['claude-sonnet'] }],
      instances: [simInstance('gpu0', MODEL, { seed: 5 })],
      api_keys: [KEY],
      health_detail: 'public',
    });
  });
  after(stopAll);
  const headers = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' };

  test('non-streamed and streamed, keyed by x-api-key, named as asked', TIMEOUT, async () => {
    const body = { model: 'claude-sonnet', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] };
    const whole = await fetchJson(api('/v1/messages'), { body, headers });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.body.type, 'message');
    assert.equal(whole.body.model, 'claude-sonnet');
    assert.equal(whole.body.usage.output_tokens, 5);
    const res = await postStream(api('/v1/messages'), body, { headers });
    assert.equal(res.status, 200);
    const { raw, events } = await readSse(res);
    assert.match(raw, /^event: message_start\ndata: /, 'Anthropic framing relayed as it came');
    assert.equal(events[0].json.message.model, 'claude-sonnet');
    assert.equal(events.at(-1).json.type, 'message_stop');
    const count = await fetchJson(api('/v1/messages/count_tokens'), { body: { model: 'claude-sonnet', messages: body.messages }, headers });
    assert.equal(count.status, 200, count.text);
    assert.equal(typeof count.body.input_tokens, 'number');
  });

  test('errors on this path are Anthropic-shaped', TIMEOUT, async () => {
    const bad = await fetchJson(api('/v1/messages'), { body: { model: MODEL, max_tokens: 5 }, headers });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.type, 'error');
    assert.equal(bad.body.error.type, 'invalid_request_error');
    assert.match(bad.body.error.message, /'messages' is required/);
    const unkeyed = await fetchJson(api('/v1/messages'), { body: { model: MODEL, max_tokens: 5, messages: USER_MESSAGES } });
    assert.equal(unkeyed.status, 401);
    assert.equal(unkeyed.body.error.type, 'authentication_error');
    const unknown = await fetchJson(api('/v1/messages'), { body: { model: 'nope', max_tokens: 5, messages: USER_MESSAGES }, headers });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.type, 'not_found_error');
  });
});

describe('/health with keys', () => {
  after(stopAll);
  test('without a key: the status only; with one: the instances', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL }], instances: [simInstance('gpu0', MODEL)], api_keys: ['sk-a'] });
    const detail = async () => (await fetchJson(`${gw.url}/health`, { headers: { authorization: 'Bearer sk-a' } })).body;
    const bare = await fetchJson(`${gw.url}/health`);
    assert.equal(bare.status, 200);
    assert.deepEqual(bare.body, { status: 'ok' }, 'no names or engine URLs without a key');
    assert.equal((await detail()).instances[0].admin, 'active');
  });
});

describe('how requests ended, counted', () => {
  after(stopAll);

  test('no model named and no default to choose: 400 naming the field', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: 'a' }, { name: 'b' }],
      instances: [simInstance('ia', 'a'), simInstance('ib', 'b')] });
    const res = await fetchJson(`${gw.url}/completion`, { body: { prompt: 'x', n_predict: 2 } });
    const e = expectError(assert, res, 400, { messageIncludes: ["'model' is required", 'a, b'] });
    assert.equal(e.param, 'model');
  });

  test('nothing ready and nothing starting: 503 no_instance_ready at once, not a queue wait', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL }], instances: [{ name: 'far', model: MODEL, url: 'http://127.0.0.1:9' }],
      queue: { max_wait: '10s' } }, { waitReady: false });
    const t0 = Date.now();
    const res = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: MODEL, messages: USER_MESSAGES } });
    expectError(assert, res, 503, { code: 'no_instance_ready' });
    assert.ok(Date.now() - t0 < 5000, 'answered without waiting queue.max_wait');
  });

  test('a stream the engine breaks after its first bytes is upstream_failed, not a 200 success', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL }],
      instances: [simInstance('gpu0', MODEL, { extraArgs: ['--reset-after-tokens', 3] })] });
    const r = await streamChat(gw.url, { model: MODEL, maxTokens: 20 });
    assert.equal(r.status, 200);
    assert.equal(r.errorEvent?.code, 'upstream_failed');
    const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.equal(metricSum(metrics, 'switchyard_requests_total', { model: MODEL, outcome: 'upstream_failed' }), 1);
    assert.equal(metricSum(metrics, 'switchyard_requests_total', { model: MODEL, outcome: 'ok' }), 0);
    await gw.proc.waitForOutput(/access id=\S+ POST \/v1\/chat\/completions .* upstream_failed/, 5000);
  });

  test('a client that leaves mid-stream is client_closed', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL }], instances: [simInstance('gpu0', MODEL, { speedFactor: 1, tokensPerSecond: 20 })] });
    const leave = new AbortController();
    await streamChat(gw.url, { model: MODEL, maxTokens: 200, signal: leave.signal, onEvent: (e, seen) => { if (seen.length === 3) leave.abort(); } })
      .catch(() => {});
    await waitUntil(async () => metricSum((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_requests_total',
      { model: MODEL, outcome: 'client_closed' }) === 1, { what: 'client_closed counted' });
  });
});
