// What the gateway does when things go wrong, with real engines failing on
// cue (the sim's fault flags, or a kill -9): a bounded queue that says 429,
// invisible retries before the first byte, a clean error event after it,
// ejection, supervised restarts, a graceful drain, and config reloads.
// Every failure here must be bounded in time and leave the gateway serving.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, expectError, fetchJson, metricSum, parseRawResponse, postStream, queueDepth, rawConnect, readSse,
  runningInGroup, scrapeMetric, simFleet, simInstance, sleep, startGateway, startSim, stopAll, streamChat, streamContent,
  waitForQueueDepth, waitUntil, within,
} from './harness.mjs';

const MODEL = 'qwen-27b';
after(stopAll);
afterEach(stopAll);  // each test starts its own gateway with its own faults

// Health settings that keep an ejected instance out for the whole test: a
// re-probe would find the sim's /health fine and take it back, blurring what
// a test counts.
const STAY_EJECTED = { interval: '30s', backoff: '30s', backoff_max: '30s' };

/** A fleet of explicit instances of MODEL. */
function fleetOf(instances, extra = {}) {
  return { models: [{ name: MODEL, aliases: [] }], instances, ...extra };
}

/** A short non-streamed chat completion of exactly `maxTokens` tokens. */
function chat(url, maxTokens, extra = {}) {
  return fetchJson(`${url}/v1/chat/completions`,
    { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: maxTokens, ignore_eos: true }, ...extra });
}

/** Asserts an in-stream error event as the gateway sends it after the first byte, then [DONE] and a clean end. */
function expectStreamError(r, what) {
  assert.equal(r.status, 200, what);
  assert.ok(r.errorEvent, `${what}: an error event (events: ${JSON.stringify(r.events.map((e) => e.data)).slice(0, 500)})`);
  assert.equal(r.errorEvent.type, 'upstream_error', what);
  assert.equal(r.errorEvent.code, 'upstream_failed', what);
  assert.equal(typeof r.errorEvent.message, 'string', what);
  const at = r.events.findIndex((e) => e.json?.error);
  assert.equal(at, r.events.length - 2, `${what}: the error event is the last before [DONE]`);
  assert.ok(r.done, `${what}: ends with [DONE]`);
  assert.ok(r.cleanEnd, `${what}: the body ends cleanly (${r.readError})`);
}

/** Classifies streamChat results: complete (full length), errored (error event), other. */
function sortResults(results, tokens) {
  const complete = results.filter((r) => r.status === 200 && r.done && r.cleanEnd && !r.errorEvent && r.tokens === tokens);
  const errored = results.filter((r) => r.status === 200 && r.errorEvent);
  const other = results.filter((r) => !complete.includes(r) && !errored.includes(r));
  return { complete, errored, other };
}

