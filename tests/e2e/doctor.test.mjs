// `switchyard doctor --url` against real simulated engines that misbehave the
// way the field reports describe: a vLLM whose KV pool is too small for its
// sequences (it preempts), and a llama-server whose self-reported speed is
// inflated. Each must produce its warning and exit 1; a quiet engine exits 0.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runSwitchyard, scrapeMetric, startSim, stopAll, streamChat, waitUntil } from './harness.mjs';

const MODEL = 'm';
// An empty stand-in for /sys: only the backends are judged, whatever the
// machine running the tests has on its PCI bus.
const NO_BOX = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-sysfs-'));

/**
 * Runs doctor against `url` (short scrape interval) while `concurrency`
 * clients keep sending streams of `tokens` forced tokens, so requests both
 * run and finish within the scrape window.
 */
async function doctorUnderLoad(url, { concurrency, tokens, runningMetric }) {
  let running = true;
  const client = async () => {
    while (running) await streamChat(url, { model: MODEL, maxTokens: tokens });
  };
  const clients = Array.from({ length: concurrency }, client);
  try {
    // Doctor's first scrape must already see the engine busy.
    await waitUntil(async () => (await scrapeMetric(url, runningMetric)) > 0, { what: `${runningMetric} > 0` });
    return await runSwitchyard(['doctor', '--url', url, '--interval', '1.5', '--no-nvidia-smi',
      '--sysfs-root', NO_BOX], { timeoutMs: 20_000 });
  } finally {
    running = false;
    await Promise.all(clients);
  }
}

describe('doctor --url', () => {
  after(async () => {
    await stopAll();
    fs.rmSync(NO_BOX, { recursive: true, force: true });
  });

  test('a vLLM engine preempting because its KV pool is too small is flagged', { timeout: 40_000 }, async () => {
    // 8 sequences of ~1,000 tokens each need ~8,000 tokens of KV; the pool holds 2,048.
    const sim = await startSim({ alias: MODEL, speedFactor: 5 },
      ['--dialect', 'vllm', '--max-num-seqs', '8', '--kv-capacity-tokens', '2048', '--max-model-len', '1536', '--block-size', '16',
        '--tokens-per-second', '40']);
    const result = await doctorUnderLoad(sim.url, { concurrency: 8, tokens: 1000, runningMetric: 'vllm:num_requests_running' });
    assert.equal(result.code, 1, result.output);
    assert.match(result.output, /preempted \d+ requests/);
  });

  test("a llama-server over-reporting its own speed is flagged", { timeout: 40_000 }, async () => {
    const sim = await startSim({ alias: MODEL, slots: 2, speedFactor: 5, tokensPerSecond: 40 }, ['--over-report', '3']);
    // Twice as many clients as slots: both slots stay busy across the window.
    const result = await doctorUnderLoad(sim.url, { concurrency: 4, tokens: 60, runningMetric: 'llamacpp:requests_processing' });
    assert.equal(result.code, 1, result.output);
    assert.match(result.output, /inflated/);
  });

  test('an engine with nothing wrong passes', { timeout: 40_000 }, async () => {
    const sim = await startSim({ alias: MODEL, slots: 2, speedFactor: 5, tokensPerSecond: 40 });
    const result = await doctorUnderLoad(sim.url, { concurrency: 2, tokens: 60, runningMetric: 'llamacpp:requests_processing' });
    assert.doesNotMatch(result.output, /inflated|preempted/);
    assert.equal(result.code, 0, result.output);
  });

  test('an unreachable URL and a bad flag are bad input or a warning, never a crash', { timeout: 20_000 }, async () => {
    const bad = await runSwitchyard(['doctor', '--url', 'ftp://x']);
    assert.equal(bad.code, 2, bad.output);
    const down = await runSwitchyard(['doctor', '--url', 'http://127.0.0.1:9', '--interval', '0.1', '--timeout', '1',
      '--sysfs-root', NO_BOX]);
    assert.equal(down.code, 1, down.output);
  });
});
