// API keys: /v1/* and /tokenize need a configured key; /health and /metrics
// do not. The client's Authorization belongs to the gateway and must never
// reach an engine, which may have a key of its own. External `url` instances
// point at fake-engine.mjs, which records exactly what an engine receives.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { USER_MESSAGES, expectError, fetchJson, startFakeEngine, startGateway, stopAll } from './harness.mjs';

const TIMEOUT = { timeout: 15_000 };
const KEYS = ['sk-team-one', 'sk-team-two'];

describe('api keys', () => {
  let gw;
  let engine;
  const bearer = (key) => ({ authorization: `Bearer ${key}` });

  before(async () => {
    engine = await startFakeEngine();
    gw = await startGateway({
      models: [{ name: 'ext-a', aliases: ['a'] }, { name: 'ext-b', aliases: [] }],
      api_keys: KEYS,
      instances: [
        { name: 'with-key', model: 'ext-a', url: engine.url, slots: 2, api_key: 'engine-secret', served_model: 'upstream-a' },
        { name: 'no-key', model: 'ext-b', url: engine.url, slots: 2 },
      ],
    });
  });
  after(stopAll);

  test('no key, a wrong key or a malformed header: 401 on every API route', TIMEOUT, async () => {
    const routes = [
      ['/v1/chat/completions', { model: 'a', messages: USER_MESSAGES }],
      ['/v1/completions', { model: 'a', prompt: 'x' }],
      ['/v1/embeddings', { model: 'a', input: 'x' }],
      ['/tokenize', { model: 'a', content: 'x' }],
      ['/detokenize', { model: 'a', tokens: [1] }],
      ['/v1/models', undefined],
    ];
    for (const [route, body] of routes) {
      for (const headers of [{}, bearer('sk-wrong'), { authorization: KEYS[0] }, bearer(`${KEYS[0]}x`)]) {
        const res = await fetchJson(`${gw.url}${route}`, { body, headers });
        expectError(assert, res, 401, { type: 'authentication_error' });
      }
    }
    assert.deepEqual(await engine.seen(), [], 'nothing unauthenticated reached the engine');
  });

  test('401 responses carry X-Request-Id', TIMEOUT, async () => {
    const res = await fetchJson(`${gw.url}/v1/models`);
    assert.equal(res.status, 401);
    assert.ok(res.headers.get('x-request-id'), 'X-Request-Id on a 401');
  });

  test('a right key is let through; /health and /metrics need none', TIMEOUT, async () => {
    for (const key of KEYS) {
      const res = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'a', messages: USER_MESSAGES }, headers: bearer(key) });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.choices[0].message.content, 'Hello.');
    }
    assert.equal((await fetchJson(`${gw.url}/v1/models`, { headers: bearer(KEYS[1]) })).status, 200);
    assert.equal((await fetchJson(`${gw.url}/health`)).status, 200);
    assert.equal((await fetchJson(`${gw.url}/metrics`)).status, 200);
  });

  test("the engine never sees the client's Authorization; its own key and model name are used", TIMEOUT, async () => {
    const earlier = (await engine.seen()).length;
    const a = await fetchJson(`${gw.url}/v1/chat/completions`,
      { body: { model: 'a', messages: USER_MESSAGES }, headers: { ...bearer(KEYS[0]), 'x-request-id': 'auth-test-1' } });
    assert.equal(a.status, 200, a.text);
    const b = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'ext-b', messages: USER_MESSAGES }, headers: bearer(KEYS[0]) });
    assert.equal(b.status, 200, b.text);

    const seen = (await engine.seen()).slice(earlier);
    assert.equal(seen.length, 2);
    const [toA, toB] = seen;
    assert.equal(toA.headers.authorization, 'Bearer engine-secret', 'the instance api_key replaces the client key');
    assert.equal(toA.body.model, 'upstream-a', 'served_model is what the engine is asked for');
    assert.equal(toA.headers['x-request-id'], 'auth-test-1', 'the request id travels upstream');
    assert.equal(toB.headers.authorization, undefined, 'no key at all for an instance without api_key');
    assert.equal(toB.body.model, 'ext-b');
    for (const s of seen)
      assert.ok(!JSON.stringify(s.headers).includes('sk-team'), `no client key in ${JSON.stringify(s.headers)}`);
  });
});
