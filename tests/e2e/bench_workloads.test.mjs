// `switchyard bench --workload agent`, `--workload trace` and `switchyard
// bench needle` against the sim: the agent sessions' stable prefixes show up
// as the sim's per-slot prefix cache hits from turn 2 on, and so do a trace
// session's; the needle check runs its pipeline end to end and says a
// simulated engine makes its score meaningless.
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
        // The growth drawn, give or take the re-sent answer as the engine
        // tokenizes it again and the messages' template.
        assert.ok(grew >= 256 - 16 && grew <= 512 + 16, `session ${s} turn ${i + 1} grew by ${grew}`);
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

describe('bench --workload trace', () => {
  const line = (o) => JSON.stringify(o);
  const writeTrace = (name, lines) => {
    const file = tmp(name);
    fs.writeFileSync(file, lines.join('\n') + '\n');
    return file;
  };

  test('replays each request at its time: exact prompts, shared session prefixes, per-label summaries', TIMEOUT, async () => {
    // A slot per session and one spare, so no session's slot is taken over.
    const sim = await startSim({ slots: 4, ctxSize: 4 * 4096, speedFactor: 50, alias: 'm' });
    const trace = writeTrace('day.jsonl', [
      line({ t: 0.6, input_len: 900, output_len: 16, session: 'a', label: 'chat' }),
      line({ t: 0, input_len: 512, output_len: 16, session: 'a', label: 'chat' }),
      line({ t: 0.2, input_len: 300, output_len: 8, session: 'b', label: 'batch' }),
      line({ t: 0.2, input_len: 300, output_len: 8, label: 'batch' }),
    ]);
    const json = tmp('trace.json');
    const r = await bench(['--workload', 'trace', '--trace', trace, '--url', sim.url, '--model', 'm', '--json', json]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /trace .*day\.jsonl: 4 requests, 3 sessions over 0\.6 s/);
    assert.match(r.output, /makespan \d+\.\d s/);
    const doc = readJson(json);
    assert.equal(doc.method.workload, 'trace');
    assert.equal(doc.steps.length, 1);
    assert.equal(doc.steps[0].succeeded, 4);
    // In time order, each sent no sooner than its t, with exactly its tokens.
    const want = [[0, 512, 16, 'chat'], [0.2, 300, 8, 'batch'], [0.2, 300, 8, 'batch'], [0.6, 900, 16, 'chat']];
    assert.equal(doc.requests.length, 4);
    doc.requests.forEach((q, i) => {
      const [t, input, output, label] = want[i];
      assert.ok(q.start_s >= t - 0.005, `request ${i} sent at ${q.start_s} s, due at ${t} s`);
      assert.equal(q.prompt_tokens, input, `request ${i}`);
      assert.equal(q.completion_tokens, output, `request ${i}`);
      assert.equal(q.label, label);
      assert.equal(q.error, null);
    });
    // Session a's second request extends its first: the sim's slot serves the first from cache.
    assert.equal(doc.requests[0].session, doc.requests[3].session);
    assert.deepEqual([doc.requests[0].turn, doc.requests[3].turn], [1, 2]);
    assert.ok(doc.requests[3].cached_tokens >= 512, `cached ${doc.requests[3].cached_tokens}`);
    assert.notEqual(doc.requests[1].session, doc.requests[2].session, 'a line without a session is its own');
    const phases = Object.fromEntries(doc.trace.phases.map((p) => [p.label, p]));
    assert.deepEqual(Object.keys(phases).sort(), ['batch', 'chat']);
    assert.equal(phases.chat.requests, 2);
    assert.equal(phases.batch.succeeded, 2);
    assert.equal(phases.batch.failed, 0);
    assert.ok(phases.chat.ttft_ms.p50 > 0 && phases.chat.e2e_ms.p99 >= phases.chat.ttft_ms.p50);
    assert.ok(doc.trace.makespan_s >= 0.6 && doc.trace.makespan_s >= phases.chat.last_end_s - 1e-9);
    assert.equal(doc.trace.requests, 4);
    assert.equal(doc.trace.sessions, 3);
  });

  test('chat prompts sized with /tokenize; a usage --trace line is read as well', TIMEOUT, async () => {
    const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
    const trace = writeTrace('usage.jsonl', [
      line({ t: 0, request_id: 'r1', key: 'k', model: 'm', endpoint: 'chat', session: 's', prompt_tokens: 700,
        cached_tokens: 0, completion_tokens: 12, max_tokens: 64, status: 200 }),
    ]);
    const json = tmp('trace-chat.json');
    const r = await bench(['--workload', 'trace', '--trace', trace, '--endpoint', 'chat', '--url', sim.url, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const [q] = readJson(json).requests;
    assert.equal(q.prompt_tokens, 700);
    assert.equal(q.completion_tokens, 12);
  });

  test('a bad line exits 2 naming the line and the field', TIMEOUT, async () => {
    const trace = writeTrace('bad.jsonl', [line({ t: 0, input_len: 10 }), '', line({ t: 1, input_len: 'many' })]);
    const r = await bench(['--workload', 'trace', '--trace', trace, '--url', 'http://127.0.0.1:1']);
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /--trace: .*bad\.jsonl: line 3: input_len: must be a whole number >= 1/);
    const none = await bench(['--workload', 'trace', '--url', 'http://127.0.0.1:1']);
    assert.equal(none.code, 2, none.output);
    assert.match(none.output, /--trace/);
  });

  test('make-trace writes the compressed day, the same for the same seed', TIMEOUT, async () => {
    const file = tmp('made.jsonl');
    const r = await runSwitchyard(['bench', 'make-trace', '--seed', '3', '--compress', '10', '--out', file]);
    assert.equal(r.code, 0, r.output);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const count = (label) => lines.filter((l) => l.label === label).length;
    assert.equal(count('burst'), 16);
    assert.equal(count('cold'), 1);
    assert.ok(count('trickle') > 10, `${count('trickle')} trickle requests`);
    const cold = lines.find((l) => l.label === 'cold');
    assert.deepEqual([cold.t, cold.input_len], [100, 130000]);
    for (const l of lines.filter((l) => l.label === 'burst')) assert.deepEqual([l.t, l.input_len, l.output_len], [60, 2048, 256]);
    for (let i = 1; i < lines.length; i++) assert.ok(lines[i - 1].t <= lines[i].t);
    const again = await runSwitchyard(['bench', 'make-trace', '--seed', '3', '--compress', '10', '--out', tmp('again.jsonl')]);
    assert.equal(again.code, 0, again.output);
    assert.equal(fs.readFileSync(tmp('again.jsonl'), 'utf8'), fs.readFileSync(file, 'utf8'));
    const other = await runSwitchyard(['bench', 'make-trace', '--seed', '4', '--compress', '10', '--out', tmp('other.jsonl')]);
    assert.equal(other.code, 0, other.output);
    assert.notEqual(fs.readFileSync(tmp('other.jsonl'), 'utf8'), fs.readFileSync(file, 'utf8'));
    const bad = await runSwitchyard(['bench', 'make-trace', '--compress', '0']);
    assert.equal(bad.code, 2);
    assert.match(bad.output, /--compress: must be positive/);
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
