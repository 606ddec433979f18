// Graceful shutdown: on SIGTERM/SIGINT the gateway stops accepting, lets
// in-flight requests finish (within timeouts.drain), stops the engines it
// started (whole process groups) and exits 0.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  FAKE_ENGINE, USER_MESSAGES, postStream, rawConnect, readSse, runningInGroup, simFleet, startGateway, stopAll, streamContent,
  waitUntil, within,
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
