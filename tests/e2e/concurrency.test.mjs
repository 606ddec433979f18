// Slots are the gateway's to count: it must never send an engine more
// requests than it has slots. The excess waits in the gateway's per-model
// FIFO queue (not inside an engine), and a client that leaves — while served
// or while queued — gives its slot or its place back at once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, fetchJson, metricValue, postStream, queueDepth, readSse, scrapeMetric, simFleet, startGateway, stopAll,
  streamChat, streamContent, waitForQueueDepth, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';

describe('four one-slot instances', () => {
  let gw;
  let simUrls;
  // The sims' own view: the most requests each ever ran at once, and how many
  // ever had to wait for a slot inside the engine.
  const simMarks = () => Promise.all(simUrls.map(async (u) => {
    const text = (await fetchJson(`${u}/metrics`)).text;
    return { url: u, max: metricValue(text, 'switchyard_sim:requests_processing_max'), deferred: metricValue(text, 'switchyard_sim:requests_deferred_total') };
  }));
  const assertNoEngineQueued = async () => {
    for (const m of await simMarks()) {
      assert.ok(m.max <= 1, `${m.url} ran ${m.max} requests at once`);
      assert.equal(m.deferred, 0, `${m.url} queued requests internally`);
    }
  };

  before(async () => {
    // ~650 tok/s per engine: a 300-token stream lasts ~0.5 s, long enough for
    // all 32 requests to arrive while the first four are running, so 28 queue.
    gw = await startGateway(simFleet({ count: 4, model: MODEL, speedFactor: 10, slots: 1 }));
    simUrls = (await gw.health()).instances.map((i) => i.url);
    assert.equal(simUrls.length, 4);
  });
  after(stopAll);

  test('32 concurrent streams over 4 slots: all complete in full, the excess waits in the gateway, not in an engine',
    { timeout: 30_000 }, async () => {
      // Sample the queue while the streams run: it must fill up (the excess
      // waits) and drain to 0.
      let maxDepth = 0;
      let running = true;
      const sampling = (async () => {
        while (running) {
          maxDepth = Math.max(maxDepth, await queueDepth(gw.url, MODEL));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const results = await Promise.all(Array.from({ length: 32 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 300 })));
      running = false;
      await sampling;

      assert.deepEqual(results.filter((r) => r.status !== 200), [], 'no request is refused: the excess queues');
      for (const r of results) {
        assert.ok(r.done && r.cleanEnd, 'every stream ends with [DONE]');
        assert.equal(r.errorEvent, undefined);
        assert.equal(r.tokens, 300);
        assert.equal(r.usage.completion_tokens, 300);
      }
      await assertNoEngineQueued();
      assert.ok(maxDepth >= 1, `the gateway queue was used (max depth seen ${maxDepth})`);
      assert.equal(await queueDepth(gw.url, MODEL), 0, 'the queue is empty afterwards');
      const waited = await scrapeMetric(gw.url, 'switchyard_queue_wait_seconds_count', { model: MODEL });
      assert.ok(waited >= 16, `most requests went through the queue (queue_wait count ${waited})`);
      await waitUntil(async () => (await gw.health()).instances.every((i) => i.in_flight === 0), { what: 'in_flight back to 0' });
    });

  test('4 concurrent streams over 4 instances all complete, one per instance', { timeout: 30_000 }, async () => {
    const results = await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 300 })));
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200], JSON.stringify(results.filter((r) => r.status !== 200)));
    assert.ok(results.every((r) => r.done && r.tokens === 300));
    await assertNoEngineQueued();
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

  /** Starts a 2000-token stream and reads until 3 tokens arrived: it holds the only slot. */
  async function holdSlot() {
    const abort = new AbortController();
    const res = await postStream(`${gw.url}/v1/chat/completions`,
      { model: MODEL, messages: USER_MESSAGES, max_tokens: 2000, ignore_eos: true }, { signal: abort.signal });
    assert.equal(res.status, 200);
    // Three tokens arrive while the engine still has ~100 s of work: the
    // gateway is not buffering the stream.
    const partial = await readSse(res, { onEvent: (_, events) => streamContent(events).count < 3 });
    assert.ok(partial.stopped);
    assert.equal((await gw.health()).instances[0].in_flight, 1);
    return abort;
  }

  /** A short non-streamed request; resolves fetchJson's result plus doneAt (performance.now(), ms). */
  function short(maxTokens, { signal } = {}) {
    return fetchJson(`${gw.url}/v1/chat/completions`,
      { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: maxTokens, ignore_eos: true }, signal })
      .then((r) => ({ ...r, doneAt: performance.now() }));
  }

  test('events are relayed as they come; a second request queues and is served as soon as the first client leaves',
    { timeout: 20_000 }, async () => {
      const holder = await holdSlot();
      // While the stream holds the only slot, another request waits in the queue.
      const queued = short(2);
      await waitForQueueDepth(gw.url, MODEL, 1);
      assert.equal((await gw.health()).instances[0].in_flight, 1, 'the queued request takes no slot');

      holder.abort();
      const t0 = Date.now();
      const next = await queued;
      assert.equal(next.status, 200, next.text);
      assert.equal(next.body.usage.completion_tokens, 2);
      assert.ok(Date.now() - t0 < 3000, `served promptly after the slot came free (${Date.now() - t0} ms)`);
      assert.equal(await queueDepth(gw.url, MODEL), 0);
      await waitUntil(async () => (await gw.health()).instances[0].in_flight === 0, { timeoutMs: 3000, what: 'gateway in_flight 0' });
      await waitUntil(async () => (await scrapeMetric(simUrl, 'llamacpp:requests_processing')) === 0,
        { timeoutMs: 3000, what: 'the engine to stop generating' });
      assert.equal(await scrapeMetric(simUrl, 'switchyard_sim:requests_deferred_total'), 0);
    });

  test('a client that leaves a non-streamed request before its answer frees the slot and stops the engine',
    { timeout: 20_000 }, async () => {
      // 2000 tokens at 20 tok/s: the engine would be busy for ~100 s. The
      // gateway's watch on the client is armed 50–100 ms into a request.
      const leaver = new AbortController();
      const left = short(2000, { signal: leaver.signal }).catch((e) => e);
      await waitUntil(async () => (await scrapeMetric(simUrl, 'llamacpp:requests_processing')) === 1,
        { timeoutMs: 3000, what: 'the engine to start generating' });
      leaver.abort();
      assert.equal((await left).name, 'AbortError');
      await waitUntil(async () => (await gw.health()).instances[0].in_flight === 0, { timeoutMs: 3000, what: 'gateway in_flight 0' });
      await waitUntil(async () => (await scrapeMetric(simUrl, 'llamacpp:requests_processing')) === 0,
        { timeoutMs: 3000, what: 'the engine to stop generating' });
      // The slot serves the next request.
      const next = await short(2);
      assert.equal(next.status, 200, next.text);
    });

  test('a client that disconnects while queued leaves the queue at once; the rest are served first come, first served',
    { timeout: 20_000 }, async () => {
      const holder = await holdSlot();
      // B queues first, then L, which leaves: the depth drops at once,
      // without any slot coming free.
      const b = short(5);
      await waitForQueueDepth(gw.url, MODEL, 1);
      const leaver = new AbortController();
      const l = short(2, { signal: leaver.signal }).catch((e) => e);
      await waitForQueueDepth(gw.url, MODEL, 2);
      leaver.abort();
      assert.equal((await l).name, 'AbortError');
      await waitForQueueDepth(gw.url, MODEL, 1, 2000);

      // D arrives last. When the slot comes free B (first in line) runs
      // before D: B's 5 tokens take ~200 ms at 20 tok/s, D's one token comes
      // with its prefill, 1–6 ms after B's end, so served in the wrong order
      // D would finish ~200 ms first. Timed below the millisecond: two
      // Date.now() readings of the right order were once equal.
      const d = short(1);
      await waitForQueueDepth(gw.url, MODEL, 2);
      holder.abort();
      const [first, last] = await Promise.all([b, d]);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.usage.completion_tokens, 5);
      assert.equal(last.status, 200, last.text);
      assert.ok(first.doneAt < last.doneAt, `first come, first served (B done at ${first.doneAt}, D at ${last.doneAt})`);
      assert.equal(await queueDepth(gw.url, MODEL), 0);
      // And the engine never had a request waiting inside it.
      assert.equal(await scrapeMetric(simUrl, 'switchyard_sim:requests_deferred_total'), 0);
    });
});
