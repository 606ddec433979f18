// The simulator's failure injection, driven directly over real HTTP: each
// flag must fail exactly as documented (sim/faults.h), or the gateway tests
// built on it would test nothing.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, fetchJson, postStream, rawConnect, readSse, runSwitchyard,
  scrapeMetric, startSim, stopAll, streamContent, waitUntil, within,
} from './harness.mjs';

const TIMEOUT = { timeout: 20_000 };
const LOADING_BODY = '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}';
// A request that always produces `n` tokens.
const exactly = (n) => ({ messages: USER_MESSAGES, max_tokens: n, ignore_eos: true });

after(stopAll);
afterEach(stopAll);  // each test starts its own sim with its own faults

/**
 * Reads a stream until it ends or fails. Resolves {events, error}: the events
 * that arrived, and the error the body ended with (undefined when it ended
 * normally).
 */
async function readUntilFailure(res) {
  const events = [];
  try {
    await readSse(res, { onEvent: (e) => { events.push(e); } });
    return { events };
  } catch (error) {
    return { events, error };
  }
}

// llama-server's 503 shape: {"error":{"code":503,"message":...,"type":"unavailable_error"}}.
function expectUnavailable(res) {
  assert.equal(res.status, 503, res.text);
  assert.deepEqual(Object.keys(res.body.error), ['code', 'message', 'type']);
  assert.equal(res.body.error.code, 503);
  assert.equal(res.body.error.type, 'unavailable_error');
}