describe('the queue is bounded', () => {
  test('past max_length: 429 queue_full at once; past max_wait: 429 after the wait; both with Retry-After',
    { timeout: 20_000 }, async () => {
      // One slow one-slot engine: a 2000-token stream holds it for the test.
      const gw = await startGateway({
        ...simFleet({ count: 1, model: MODEL, speedFactor: 1, tokensPerSecond: 20 }),
        queue: { max_length: 1, max_wait: '300ms' },
      });
      const holder = new AbortController();
      const holding = streamChat(gw.url, { model: MODEL, maxTokens: 2000, signal: holder.signal, onEvent: (_, seen) => seen.length < 2 });
      assert.equal((await holding).status, 200);

      // Two arrive together: one takes the only place in the queue, the other
      // is refused at once; the queued one is refused when its wait runs out.
      const t0 = Date.now();
      const timed = (p) => p.then((r) => ({ ...r, ms: Date.now() - t0 }));
      const both = await Promise.all([timed(chat(gw.url, 2)), timed(chat(gw.url, 2))]);
      const full = both.find((r) => r.body?.error?.code === 'queue_full' && /full/.test(r.body.error.message));
      const waited = both.find((r) => r !== full);
      assert.ok(full, `one refused as queue full: ${both.map((r) => r.text).join(' | ')}`);
      expectError(assert, full, 429, { code: 'queue_full', type: 'rate_limit_error' });
      assert.ok(Number(full.headers.get('retry-after')) > 0, 'Retry-After on queue full');
      assert.ok(full.ms < waited.ms, `queue full is answered at once, before the wait runs out (${full.ms} ms vs ${waited.ms} ms)`);

      expectError(assert, waited, 429, { code: 'queue_full', type: 'rate_limit_error', messageIncludes: 'came free within' });
      assert.ok(Number(waited.headers.get('retry-after')) > 0, 'Retry-After on a wait that ran out');
      assert.ok(waited.ms >= 280 && waited.ms < 2000, `refused after about max_wait (${waited.ms} ms)`);
      assert.equal(await queueDepth(gw.url, MODEL), 0);
      assert.ok(await scrapeMetric(gw.url, 'switchyard_queue_wait_seconds_count', { model: MODEL }) >= 1, 'the wait is observed');

      // Once the slot is free the gateway serves again.
      holder.abort();
      const next = await chat(gw.url, 2);
      assert.equal(next.status, 200, next.text);
    });
});

