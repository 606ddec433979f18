// Graceful shutdown: on SIGTERM/SIGINT the gateway stops accepting, lets
// in-flight requests finish (within timeouts.drain), stops the engines it
// started (whole process groups) and exits 0.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  FAKE_ENGINE, USER_MESSAGES, fetchJson, postStream, rawConnect, readSse, runningInGroup, simFleet, startGateway, stopAll,
  streamContent, waitUntil, within,
} from './harness.mjs';

const MODEL = 'qwen-27b';

/** Waits (bounded) for the gateway to exit by itself; returns its status. */
async function exitOf(gw, timeoutMs) {
  const status = await within(gw.proc.exited, timeoutMs);
  assert.ok(status, `the gateway exits within ${timeoutMs} ms; output:\n${gw.output()}`);
  return status;
}

// The gateway starts each engine in its own process group (the logged pid
// leads it): once the gateway has exited, nothing in those groups may run.
function assertEnginesGone(gw, count) {
  const engines = gw.engines();
  assert.equal(engines.length, count, `${count} 'started pid' line(s) in:\n${gw.output()}`);
  for (const { name, pid } of engines)
    assert.deepEqual(runningInGroup(pid), [], `engine ${name}: processes still running in its group ${pid}`);
}

describe('shutdown', () => {
  after(stopAll);

  test('SIGTERM with a stream in flight: the stream completes, new connections are refused, engines stop, exit 0',
    { timeout: 30_000 }, async () => {
      // 40 tok/s: the 40-token stream runs ~1 s, most of it after the signal.
      const gw = await startGateway({ ...simFleet({ count: 2, model: MODEL, speedFactor: 1, tokensPerSecond: 40 }), timeouts: { drain: '10s' } });
      const res = await postStream(`${gw.url}/v1/chat/completions`,
        { model: MODEL, messages: USER_MESSAGES, max_tokens: 40, ignore_eos: true, stream_options: { include_usage: true } });
      assert.equal(res.status, 200);
      let refusedAfterSignal;
      const { events } = await readSse(res, {
        onEvent: (_, seen) => {
          if (refusedAfterSignal || streamContent(seen).count < 1) return;
          gw.proc.child.kill('SIGTERM');
          // A fresh connection each time: fetch could reuse a kept-alive one.
          refusedAfterSignal = waitUntil(() => rawConnect(gw.port).then((c) => { c.destroy(); return false; }, () => true),
            { timeoutMs: 3000, what: 'new connections refused after SIGTERM' });
        },
      });
      assert.ok(refusedAfterSignal, 'the signal was sent mid-stream');
      await refusedAfterSignal;
      assert.equal(events.at(-1).data, '[DONE]', 'the in-flight stream ran to its end');
      assert.equal(streamContent(events).count, 40);
      assert.equal(events.at(-2).json.usage.completion_tokens, 40);

      const status = await exitOf(gw, 10_000);
      assert.deepEqual(status, { code: 0, signal: null }, gw.output());
      assertEnginesGone(gw, 2);
      await gw.stop();  // already exited: just tidies its temp dir
    });

  test('past timeouts.drain the gateway ends running requests itself (shutting_down), before the engines stop, blaming none',
    { timeout: 45_000 }, async () => {
      // One sim at 20 tok/s: 400-token requests run 20 s, far past the 2 s drain.
      const gw = await startGateway({
        ...simFleet({ count: 1, model: MODEL, slots: 3, speedFactor: 1, tokensPerSecond: 20 }),
        timeouts: { drain: '2s' },
      });
      const body = { model: MODEL, messages: USER_MESSAGES, max_tokens: 400, ignore_eos: true };
      const readAll = async (res) => ({ status: res.status, ...(await readSse(res)) });
      const openai = postStream(`${gw.url}/v1/chat/completions`, body).then(readAll);
      const anthropic = postStream(`${gw.url}/v1/messages`, body, { headers: { 'anthropic-version': '2023-06-01' } }).then(readAll);
      const whole = fetchJson(`${gw.url}/v1/chat/completions`, { body, timeoutMs: 20_000 });
      await waitUntil(async () => (await gw.instance('gpu0')).in_flight === 3, { what: 'all three running' });
      const signalledAt = Date.now();
      gw.proc.child.kill('SIGTERM');

      const o = await openai;
      assert.equal(o.status, 200);
      assert.ok(streamContent(o.events).count > 0, 'content came before the cutoff');
      const oError = o.events.at(-2).json?.error;
      assert.equal(oError?.code, 'shutting_down', `an OpenAI error event before [DONE]: ${o.raw.slice(-400)}`);
      assert.match(oError.message, /timeouts\.drain \(2s\)/);
      assert.equal(o.events.at(-1).data, '[DONE]');

      const a = await anthropic;
      assert.equal(a.status, 200);
      assert.match(a.raw, /event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error","message":"[^"]*timeouts\.drain/,
        `an Anthropic error event: ${a.raw.slice(-400)}`);
      assert.equal(a.events.at(-1).json?.type, 'error', 'the error event is the last');

      const w = await whole;
      assert.equal(w.status, 503, w.text);
      assert.equal(w.body.error.code, 'shutting_down');
      assert.match(w.body.error.message, /timeouts\.drain \(2s\)/);
      const ms = Date.now() - signalledAt;
      assert.ok(ms >= 1800 && ms < 6000, `ended when the drain ran out (${ms} ms after SIGTERM)`);

      // Drain 2 s, the ends written, the engine stopped (timeouts.stop 2 s); ASan on a busy box is slow.
      const status = await exitOf(gw, 20_000);
      assert.deepEqual(status, { code: 0, signal: null }, gw.output());
      const log = gw.output();
      assert.doesNotMatch(log, /failed mid-stream|failed_on=|ejected \(/, 'no engine is blamed');
      const shut = log.split('\n').filter((l) => /access id=.* POST \/v1\/(chat\/completions|messages) .* shutting_down/.test(l));
      assert.equal(shut.length, 3, `three access lines say shutting_down:\n${log}`);
      // The requests were ended (and logged) before the engine was stopped.
      const stopped = log.indexOf('instance gpu0: engine stopped');
      assert.ok(stopped > 0 && log.lastIndexOf(shut.at(-1)) < stopped, `ended before the engine stopped:\n${log}`);
      assertEnginesGone(gw, 1);
      await gw.stop();
    });

  test('SIGINT when idle: prompt exit 0, engines gone', { timeout: 20_000 }, async () => {
    const gw = await startGateway(simFleet({ count: 2, model: MODEL }));
    const t0 = Date.now();
    gw.proc.child.kill('SIGINT');
    const status = await exitOf(gw, 5000);
    assert.deepEqual(status, { code: 0, signal: null }, gw.output());
    assert.ok(Date.now() - t0 < 3000, `idle shutdown is quick (${Date.now() - t0} ms)`);
    assertEnginesGone(gw, 2);
    await gw.stop();
  });

  test('an engine that ignores SIGTERM is killed after timeouts.stop', { timeout: 20_000 }, async () => {
    const gw = await startGateway({
      models: [{ name: 'stubborn', aliases: [] }],
      instances: [{ name: 'stubborn0', model: 'stubborn', slots: 1, command: `${process.execPath} ${FAKE_ENGINE} --port \${PORT} --ignore-sigterm` }],
      timeouts: { stop: '1s' },
    });
    gw.proc.child.kill('SIGTERM');
    const status = await exitOf(gw, 8000);
    assert.deepEqual(status, { code: 0, signal: null }, gw.output());
    assertEnginesGone(gw, 1);
    await gw.stop();
  });
});
