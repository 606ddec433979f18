// `switchyard bench --workload agent` and `switchyard bench needle` against
// the sim: the agent sessions' stable prefixes show up as the sim's per-slot
// prefix cache hits from turn 2 on; the needle check runs its pipeline end to
// end and says a simulated engine makes its score meaningless.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runSwitchyard, startSim, stopAll } from './harness.mjs';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-workloads-'));
after(async () => {
  await stopAll();
  fs.rmSync(TMP, { recursive: true, force: true });
});

const tmp = (name) => path.join(TMP, name);
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const bench = (args, timeoutMs = 60_000) => runSwitchyard(['bench', ...args.map(String)], { timeoutMs });
const TIMEOUT = { timeout: 90_000 };

describe('bench --workload agent', () => {
  test('sessions re-send a byte-stable context: cached share > 0 from turn 2 on', TIMEOUT, async () => {
    // A slot per session (and one spare), 8K tokens of context each.
    const sim = await startSim({ slots: 4, ctxSize: 4 * 8192, speedFactor: 50, alias: 'm' });
    const json = tmp('agent.json');
    const r = await bench(['--workload', 'agent', '--url', sim.url, '--model', 'm', '--sessions', 3, '--turns', 3,
      '--start-context', 1024, '--turn-growth', '256-512', '--think-time', '100ms', '--output-len', 32,
      '--seed', 5, '--json', json]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /agent: 3 sessions x 3 turns/);
    assert.match(r.output, /cached %/);
    const doc = readJson(json);
    assert.equal(doc.method.workload, 'agent');
    assert.equal(doc.method.sessions, 3);
    assert.equal(doc.steps.length, 1, 'the usual tokens/wall row');
    assert.ok(doc.steps[0].output_tokens_per_s > 0);
    assert.deepEqual(doc.turns.map((t) => t.turn), [1, 2, 3]);
    for (const t of doc.turns) {
      assert.equal(t.requests, 3);
      assert.equal(t.succeeded, 3);
      assert.ok(t.ttft_ms.p50 > 0 && t.ttft_ms.p90 >= t.ttft_ms.p50 && t.ttft_ms.mean > 0);
    }
    const first = doc.turns[0];
    assert.ok(Math.abs(first.prompt_tokens.mean - 1024) < 64, `turn 1 prompt ${first.prompt_tokens.mean} ~ 1024`);
    for (const t of doc.turns.slice(1))
      assert.ok(t.cached_ratio > 0, `turn ${t.turn}: cached ratio ${t.cached_ratio}`);
    // Per session, every turn's prompt extends the last one's byte for byte:
    // the sim's slot serves at least the whole previous prompt from cache.
    assert.equal(doc.requests.length, 9);
    for (let s = 1; s <= 3; s++) {
      const turns = doc.requests.filter((q) => q.session === s).sort((a, b) => a.turn - b.turn);
      assert.deepEqual(turns.map((q) => q.turn), [1, 2, 3]);
      for (let i = 1; i < turns.length; i++) {
        const grew = turns[i].prompt_tokens - turns[i - 1].prompt_tokens;
        assert.ok(grew >= 256 && grew <= 512 + 16, `session ${s} turn ${i + 1} grew by ${grew}`);
        assert.ok(turns[i].cached_tokens >= turns[i - 1].prompt_tokens,
          `session ${s} turn ${i + 1}: cached ${turns[i].cached_tokens} < last prompt ${turns[i - 1].prompt_tokens}`);
      }
    }
  });

  test('a vLLM-dialect engine: block prefix-cache hits (usage.prompt_tokens_details) from turn 2 on', TIMEOUT, async () => {
    const sim = await startSim({ slots: 4, speedFactor: 50, alias: 'm' }, ['--dialect', 'vllm', '--max-model-len', 8192]);
    const json = tmp('agent-vllm.json');
    const r = await bench(['--workload', 'agent', '--url', sim.url, '--model', 'm', '--sessions', 2, '--turns', 3,
      '--start-context', 1024, '--turn-growth', '256-512', '--think-time', '50ms', '--output-len', 32, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.turns.length, 3);
    for (const t of doc.turns.slice(1))
      assert.ok(t.cached_ratio > 0.5, `turn ${t.turn}: cached ratio ${t.cached_ratio}`);
  });

  test('bad agent flags exit 2 with the flag named', TIMEOUT, async () => {
    const r = await bench(['--workload', 'agent', '--url', 'http://127.0.0.1:1', '--model', 'm', '--turn-growth', 'lots']);
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /--turn-growth/);
  });
});

describe('bench needle', () => {
  test('runs the pipeline against a sim and says the score is meaningless there', TIMEOUT, async () => {
    const sim = await startSim({ slots: 1, ctxSize: 16384, speedFactor: 50, alias: 'm' });
    const json = tmp('needle.json');
    const r = await bench(['needle', '--url', sim.url, '--model', 'm', '--context', 4096, '--needles', 3,
      '--depths', '10,50,90', '--json', json]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /SIMULATED ENGINE.*meaningless/);
    const rows = r.output.split('\n').filter((l) => /^\s+4096\s+(10|50|90)\s+1\s/.test(l));
    assert.equal(rows.length, 3, r.output);
    const doc = readJson(json);
    assert.equal(doc.kind, 'needle');
    assert.equal(doc.simulated, true);
    assert.match(doc.warning, /meaningless/);
    assert.deepEqual(doc.cells.map((c) => c.depth), [10, 50, 90]);
    assert.deepEqual(doc.scores.map((s) => s.depth), [10, 50, 90]);
    for (const c of doc.cells) {
      assert.equal(c.error, null);
      assert.equal(c.needles.length, 3);
      for (const n of c.needles) assert.match(n.value, /^\d{7}$/);
      assert.ok(c.prompt_tokens <= 4096 && c.prompt_tokens > 3500, `prompt ${c.prompt_tokens} tokens`);
      assert.ok(c.score >= 0 && c.score <= 1);
    }
    // The needles sit near their depth (percent of the message).
    for (const c of doc.cells) assert.ok(Math.abs(c.needles[0].position_percent - c.depth) < 5, JSON.stringify(c.needles[0]));
  });
});