describe('retries before the first byte', () => {
  test('an instance that fails before the first byte: requests succeed invisibly, retries counted, it is ejected',
    { timeout: 20_000 }, async () => {
      const gw = await startGateway(fleetOf([
        simInstance('bad', MODEL, { extraArgs: ['--fail-before-first-byte', 100] }),
        simInstance('good', MODEL, { seed: 2 }),
      ], { health: STAY_EJECTED }));
      // Streamed and not: each is answered by `good` as if nothing happened.
      const results = [];
      for (let i = 0; i < 3; ++i) {
        results.push(await streamChat(gw.url, { model: MODEL, maxTokens: 8 }));
        const plain = await chat(gw.url, 4);
        assert.equal(plain.status, 200, plain.text);
        assert.equal(plain.body.usage.completion_tokens, 4);
      }
      for (const r of results) {
        assert.equal(r.status, 200, r.text);
        assert.ok(r.done && !r.errorEvent && r.tokens === 8, JSON.stringify(r.events?.map((e) => e.data)));
      }
      const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
      assert.ok(metricSum(metrics, 'switchyard_retries_total', { model: MODEL, instance: 'bad' }) >= 1, 'the retry is counted against bad');
      assert.equal(metricSum(metrics, 'switchyard_retries_total', { instance: 'good' }), 0);
      assert.equal((await gw.instance('bad')).state, 'ejected');
      assert.equal((await gw.instance('good')).state, 'ready');
      assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'bad' }), 0);
      assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'good' }), 1);
      assert.match(gw.output(), /instance bad: ejected/);
    });

  test('a stream whose engine fails before its first complete event is retried invisibly', { timeout: 20_000 }, async () => {
    // --reset-after-tokens 0 resets a text completion stream right after its
    // headers, before any event: nothing has reached the client yet.
    const gw = await startGateway(fleetOf([
      simInstance('reset0', MODEL, { extraArgs: ['--reset-after-tokens', 0] }),
      simInstance('good', MODEL, { seed: 2 }),
    ], { health: STAY_EJECTED }));
    for (let i = 0; i < 3; ++i) {
      const res = await postStream(`${gw.url}/v1/completions`, { model: MODEL, prompt: 'Once upon a time', max_tokens: 12, ignore_eos: true });
      assert.equal(res.status, 200);
      const { events } = await readSse(res);
      assert.equal(events.at(-1).data, '[DONE]');
      assert.ok(!events.some((e) => e.json?.error), 'no error event');
      assert.equal(streamContent(events).count, 12);
    }
    assert.ok(await scrapeMetric(gw.url, 'switchyard_retries_total', { model: MODEL, instance: 'reset0' }) >= 1, 'the retry is counted');
    assert.equal((await gw.instance('reset0')).state, 'ejected');
  });

  test('a stream that stays silent before its first event is retried after stream_idle', { timeout: 20_000 }, async () => {
    // --stall-after-tokens 0: a text completion stream sends its headers, then nothing.
    const gw = await startGateway(fleetOf([
      simInstance('stall0', MODEL, { extraArgs: ['--stall-after-tokens', 0] }),
      simInstance('good', MODEL, { seed: 2 }),
    ], { health: STAY_EJECTED, timeouts: { stream_idle: '1s' } }));
    for (let i = 0; i < 2; ++i) {
      const res = await postStream(`${gw.url}/v1/completions`, { model: MODEL, prompt: 'Once upon a time', max_tokens: 5, ignore_eos: true });
      assert.equal(res.status, 200);
      const { events } = await readSse(res);
      assert.equal(events.at(-1).data, '[DONE]');
      assert.equal(streamContent(events).count, 5);
    }
    assert.equal(await scrapeMetric(gw.url, 'switchyard_retries_total', { model: MODEL, instance: 'stall0' }), 1);
    assert.equal((await gw.instance('stall0')).state, 'ejected');
    assert.ok((await gw.health()).instances.every((i) => i.in_flight === 0));
  });

  test('other engine errors (400, 501) pass through unchanged: no retry, no ejection', { timeout: 20_000 }, async () => {
    const gw = await startGateway(fleetOf([simInstance('gpu0', MODEL, { extraArgs: ['--ctx-size', 64] })], { health: STAY_EJECTED }));
    // The sim, like llama-server without --embeddings, answers 501.
    const emb = await fetchJson(`${gw.url}/v1/embeddings`, { body: { model: MODEL, input: 'hello' } });
    assert.equal(emb.status, 501, emb.text);
    assert.equal(emb.body.error.type, 'not_supported_error', 'the engine\'s own error body');
    // A prompt over the engine's context: llama-server's 400.
    const long = await fetchJson(`${gw.url}/v1/chat/completions`,
      { body: { model: MODEL, messages: [{ role: 'user', content: 'word '.repeat(200) }], max_tokens: 2 } });
    assert.equal(long.status, 400, long.text);
    assert.equal(long.body.error.type, 'exceed_context_size_error');
    assert.equal(metricSum((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_retries_total'), 0, 'no retry');
    assert.equal((await gw.instance('gpu0')).state, 'ready', 'not ejected');
    assert.equal((await chat(gw.url, 2)).status, 200);
  });

  test('all attempts failing: 502 bad_gateway, each instance tried once', { timeout: 20_000 }, async () => {
    const gw = await startGateway(fleetOf(['bad0', 'bad1', 'bad2'].map((n, i) =>
      simInstance(n, MODEL, { seed: i + 1, extraArgs: ['--fail-before-first-byte', 100] })), { attempts: 3, health: STAY_EJECTED }));
    const t0 = Date.now();
    const res = await chat(gw.url, 2);
    expectError(assert, res, 502, { code: 'bad_gateway', type: 'upstream_error' });
    assert.ok(Date.now() - t0 < 3000, `answered promptly (${Date.now() - t0} ms)`);
    // Each tried once; at most half of the fleet is ejected on requests' word
    // (outlier detection's cap): one of three.
    const states = await Promise.all(['bad0', 'bad1', 'bad2'].map(async (n) => (await gw.instance(n)).state));
    assert.equal(states.filter((s) => s === 'ejected').length, 1, states.join(','));
    await gw.proc.waitForOutput(/failed_on=bad\d,bad\d,bad\d\b/, 5000);
    assert.ok(metricSum((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_retries_total', { model: MODEL }) >= 2);
  });

  test('fewer instances than attempts, all failing: 502 bad_gateway at once, not a wait in the queue', { timeout: 20_000 }, async () => {
    // The common single-engine box, and two engines for three attempts: once
    // every instance has failed (and is ejected) there is nowhere left to
    // retry, and the answer is the upstream failure, not a queue timeout.
    for (const count of [1, 2]) {
      const gw = await startGateway(fleetOf(Array.from({ length: count }, (_, i) =>
        simInstance(`bad${i}`, MODEL, { seed: i + 1, extraArgs: ['--fail-before-first-byte', 100] })),
      { attempts: 3, health: STAY_EJECTED, queue: { max_wait: '3s' } }));
      const t0 = Date.now();
      const res = await chat(gw.url, 2);
      expectError(assert, res, 502, { code: 'bad_gateway', type: 'upstream_error' });
      assert.ok(Date.now() - t0 < 1500, `${count} instance(s): answered promptly (${Date.now() - t0} ms)`);
      await gw.stop();
    }
  });
});

describe('failures after the first byte', () => {
  test('an engine reset mid-stream: that client gets an error event, [DONE] and a clean end; the others complete',
    { timeout: 20_000 }, async () => {
      // Four slots in all (1 + 3), four concurrent streams: one lands on `reset`.
      const gw = await startGateway(fleetOf([
        simInstance('reset', MODEL, { speedFactor: 1, tokensPerSecond: 100, extraArgs: ['--reset-after-tokens', 5] }),
        simInstance('good', MODEL, { slots: 3, speedFactor: 1, tokensPerSecond: 100, seed: 2 }),
      ], { health: STAY_EJECTED }));
      const results = await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 40 })));
      const { complete, errored, other } = sortResults(results, 40);
      assert.deepEqual(other, [], 'every stream completes or ends with an error event');
      assert.equal(errored.length, 1, 'exactly the stream on `reset` fails');
      assert.equal(complete.length, 3);
      expectStreamError(errored[0], 'the reset stream');
      assert.equal(errored[0].tokens, 5, 'the tokens before the reset reached the client');
      assert.equal((await gw.instance('reset')).state, 'ejected');
      await waitUntil(async () => (await gw.health()).instances.every((i) => i.in_flight === 0), { what: 'in_flight back to 0' });
    });

  test('a stream silent longer than stream_idle fails with an error event after ~1 s and frees the slot',
    { timeout: 20_000 }, async () => {
      const gw = await startGateway({
        ...fleetOf([simInstance('gpu0', MODEL, { extraArgs: ['--stall-after-tokens', 3] })]),
        timeouts: { stream_idle: '1s' },
        health: { backoff: '200ms', backoff_max: '1s' },
      });
      const simUrl = (await gw.instance('gpu0')).url;
      const r = await streamChat(gw.url, { model: MODEL, maxTokens: 20 });
      expectStreamError(r, 'the stalled stream');
      assert.equal(r.tokens, 3);
      const lastToken = r.events.findLast((e) => e.json?.choices?.[0]?.delta?.content);
      const errorAt = r.events.find((e) => e.json?.error).at;
      assert.ok(errorAt - lastToken.at >= 900 && errorAt - lastToken.at < 3000,
        `failed about stream_idle after the last token (${errorAt - lastToken.at} ms)`);
      assert.equal((await gw.instance('gpu0')).in_flight, 0, 'the gateway slot is free');
      // The gateway hung up on the engine, so the engine's slot is free too.
      await waitUntil(async () => (await scrapeMetric(simUrl, 'llamacpp:requests_processing')) === 0,
        { timeoutMs: 3000, what: 'the engine slot freed' });
      // Ejected for the stall, then re-probed: its /health answers, so it is back.
      assert.match(gw.output(), /instance gpu0: ejected/);
      await gw.waitForState('gpu0', 'ready', 5000);
    });
});

