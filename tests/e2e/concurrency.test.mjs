// Slots are the gateway's to count: it must never send an engine more
// requests than it has slots (no queue yet, so the excess gets a 503), and a
// client that leaves must give its slot back at once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, expectError, fetchJson, metricValue, postStream, readSse, scrapeMetric, simFleet, startGateway, stopAll,
  streamContent, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';

/** One streamed request: {status, tokens} when served, {status, error, retryAfter} when refused. */
async function streamOnce(url, maxTokens) {
  const res = await postStream(`${url}/v1/chat/completions`,
    { model: MODEL, messages: USER_MESSAGES, max_tokens: maxTokens, ignore_eos: true, stream_options: { include_usage: true } });
  if (res.status !== 200) {
    const text = await res.text();
    return { status: res.status, error: JSON.parse(text).error, retryAfter: res.headers.get('retry-after') };
  }
  const { events } = await readSse(res);
  return { status: 200, tokens: streamContent(events).count, done: events.at(-1)?.data === '[DONE]', usage: events.at(-2)?.json?.usage };
}

describe('four one-slot instances', () => {
  let gw;
  let simUrls;
  // The sims' own view: the most requests each ever ran at once, and how many
  // ever had to wait for a slot inside the engine.
  const simMarks = () => Promise.all(simUrls.map(async (u) => {
    const text = (await fetchJson(`${u}/metrics`)).text;
    return { url: u, max: metricValue(text, 'switchyard_sim:requests_processing_max'), deferred: metricValue(text, 'switchyard_sim:requests_deferred_total') };
  }));

  before(async () => {
    // ~650 tok/s per engine: a 300-token stream lasts ~0.5 s, long enough for
    // all 16 requests to arrive while the first four are running.
    gw = await startGateway(simFleet({ count: 4, model: MODEL, speedFactor: 10, slots: 1 }));
    simUrls = (await gw.health()).instances.map((i) => i.url);
    assert.equal(simUrls.length, 4);
  });
  after(stopAll);

  test('16 concurrent streams: each completes or gets 503 all_slots_busy; no engine ever queues', { timeout: 30_000 }, async () => {
    const results = await Promise.all(Array.from({ length: 16 }, () => streamOnce(gw.url, 300)));
    const served = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of served) {
      assert.ok(r.done, 'served streams end with [DONE]');
      assert.equal(r.tokens, 300);
      assert.equal(r.usage.completion_tokens, 300);
    }
    for (const r of refused) {
      assert.equal(r.status, 503, JSON.stringify(r));
      assert.equal(r.error.code, 'all_slots_busy');
      assert.ok(Number(r.retryAfter) > 0, 'Retry-After');
    }
    assert.ok(served.length >= 4, `at least one stream per instance is served (served ${served.length})`);
    assert.ok(refused.length >= 1, 'more streams than slots: some are refused');

    for (const m of await simMarks()) {
      assert.ok(m.max <= 1, `${m.url} ran ${m.max} requests at once`);
      assert.equal(m.deferred, 0, `${m.url} queued requests internally`);
    }
    await waitUntil(async () => (await gw.health()).instances.every((i) => i.in_flight === 0), { what: 'in_flight back to 0' });
  });

  test('4 concurrent streams over 4 instances all complete, one per instance', { timeout: 30_000 }, async () => {
    const results = await Promise.all(Array.from({ length: 4 }, () => streamOnce(gw.url, 300)));
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200], JSON.stringify(results.filter((r) => r.status !== 200)));
    assert.ok(results.every((r) => r.done && r.tokens === 300));
    for (const m of await simMarks()) {
      assert.ok(m.max <= 1, `${m.url} ran ${m.max} requests at once`);
      assert.equal(m.deferred, 0, `${m.url} queued requests internally`);
    }
  });
});

describe('one instance with one slot', () => {
  let gw;
  let simUrl;
  before(async () => {
    // 20 tok/s: a 2000-token stream would run 100 s, so only a working
    // cancellation can free the slot within the test's bounds.
    gw = await startGateway(simFleet({ count: 1, model: MODEL, speedFactor: 1, tokensPerSecond: 20 }));
    simUrl = (await gw.health()).instances[0].url;
  });
  after(stopAll);

  test('events are relayed as they come, and a client that disconnects frees its slot', { timeout: 20_000 }, async () => {
    const abort = new AbortController();
    const res = await postStream(`${gw.url}/v1/chat/completions`,
      { model: MODEL, messages: USER_MESSAGES, max_tokens: 2000, ignore_eos: true }, { signal: abort.signal });
    assert.equal(res.status, 200);
    // Three tokens arrive while the engine still has ~100 s of work: the
    // gateway is not buffering the stream.
    const partial = await readSse(res, { onEvent: (_, events) => streamContent(events).count < 3 });
    assert.ok(partial.stopped);
    assert.equal((await gw.health()).instances[0].in_flight, 1);
    // While the stream holds the only slot, another request is refused.
    expectError(assert, await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 1 } }),
      503, { code: 'all_slots_busy' });

    abort.abort();
    const t0 = Date.now();
    await waitUntil(async () => (await gw.health()).instances[0].in_flight === 0, { timeoutMs: 3000, what: 'gateway in_flight 0 after the abort' });
    await waitUntil(async () => (await scrapeMetric(simUrl, 'llamacpp:requests_processing')) === 0,
      { timeoutMs: 3000, what: 'the engine to stop generating' });
    const next = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 2 } });
    assert.equal(next.status, 200, next.text);
    assert.ok(Date.now() - t0 < 5000, 'slot freed promptly');
    assert.equal(await scrapeMetric(simUrl, 'switchyard_sim:requests_deferred_total'), 0);
  });
});
