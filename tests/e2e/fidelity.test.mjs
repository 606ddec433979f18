// What real engines and clients showed the gateway must keep or refuse
// (issue 34): llama.cpp's `timings` through a stream whose usage chunk the
// gateway strips, 400s that name their field, a max_tokens near 2^63 that
// must not wrap past the limits, every documented series from the first
// scrape, and instances removed by a reload gone from every listing.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, expectError, fetchJson, postStream, readSse, simFleet, simInstance, startGateway, stopAll, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 30_000 };
after(stopAll);

/** The events of a chat stream for `body` (merged into a default request). */
async function streamEvents(gw, body) {
  const res = await postStream(`${gw.url}/v1/chat/completions`,
    { model: MODEL, messages: USER_MESSAGES, max_tokens: 6, stream: true, ...body });
  assert.equal(res.status, 200);
  const events = [];
  await readSse(res, { onEvent: (e) => { events.push(e); } });
  return events;
}

describe('llama.cpp timings survive the stripped usage chunk', () => {
  test('a stream without include_usage gets timings and no usage; with it, both', TIMEOUT, async () => {
    const gw = await startGateway(simFleet({ count: 1, model: MODEL, speedFactor: 50 }));
    const plain = await streamEvents(gw, {});
    assert.equal(plain.at(-1).data, '[DONE]');
    assert.ok(plain.every((e) => !e.json?.usage), 'no usage the client did not ask for');
    const timed = plain.filter((e) => e.json?.timings);
    assert.equal(timed.length, 1, 'llama-server\'s timings reach the client once');
    const t = timed[0].json.timings;
    for (const k of ['prompt_n', 'prompt_ms', 'predicted_n', 'predicted_ms', 'predicted_per_second']) {
      assert.equal(typeof t[k], 'number', `timings.${k}`);
    }
    assert.equal(t.predicted_n, 6);
    assert.equal(timed[0].json.model, MODEL, 'named as the client asked');
    assert.equal(timed[0].json.choices[0].finish_reason, 'length', 'in the finish chunk: every chunk has a choice');
    assert.ok(plain.every((e) => e.json === undefined || e.json.choices.length === 1));

    const asked = await streamEvents(gw, { stream_options: { include_usage: true } });
    const last = asked.at(-2).json;
    assert.equal(last.usage.completion_tokens, 6);
    assert.equal(last.timings.predicted_n, 6);
  });
});

describe('400s name their field', () => {
  test('model "", max_tokens -1, a wrong type: param is the field', TIMEOUT, async () => {
    const gw = await startGateway(simFleet({ count: 1, model: MODEL, speedFactor: 50 }));
    const chat = (body) => fetchJson(`${gw.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES, ...body } });
    const cases = [
      [{ model: '' }, 'model'],
      [{ model: MODEL, max_tokens: -1 }, 'max_tokens'],
      [{ model: MODEL, max_completion_tokens: -3 }, 'max_completion_tokens'],
      [{ model: MODEL, stream: 'yes' }, 'stream'],
      [{ model: MODEL, temperature: 'hot' }, 'temperature'],
      [{ model: MODEL, messages: 'hi' }, 'messages'],
    ];
    for (const [body, field] of cases) {
      const e = expectError(assert, await chat(body), 400, { type: 'invalid_request_error', messageIncludes: `'${field}'` });
      assert.equal(e.param, field, JSON.stringify(body));
    }
    const session = await fetchJson(`${gw.url}/v1/chat/completions`,
      { body: { model: MODEL, messages: USER_MESSAGES }, headers: { 'X-Session-Id': 'a b' } });
    assert.equal(expectError(assert, session, 400).param, 'X-Session-Id');
  });

  test('/v1/messages: Anthropic-shaped 400 without max_tokens, and on a raw 413', TIMEOUT, async () => {
    const gw = await startGateway({ ...simFleet({ count: 1, model: MODEL, speedFactor: 50 }), body_limit: '16KiB' });
    const r = await fetchJson(`${gw.url}/v1/messages`, { body: { model: MODEL, messages: USER_MESSAGES } });
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(Object.keys(r.body), ['type', 'error']);
    assert.equal(r.body.error.type, 'invalid_request_error');
    assert.match(r.body.error.message, /'max_tokens' is required/);
    const big = await fetchJson(`${gw.url}/v1/messages`, { body: { model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x'.repeat(20_000) }] } });
    assert.equal(big.status, 413, big.text);
    assert.equal(big.body.type, 'error');
    assert.equal(big.body.error.type, 'request_too_large');
  });
});

describe('a max_tokens near 2^63 does not wrap past the limits', () => {
  test('refused by tpm and by the day budget, not served', TIMEOUT, async () => {
    const gw = await startGateway({
      ...simFleet({ count: 1, model: MODEL, speedFactor: 50 }),
      api_keys: [{ key: 'sk-tpm', name: 'tpm', tpm: 1000 }, { key: 'sk-day', name: 'day', tokens_per_day: 1000 }],
    });
    // Raw text: JSON.stringify would round the number to a double.
    for (const n of ['9223372036854775807', '18446744073709551615', '9223372036854775000']) {
      for (const [key, code] of [['sk-tpm', 'rate_limit_exceeded'], ['sk-day', 'budget_exceeded']]) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"max_tokens":${n}}`,
        });
        const text = await res.text();
        assert.equal(res.status, 429, `${key} max_tokens ${n}: ${text}`);
        assert.equal(JSON.parse(text).error.code, code, text);
      }
    }
  });
});