describe('a burst of closed connections', () => {
  test('gives back Asio\'s states of the closed sockets and trims the heap; the gateway goes on serving',
    { timeout: 60_000 }, async () => {
      const gw = await startGateway(fleetOf([simInstance('gpu0', MODEL)]));
      for (let round = 1; round <= 2; ++round) {
        // 300 connections, each answered once so that the gateway holds it
        // open, then all closed: more than the 256 closes that make a trim due.
        const conns = await Promise.all(Array.from({ length: 300 }, () => rawConnect(gw.port)));
        await Promise.all(conns.map(async (c) => {
          await c.write('GET /health HTTP/1.1\r\nHost: gw\r\n\r\n');
          await c.waitFor(/\r\n\r\n/, 20_000);
        }));
        const from = gw.proc.output().length;
        for (const c of conns) c.socket.destroy();
        const [, closed, freed] = await gw.proc.waitForOutput(
          /memory: (\d+) connection\(s\) closed since the peak, (\d+) socket state\(s\) freed/, 20_000, from);
        assert.ok(Number(closed) >= 256, `round ${round}: ${closed} closes counted`);
        assert.ok(Number(freed) >= 256, `round ${round}: ${freed} states freed`);
        const res = await postStream(`${gw.url}/v1/completions`, { model: MODEL, prompt: 'Once upon a time', max_tokens: 5, ignore_eos: true });
        assert.equal(res.status, 200);
        assert.equal(streamContent((await readSse(res)).events).count, 5);
        assert.equal((await chat(gw.url, 3)).status, 200);
      }
    });
});

