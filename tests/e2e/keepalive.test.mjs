// Engines close idle keep-alive connections (llama-server and vLLM after 5 s,
// llama-server saying so in `Keep-Alive: timeout=5, max=100`). The gateway's
// pooled connections must not outlive that, and one that did anyway is
// replaced by a new connection without blaming the engine (issue 11 §1).
import { after, afterEach, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, fetchJson, metricSum, rawConnect, simFleet, sleep, startGateway, startSim, stopAll, waitUntil, within,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const KEEP_ALIVE = ['--keep-alive-timeout', 1];
after(stopAll);
afterEach(stopAll);

const chat = (url, maxTokens = 3) => fetchJson(`${url}/v1/chat/completions`,
  { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: maxTokens, ignore_eos: true } });
const inFlight = async (url) => metricSum((await fetchJson(`${url}/metrics`)).text, 'switchyard_instance_in_flight');

test('the sim announces its keep-alive timeout and closes idle connections after it', { timeout: 20_000 }, async () => {
  const sim = await startSim({ alias: MODEL }, KEEP_ALIVE);
  const conn = await rawConnect(sim.port);
  await conn.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${sim.port}\r\n\r\n`);
  const text = await conn.waitFor(/\r\n\r\n/);
  assert.match(text, /^keep-alive: *timeout=1\b/im, 'the response says when the connection expires');
  // Closed by the sim, not by this bounded wait running out.
  assert.ok(await within(conn.closed.then(() => true), 5000),
    'the idle connection was closed');
});

test('after an idle gap longer than the engines\' keep-alive timeout the next request succeeds, without retry or ejection',
  { timeout: 30_000 }, async () => {
    const gw = await startGateway(simFleet({
      count: 2, model: MODEL, aliases: [], slots: 2, speedFactor: 1, tokensPerSecond: 20, extraArgs: KEEP_ALIVE,
    }));
    // A burst that leaves two pooled connections to each engine: all four
    // requests in flight at once (about a second each), so none could reuse
    // another's connection. Two stale ones per engine is what made the old
    // retry "on a fresh connection" take the second stale one.
    const burst = Promise.all(Array.from({ length: 4 }, () => chat(gw.url, 20)));
    await waitUntil(async () => (await inFlight(gw.url)) === 4, { what: 'all four requests in flight' });
    for (const r of await burst) assert.equal(r.status, 200, r.text);

    // The idle time is what is tested, so here a fixed wait is the
    // condition: twice the engines' keep-alive timeout, after which both
    // have closed every connection the burst left.
    await sleep(2000);

    const after = await chat(gw.url);
    assert.equal(after.status, 200, after.text);
    const health = await gw.health();
    for (const inst of health.instances) assert.equal(inst.state, 'ready', `${inst.name} not ejected`);
    const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.equal(metricSum(metrics, 'switchyard_retries_total'), 0, 'no request was retried');
    assert.doesNotMatch(gw.output(), /failed before the first byte|closed the connection/);
  });