describe('metrics', () => {
  test('a fresh gateway exports every documented series of its config, at 0', TIMEOUT, async () => {
    const gw = await startGateway(simFleet({ count: 2, model: MODEL, speedFactor: 50 }));
    const text = (await fetchJson(`${gw.url}/metrics`)).text;
    // README's list; the advisor's series exists while a finding is in
    // force, the profiles', keys' and Redis's with those configured.
    for (const name of ['switchyard_requests_total', 'switchyard_time_to_first_byte_seconds_bucket',
      'switchyard_request_duration_seconds_count', 'switchyard_instance_in_flight', 'switchyard_instance_slots',
      'switchyard_instance_up', 'switchyard_queue_depth', 'switchyard_queue_wait_seconds_count',
      'switchyard_retries_total', 'switchyard_tokens_total', 'switchyard_generation_tokens_per_second']) {
      assert.match(text, new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'), `${name} in\n${text}`);
    }
    // What counts what has yet to happen is at 0.
    assert.match(text, /^switchyard_retries_total\{instance="gpu1",model="qwen-27b"\} 0$/m);
    assert.match(text, /^switchyard_queue_wait_seconds_count\{model="qwen-27b"\} 0$/m);
    assert.match(text, /^switchyard_tokens_total\{kind="completion",model="qwen-27b"\} 0$/m);
    assert.match(text, /^switchyard_requests_total\{instance="gpu0",model="qwen-27b",outcome="ok",status="200"\} 0$/m);
  });
});

describe('instances removed by a reload', () => {
  test('leave /health and /admin/status once stopped; the log keeps the removal', TIMEOUT, async () => {
    const config = (names) => ({
      models: [{ name: MODEL, aliases: ['default'] }],
      // The seed by name: gpu1's command is the same in both, so it stays up.
      instances: names.map((n) => simInstance(n, MODEL, { speedFactor: 50, seed: Number(n.slice(3)) + 1 })),
    });
    const gw = await startGateway(config(['gpu0', 'gpu1']));
    const mark = gw.reload(config(['gpu1']));
    await gw.proc.waitForOutput(/config reloaded/, 5000, mark);
    await waitUntil(async () => !(await gw.health()).instances.some((i) => i.name === 'gpu0'),
      { timeoutMs: 10_000, what: 'gpu0 gone from /health' });
    assert.deepEqual((await gw.health()).instances.map((i) => [i.name, i.state]), [['gpu1', 'ready']]);
    const status = (await fetchJson(`${gw.url}/admin/status`)).body;
    assert.deepEqual(status.instances.map((i) => i.name), ['gpu1']);
    assert.match(gw.output().slice(mark), /instance gpu0 \([^)]*\): \w+ -> removed/);
    assert.equal((await fetchJson(`${gw.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES, max_tokens: 2 } })).status, 200);
  });
});