describe('supervision', () => {
  test('kill -9 of an engine under load: no queued request lost, in-flight ones get the error event, it restarts and serves again',
    { timeout: 30_000 }, async () => {
      const gw = await startGateway({
        ...simFleet({ count: 2, model: MODEL, slots: 1, speedFactor: 1, tokensPerSecond: 100 }),
        health: { interval: '200ms', backoff: '200ms', backoff_max: '1s' },
      });
      const gpu0Url = (await gw.instance('gpu0')).url;
      // 8 streams of 40 tokens (~0.4 s each) on 2 slots: 2 run, 6 queue.
      const progress = [];
      const streams = Array.from({ length: 8 }, (_, i) => {
        progress[i] = { tokens: 0, ended: false };
        return streamChat(gw.url, {
          model: MODEL, maxTokens: 40,
          onEvent: (e) => { if (e.json?.choices?.[0]?.delta?.content) progress[i].tokens += 1; },
        }).finally(() => { progress[i].ended = true; });
      });
      // Kill when both slots run streams well under way (2..20 of 40 tokens):
      // the one on gpu0 is then certainly mid-stream.
      await waitUntil(() => progress.filter((p) => !p.ended && p.tokens >= 2 && p.tokens <= 20).length === 2,
        { timeoutMs: 10_000, intervalMs: 10, what: 'two streams mid-way' });
      const mark = gw.output().length;
      const killed = gw.killEngine('gpu0');

      const results = await Promise.all(streams);
      const { complete, errored, other } = sortResults(results, 40);
      assert.deepEqual(other.map((r) => ({ status: r.status, tokens: r.tokens, text: r.text })), [], 'no request lost');
      assert.equal(errored.length, 1, 'the stream in flight on the killed engine fails');
      expectStreamError(errored[0], 'the stream on the killed engine');
      assert.equal(complete.length, 7, 'every other request, queued ones included, completes in full');

      // restarting, then a new engine (a new "started pid" line), then ready.
      await gw.proc.waitForOutput(/instance gpu0 \([^)]*\): \S+ -> restarting/, 5000, mark);
      await gw.proc.waitForOutput(/instance gpu0: started pid \d+/, 5000, mark);
      await gw.waitForState('gpu0', 'ready', 10_000);
      assert.ok(gw.engines().filter((e) => e.name === 'gpu0').length === 2, 'gpu0 started twice');
      assert.deepEqual(runningInGroup(killed), [], 'nothing of the killed engine runs');
      // And it takes traffic: two concurrent streams need both instances.
      const again = await Promise.all([0, 1].map(() => streamChat(gw.url, { model: MODEL, maxTokens: 20 })));
      assert.ok(again.every((r) => r.done && r.tokens === 20));
      assert.ok(await scrapeMetric(gpu0Url, 'llamacpp:tokens_predicted_total') > 0, 'the restarted gpu0 generated tokens');
    });

  test('an engine still loading is `starting`; a request meanwhile waits and is served once it is ready', { timeout: 20_000 }, async () => {
    const gw = await startGateway(fleetOf([simInstance('slow', MODEL, { extraArgs: ['--startup-delay', 1] })]), { waitReady: false });
    const t0 = Date.now();
    assert.equal((await gw.instance('slow')).state, 'starting');
    assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'slow' }), 0);
    const early = await chat(gw.url, 2);
    assert.equal(early.status, 200, early.text);
    assert.equal((await gw.instance('slow')).state, 'ready');
    assert.ok(Date.now() - t0 >= 500, `served only once the engine was ready (${Date.now() - t0} ms)`);
    assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'slow' }), 1);
  });

  test('active /health probes eject an unresponsive instance and take it back once it answers', { timeout: 20_000 }, async () => {
    // An engine the gateway does not supervise: frozen with SIGSTOP, its
    // socket still accepts but nothing answers, so only a probe can tell.
    const ext = await startSim({ speedFactor: 20, alias: MODEL });
    const gw = await startGateway(fleetOf([
      { name: 'ext', model: MODEL, url: ext.url, slots: 1 },
      simInstance('good', MODEL, { seed: 2 }),
    ], { health: { interval: '200ms', backoff: '200ms', backoff_max: '500ms' } }));
    ext.proc.child.kill('SIGSTOP');
    try {
      await gw.waitForState('ext', 'ejected', 8000);
      assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'ext' }), 0);
      // Meanwhile `good` serves.
      assert.equal((await chat(gw.url, 2)).status, 200);
    } finally {
      ext.proc.child.kill('SIGCONT');
    }
    await gw.waitForState('ext', 'ready', 8000);
    assert.equal(await scrapeMetric(gw.url, 'switchyard_instance_up', { instance: 'ext' }), 1);
  });

  test('an engine that keeps exiting is crash-looping: kept out of routing and restarted without a busy loop',
    { timeout: 30_000 }, async () => {
      const gw = await startGateway(fleetOf([
        simInstance('loop0', MODEL, { extraArgs: ['--exit-after-requests', 1] }),
        simInstance('good', MODEL, { seed: 2 }),
      // Round robin: least-outstanding learns that `good` delivers faster and
      // would send these one-at-a-time requests there, never to loop0 again.
      ], { routing: 'round-robin', health: { interval: '200ms', backoff: '100ms', backoff_max: '1s', crash_loop: 2 } }));
      // Keep requests coming: each time loop0 is back it takes one and exits.
      let running = true;
      const failures = [];
      const load = (async () => {
        while (running) {
          const r = await chat(gw.url, 2);
          if (r.status !== 200) failures.push(r.text);
          await sleep(20);
        }
      })();
      try {
        await gw.waitForState('loop0', 'crash-looping', 15_000);
        // Over 2 s at backoff_max 1 s, a few restarts at most, and at least
        // one (it is still retried).
        const mark = gw.output().length;
        await sleep(2000);
        const starts = (gw.output().slice(mark).match(/instance loop0: started pid \d+/g) ?? []).length;
        assert.ok(starts >= 1 && starts <= 3, `${starts} start(s) of loop0 in 2 s`);
      } finally {
        running = false;
        await load;
      }
      assert.deepEqual(failures, [], 'every request was served (by good, or by loop0 before it exited)');
      assert.match(gw.output(), /\[loop0\] .*exiting with status 3/, "the engine's output is in the gateway log");
      assert.equal((await gw.instance('good')).state, 'ready');
    });
});