describe('sim faults', () => {
  test('--fail-before-first-byte: the first N completions get 503 and take no slot', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--fail-before-first-byte', 3]);
    // Requests that are not completions are not counted.
    assert.equal((await fetchJson(`${sim.url}/health`)).status, 200);
    expectUnavailable(await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) }));
    expectUnavailable(await fetchJson(`${sim.url}/v1/completions`, { body: { prompt: 'Once', max_tokens: 2 } }));
    expectUnavailable(await fetchJson(`${sim.url}/v1/chat/completions`, { body: { ...exactly(2), stream: true } }));
    assert.equal(await scrapeMetric(sim.url, 'switchyard_sim:requests_processing_max'), 0, 'no slot taken');
    assert.equal(await scrapeMetric(sim.url, 'llamacpp:tokens_predicted_total'), 0);

    const ok = await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.usage.completion_tokens, 2);
  });

  test('--reset-after-tokens: a stream is reset after exactly N token chunks', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--reset-after-tokens', 3]);
    for (const [path, body] of [['/v1/chat/completions', exactly(10)],
      ['/v1/completions', { prompt: 'Once upon', max_tokens: 10, ignore_eos: true }]]) {
      const res = await postStream(`${sim.url}${path}`, body);
      assert.equal(res.status, 200);
      const { events, error } = await readUntilFailure(res);
      assert.ok(error, `${path}: the stream failed rather than ending`);
      assert.equal(streamContent(events).count, 3, `${path}: token chunks before the reset`);
      assert.ok(!events.some((e) => e.data === '[DONE]'), `${path}: no [DONE]`);
    }
    // The slot was released: a request that produces fewer tokens ends normally.
    const short = await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) });
    assert.equal(short.status, 200, short.text);
    assert.equal(await scrapeMetric(sim.url, 'llamacpp:requests_processing'), 0);
  });

  test('--reset-after-tokens: the connection is cut, streamed or not', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--reset-after-tokens', 2]);
    for (const stream of [false, true]) {
      const body = JSON.stringify({ ...exactly(5), stream });
      const conn = await rawConnect(sim.port);
      const errors = [];
      conn.socket.on('error', (e) => errors.push(e.code));
      await conn.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      assert.ok(await within(conn.closed.then(() => true), 5000), 'the sim closed the connection');
      if (stream) {
        // The sim always resets (SO_LINGER 0), but when the reset arrives
        // behind unread data Node may report a plain end, so only the cut is
        // asserted here: two token chunks and no terminating chunk.
        assert.equal((conn.text().match(/"delta":\{"content":"/g) ?? []).length, 2, conn.text());
        assert.ok(!conn.text().endsWith('\r\n0\r\n\r\n'), 'no last chunk');
      } else {
        assert.deepEqual(errors, ['ECONNRESET'], 'closed by a reset, not a FIN');
        assert.equal(conn.text(), '', 'nothing was sent before the reset');
      }
    }
    await assert.rejects(fetchJson(`${sim.url}/v1/completions`, { body: { prompt: 'Once', max_tokens: 5, ignore_eos: true } }),
      (e) => e.cause?.code === 'ECONNRESET');
  });

  test('--stall-after-tokens: nothing after N chunks, the slot held until the client leaves', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--stall-after-tokens', 2]);
    const body = JSON.stringify({ ...exactly(20), stream: true });
    const conn = await rawConnect(sim.port);
    await conn.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    const tokenChunks = () => (conn.text().match(/"delta":\{"content":"/g) ?? []).length;
    await waitUntil(() => tokenChunks() >= 2, { what: '2 token chunks' });
    const seen = conn.text().length;
    // At this speed the remaining 18 tokens would take a few milliseconds.
    assert.equal(await within(conn.closed.then(() => 'closed'), 1500), null, 'the connection stays open');
    assert.equal(conn.text().length, seen, `no bytes after the stall: ${conn.text().slice(seen)}`);
    assert.equal(tokenChunks(), 2);
    assert.equal(await scrapeMetric(sim.url, 'llamacpp:requests_processing'), 1, 'the slot stays busy');

    conn.destroy();
    await waitUntil(async () => (await scrapeMetric(sim.url, 'llamacpp:requests_processing')) === 0,
      { what: 'the slot freed once the client left' });
    // A fetch stalls the same way; the test bounds it and aborts.
    const ac = new AbortController();
    const res = await postStream(`${sim.url}/v1/chat/completions`, exactly(20), { signal: ac.signal });
    const events = [];
    const reading = readSse(res, { onEvent: (e) => { events.push(e); } }).catch((e) => e);
    await waitUntil(() => streamContent(events).count >= 2, { what: '2 token chunks' });
    assert.equal(await within(reading, 500), null, 'still stalled');
    ac.abort();
    await reading;
    assert.equal(streamContent(events).count, 2);
  });

  test('--exit-after-requests: status 3 right after the N-th completion ends', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--exit-after-requests', 2]);
    // Neither a health check nor a refused request counts.
    assert.equal((await fetchJson(`${sim.url}/health`)).status, 200);
    assert.equal((await fetchJson(`${sim.url}/v1/chat/completions`, { body: {} })).status, 400);
    const first = await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(3) });
    assert.equal(first.status, 200, first.text);
    assert.equal(sim.proc.status, undefined, 'still running after the first');
    // The second is delivered in full, then the process exits.
    const res = await postStream(`${sim.url}/v1/chat/completions`, exactly(5));
    const { events, error } = await readUntilFailure(res);
    assert.equal(error, undefined);
    assert.equal(events.at(-1).data, '[DONE]');
    assert.equal(streamContent(events).count, 5);
    const status = await within(sim.proc.exited, 5000);
    assert.deepEqual(status, { code: 3, signal: null }, sim.output());
    assert.match(sim.output(), /exiting with status 3/);
  });

  test('--exit-after-tokens: status 3 mid-stream, after exactly N token chunks', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--exit-after-tokens', 7]);
    const first = await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(3) });
    assert.equal(first.status, 200, first.text);
    const res = await postStream(`${sim.url}/v1/chat/completions`, exactly(10));
    const { events, error } = await readUntilFailure(res);
    assert.ok(error, 'the stream failed rather than ending');
    assert.equal(streamContent(events).count, 4, '7 tokens in all, 3 of them earlier');
    const status = await within(sim.proc.exited, 5000);
    assert.deepEqual(status, { code: 3, signal: null }, sim.output());
  });

  test('--startup-delay: 503 "Loading model" everywhere, then ready', TIMEOUT, async () => {
    const t0 = Date.now();
    const sim = await startSim({ speedFactor: 1000 }, ['--startup-delay', 1.5]);
    for (const path of ['/health', '/v1/health', '/v1/models', '/props', '/metrics']) {
      const res = await fetchJson(`${sim.url}${path}`);
      assert.equal(res.status, 503, path);
      assert.equal(res.text, LOADING_BODY, path);
    }
    const chat = await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) });
    assert.equal(chat.text, LOADING_BODY);

    await waitUntil(async () => (await fetchJson(`${sim.url}/health`)).status === 200,
      { timeoutMs: 5000, what: '/health 200' });
    // Not scaled by --speed-factor.
    assert.ok(Date.now() - t0 >= 1500, `ready after ${Date.now() - t0} ms`);
    assert.deepEqual((await fetchJson(`${sim.url}/health`)).body, { status: 'ok' });
    assert.equal((await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) })).status, 200);
  });

  test('--model-size / --load-rate: loads for size / rate box seconds, 503 meanwhile', TIMEOUT,
    async () => {
      const t0 = Date.now();
      // 6 GiB at 1 GiB/s = 6 s of the box, 3 s of wall time at speed factor 2.
      const sim = await startSim({ speedFactor: 2 },
        ['--model-size', '6GiB', '--load-rate', '1GiB/s']);
      const health = await fetchJson(`${sim.url}/health`);
      assert.equal(health.status, 503);
      assert.equal(health.text, LOADING_BODY);
      assert.equal((await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) })).text,
        LOADING_BODY);
      await waitUntil(async () => (await fetchJson(`${sim.url}/health`)).status === 200,
        { timeoutMs: 10000, what: '/health 200' });
      assert.ok(Date.now() - t0 >= 3000, `ready after ${Date.now() - t0} ms`);
      assert.equal((await fetchJson(`${sim.url}/v1/chat/completions`, { body: exactly(2) })).status,
        200);
    });

  test('the flags are validated', TIMEOUT, async () => {
    for (const args of [['--reset-after-tokens', 1, '--stall-after-tokens', 2],
      ['--exit-after-requests', 0], ['--exit-after-tokens', 0], ['--fail-before-first-byte', -1],
      ['--startup-delay', -1], ['--reset-after-tokens', 'x'], ['--model-size', 'big'],
      ['--model-size', '1G', '--load-rate', '2GiB'], ['--load-rate', '0/s']]) {
      const run = await runSwitchyard(['sim', '--port', '0', ...args.map(String)]);
      assert.notEqual(run.code, 0, `${args.join(' ')} rejected: ${run.output}`);
      assert.doesNotMatch(run.output, /listening/);
    }
  });
});