describe('graceful drain', () => {
  test('SIGTERM under load: running and queued requests complete, new ones on open connections get 503, exit 0',
    { timeout: 30_000 }, async () => {
      // 2 instances x 2 slots at 40 tok/s: 4 streams of 40 tokens run ~1 s; 4
      // short requests queue behind them and need ~0.1 s once a slot frees.
      const gw = await startGateway({
        ...simFleet({ count: 2, model: MODEL, slots: 2, speedFactor: 1, tokensPerSecond: 40 }),
        timeouts: { drain: '5s' },
      });
      const idle = await rawConnect(gw.port);  // an open connection, used after the signal
      const tokens = [0, 0, 0, 0];
      const running = tokens.map((_, i) => streamChat(gw.url, {
        model: MODEL, maxTokens: 40, onEvent: (e) => { if (e.json?.choices?.[0]?.delta?.content) tokens[i] += 1; },
      }));
      await waitUntil(() => tokens.every((n) => n >= 1), { what: 'the 4 streams running' });
      const queued = Array.from({ length: 4 }, () => chat(gw.url, 4));
      await waitForQueueDepth(gw.url, MODEL, 4);

      const mark = gw.output().length;
      gw.proc.child.kill('SIGTERM');
      await gw.proc.waitForOutput(/signal \d+: draining/, 5000, mark);
      const body = JSON.stringify({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 });
      await idle.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await idle.waitFor(/\r\n\r\n\{.*\}/s, 3000);
      const late = parseRawResponse(idle.text());
      assert.equal(late.status, 503, idle.text());
      assert.equal(late.json.error.code, 'shutting_down');
      idle.destroy();

      for (const r of await Promise.all(running)) {
        assert.ok(r.done && !r.errorEvent && r.tokens === 40, `a running stream completes (${r.tokens} tokens)`);
      }
      for (const r of await Promise.all(queued)) {
        assert.equal(r.status, 200, `a queued request completes within the drain: ${r.text}`);
        assert.equal(r.body.usage.completion_tokens, 4);
      }
      const status = await within(gw.proc.exited, 10_000);
      assert.deepEqual(status, { code: 0, signal: null }, gw.output());
      for (const { pid } of gw.engines()) assert.deepEqual(runningInGroup(pid), [], 'engines stopped');
    });

  test('SIGTERM with a drain too short: queued requests get 503 shutting_down when it ends, exit 0', { timeout: 20_000 }, async () => {
    const gw = await startGateway({
      ...simFleet({ count: 1, model: MODEL, speedFactor: 1, tokensPerSecond: 20 }),
      timeouts: { drain: '1s' },
    });
    const holding = streamChat(gw.url, { model: MODEL, maxTokens: 2000 }).catch((e) => e);
    await waitUntil(async () => (await gw.instance('gpu0')).in_flight === 1, { what: 'the slot taken' });
    const queued = [0, 1].map(() => chat(gw.url, 2).then((r) => ({ ...r, doneAt: Date.now() })));
    await waitForQueueDepth(gw.url, MODEL, 2);
    const signalledAt = Date.now();
    gw.proc.child.kill('SIGTERM');
    for (const r of await Promise.all(queued)) {
      expectError(assert, r, 503, { code: 'shutting_down' });
      const ms = r.doneAt - signalledAt;
      assert.ok(ms >= 800 && ms < 4000, `refused when the drain ended (${ms} ms after SIGTERM)`);
    }
    const status = await within(gw.proc.exited, 10_000);
    assert.deepEqual(status, { code: 0, signal: null }, gw.output());
    // The stream that outlived the drain ends one way or another, promptly.
    assert.ok(await within(holding, 5000), 'the long stream ended');
  });
});

describe('SIGHUP reloads the config', () => {
  const base = (instances, aliases) => ({ models: [{ name: MODEL, aliases }], instances });
  const gpu = (name, seed) => simInstance(name, MODEL, { speedFactor: 1, tokensPerSecond: 100, seed });

  test('an added instance starts and takes traffic; aliases apply at once; a removed one finishes its requests and stops',
    { timeout: 30_000 }, async () => {
      const gw = await startGateway(base([gpu('gpu0', 1)], ['old']));
      let mark = gw.reload(base([gpu('gpu0', 1), gpu('gpu1', 2)], ['new']));
      await gw.proc.waitForOutput(/config reloaded/, 5000, mark);
      // Aliases at once, before the new instance is even ready.
      assert.equal((await chat(gw.url, 2, {})).status, 200);
      const viaNew = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'new', messages: USER_MESSAGES, max_tokens: 2 } });
      assert.equal(viaNew.status, 200, viaNew.text);
      expectError(assert, await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'old', messages: USER_MESSAGES, max_tokens: 2 } }),
        404, { code: 'model_not_found' });

      await gw.waitForState('gpu1', 'ready', 10_000);
      const gpu1Url = (await gw.instance('gpu1')).url;
      // Two concurrent streams on two one-slot instances: one runs on gpu1.
      const two = await Promise.all([0, 1].map(() => streamChat(gw.url, { model: MODEL, maxTokens: 20 })));
      assert.ok(two.every((r) => r.done && r.tokens === 20));
      assert.ok(await scrapeMetric(gpu1Url, 'llamacpp:tokens_predicted_total') > 0, 'gpu1 took traffic');

      // Remove gpu0 while both run a stream: both finish; gpu0 is stopped.
      const tokens = [0, 0];
      const inFlight = tokens.map((_, i) => streamChat(gw.url, {
        model: MODEL, maxTokens: 60, onEvent: (e) => { if (e.json?.choices?.[0]?.delta?.content) tokens[i] += 1; },
      }));
      await waitUntil(() => tokens.every((n) => n >= 2), { what: 'both streams running' });
      const gpu0Pid = gw.engines().find((e) => e.name === 'gpu0').pid;
      mark = gw.reload(base([gpu('gpu1', 2)], ['new']));
      await gw.proc.waitForOutput(/config reloaded/, 5000, mark);
      const after = await Promise.all(inFlight);
      assert.ok(after.every((r) => r.done && !r.errorEvent && r.tokens === 60), 'in-flight requests on the removed instance finish');
      await waitUntil(async () => {
        const inst = await gw.instance('gpu0');
        return (!inst || inst.state === 'stopped') && runningInGroup(gpu0Pid).length === 0;
      }, { timeoutMs: 10_000, what: 'gpu0 stopped and gone' });
      for (let i = 0; i < 3; ++i) assert.equal((await chat(gw.url, 2)).status, 200, 'served by gpu1 alone');
    });

  test('an invalid config on SIGHUP is rejected with the reason; the old one stays in force', { timeout: 20_000 }, async () => {
    const gw = await startGateway(base([gpu('gpu0', 1)], ['old']));
    const mark = gw.reload(`models:\n  - name: ${MODEL}\ninstances:\n  - name: gpu0\n    model: ${MODEL}\n    slots: many\n    url: http://127.0.0.1:9\n`);
    const [line] = await gw.proc.waitForOutput(/reload rejected.*/, 5000, mark);
    assert.match(line, /slots/, 'the reason names the field');
    assert.equal(gw.proc.status, undefined, 'the gateway still runs');
    assert.doesNotMatch(gw.output().slice(mark), /config reloaded/);
    const h = await gw.health();
    assert.deepEqual(h.instances.map((i) => [i.name, i.state]), [['gpu0', 'ready']]);
    const viaOld = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'old', messages: USER_MESSAGES, max_tokens: 2 } });
    assert.equal(viaOld.status, 200, viaOld.text);
  });
});
