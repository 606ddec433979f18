// `switchyard bench` against the real sim and gateway: the method's promises
// (forced length, exact prompt length, tokens/wall close to the sim's
// modelled rate), its files (JSON, HTML, overlay), Ctrl-C, and bad input.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import {
  BIN, fetchJson, metricValue, runSwitchyard, simFleet, startGateway, startSim, stopAll, waitUntil, within,
} from './harness.mjs';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
after(async () => {
  await stopAll();
  fs.rmSync(TMP, { recursive: true, force: true });
});

const tmp = (name) => path.join(TMP, name);
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

/** Runs `switchyard bench ...` to its end; resolves {code, signal, output}. */
const bench = (args, timeoutMs = 60_000) => runSwitchyard(['bench', ...args.map(String)], { timeoutMs });

// Flags the sim accepts today (the simulator is being extended): a test that
// needs a newer flag skips with the reason instead of passing silently.
let simHelp;
async function simSupports(flag) {
  simHelp ??= (await runSwitchyard(['sim', '--help'])).output;
  return simHelp.includes(flag);
}

const TIMEOUT = { timeout: 90_000 };

describe('bench: the method against the sim', () => {
  test('forced output length holds and tok/s at N=1 matches the modelled rate', TIMEOUT, async () => {
    // One slot at 65 tok/s decode and 900 tok/s prefill, 20x faster.
    const rate = 65 * 20;
    const prefill = 900 * 20;
    const sim = await startSim({ slots: 1, tokensPerSecond: 65, prefillTokensPerSecond: 900, speedFactor: 20, alias: 'm' });
    const json = tmp('forced.json');
    const input = 256;
    const output = 256;
    const r = await bench(['--url', sim.url, '--model', 'm', '--input-len', input, '--output-len', output,
      '--concurrency', '1', '--requests-per-step', 6, '--warmup', 1, '--seed', 3, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.method.prompt_mode, 'token_ids');
    assert.equal(doc.steps.length, 1);
    const step = doc.steps[0];
    assert.equal(step.requests, 6);
    assert.equal(step.short_outputs, 0);
    const measured = doc.requests.filter((q) => !q.warmup);
    assert.equal(measured.length, 6);
    assert.ok(doc.requests.some((q) => q.warmup), 'the warm-up request is recorded, flagged');
    for (const q of measured) {
      assert.equal(q.completion_tokens, output, 'forced length from usage');
      assert.equal(q.content_chunks, output, 'cross-checked with the streamed chunks');
      assert.equal(q.prompt_tokens, input, 'token-id prompts are exact');
      assert.equal(q.error, null);
    }
    // Serial requests on one slot: each takes prefill + decode.
    const expected = output / (input / prefill + output / rate);
    const got = step.output_tokens_per_s;
    assert.ok(Math.abs(got - expected) / expected < 0.15, `measured ${got} tok/s, modelled ${expected}`);
    assert.ok(step.ttft_ms.p50 > 0 && step.tpot_ms.p50 > 0 && step.e2e_ms.p99 >= step.e2e_ms.p50);
    // A gap is measured between reads: a client that falls behind reads
    // several tokens at once (gaps of 0, then a longer one), which moves the
    // median but not the mean, the decode rate's gap.
    const gap = 1000 / rate;
    assert.ok(Math.abs(step.itl_ms.mean - gap) / gap < 0.25, `mean ITL ${step.itl_ms.mean} ms, modelled ${gap}`);
    // The sim reports its own speed honestly: no inflation flag.
    assert.ok(step.self_reported_tokens_per_s > 0, 'timings.predicted_per_second was read');
    assert.equal(step.inflated, false, `self-report ratio ${step.self_report_ratio}`);
    assert.match(r.output, /out tok\/s/);
    assert.match(r.output, /simulated engines/i, 'the sim says it is simulated');
  });

  test('chat prompts are sized with /tokenize to the exact length', TIMEOUT, async () => {
    const sim = await startSim({ slots: 2, speedFactor: 50, alias: 'm' });
    const json = tmp('chat.json');
    const r = await bench(['--url', sim.url, '--model', 'm', '--endpoint', 'chat', '--input-len', 300, '--output-len', 32,
      '--concurrency', '1,2', '--requests-per-step', 4, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.method.prompt_mode, 'text_exact');
    for (const q of doc.requests) assert.equal(q.prompt_tokens, 300, 'the engine counted exactly the target');
    for (const q of doc.requests) assert.equal(q.completion_tokens, 32);
    assert.deepEqual(doc.steps.map((s) => s.concurrency), [1, 2]);
  });

  test('through the gateway over a sim fleet: text prompts via its /tokenize, HTML report', TIMEOUT, async () => {
    const gw = await startGateway(simFleet({ count: 2, speedFactor: 50 }));
    const json = tmp('gw.json');
    const html = tmp('gw.html');
    const r = await bench(['--url', gw.url, '--model', 'qwen-27b', '--input-len', 200, '--output-len', 32,
      '--concurrency', '1,2,4', '--requests-per-step', 8, '--simulated', '--json', json, '--html', html]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.simulated, true);
    assert.equal(doc.method.prompt_mode, 'text_exact', 'no n_vocab behind a gateway: text sized with /tokenize');
    for (const q of doc.requests) assert.equal(q.completion_tokens, 32);
    const page = fs.readFileSync(html, 'utf8');
    assert.match(page, /<svg/);
    assert.match(page, /simulated engines/);
  });

  test('bench report overlays runs: one throughput series per run', TIMEOUT, async () => {
    const sim = await startSim({ slots: 2, speedFactor: 50, alias: 'm' });
    const a = tmp('a.json');
    const b = tmp('b.json');
    for (const [file, n] of [[a, '1,2'], [b, '1,2,4']]) {
      const r = await bench(['--url', sim.url, '--model', 'm', '--input-len', 64, '--output-len', 16,
        '--concurrency', n, '--requests-per-step', 4, '--json', file]);
      assert.equal(r.code, 0, r.output);
    }
    const cmp = tmp('cmp.html');
    const r = await bench(['report', a, b, '--html', cmp]);
    assert.equal(r.code, 0, r.output);
    const page = fs.readFileSync(cmp, 'utf8');
    const firstChart = page.slice(page.indexOf('<svg'), page.indexOf('</svg>'));
    assert.equal((firstChart.match(/class="series"/g) ?? []).length, 2);
  });

  test('open loop at a rate: Poisson arrivals, the step reports its peak concurrency', TIMEOUT, async () => {
    const sim = await startSim({ slots: 4, speedFactor: 50, alias: 'm' });
    const json = tmp('open.json');
    const r = await bench(['--url', sim.url, '--model', 'm', '--input-len', 64, '--output-len', 16,
      '--rate', 20, '--requests-per-step', 20, '--warmup', 0, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.method.loop, 'open');
    assert.equal(doc.steps[0].rate, 20);
    assert.equal(doc.steps[0].requests, 20);
    assert.ok(doc.steps[0].concurrency >= 1);
  });

  test('the inflated self-report is flagged (sim --over-report 3)', TIMEOUT, async (t) => {
    if (!(await simSupports('--over-report'))) {
      t.skip('switchyard sim has no --over-report flag yet (simulator rewrite pending)');
      return;
    }
    const sim = await startSim({ slots: 2, speedFactor: 20, alias: 'm' }, ['--over-report', 3]);
    const json = tmp('inflated.json');
    const r = await bench(['--url', sim.url, '--model', 'm', '--input-len', 128, '--output-len', 64,
      '--concurrency', '2', '--requests-per-step', 4, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const step = readJson(json).steps[0];
    assert.equal(step.inflated, true, `ratio ${step.self_report_ratio}`);
    assert.ok(step.self_report_ratio > 2, `ratio ${step.self_report_ratio}`);
    assert.match(r.output, /INFLATED/);
  });
});

describe('bench: Ctrl-C', () => {
  test('SIGINT writes valid partial JSON and exits non-zero', TIMEOUT, async () => {
    // Slow on purpose: 65 tok/s real time, so the run is far from done.
    const sim = await startSim({ slots: 2, speedFactor: 2, alias: 'm' });
    const json = tmp('partial.json');
    const child = spawn(BIN, ['bench', '--url', sim.url, '--model', 'm', '--input-len', 64, '--output-len', 64,
      '--concurrency', '2,4', '--requests-per-step', 40, '--warmup', 0, '--json', json], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    try {
      // Interrupt once bench has completed a request. The sim counts finished
      // requests' tokens; with 2 in flight a third can only have finished
      // after bench finished one and sent the next.
      await waitUntil(async () => metricValue((await fetchJson(`${sim.url}/metrics`)).text,
        'llamacpp:tokens_predicted_total') >= 3 * 64, { timeoutMs: 15_000, what: 'three completed requests' });
      child.kill('SIGINT');
      const status = await within(exited, 15_000);
      assert.ok(status, `bench did not exit after SIGINT:\n${output}`);
      assert.notEqual(status.code, 0, output);
      assert.match(output, /interrupted/);
      const doc = readJson(json);
      assert.equal(doc.interrupted, true);
      assert.ok(doc.requests.filter((q) => q.error === null).length >= 1, 'completed requests are kept');
      assert.equal(doc.steps.length, 1);
      assert.equal(doc.steps[0].interrupted, true);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** A tiny engine that lists model `m` and streams 5 tokens then stops, ignoring ignore_eos. */
function startEosIgnoringEngine() {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
      }
      if (req.url === '/v1/completions' || req.url === '/v1/chat/completions') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < 5; i++) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: ' w', finish_reason: null }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: '', finish_reason: 'stop' }], usage: { prompt_tokens: 8, completion_tokens: 5 } })}\n\n`);
        return res.end('data: [DONE]\n\n');
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'File Not Found' } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('bench: bad input gets one clear line and a non-zero exit', () => {
  test('unreachable URL', TIMEOUT, async () => {
    const r = await bench(['--url', 'http://127.0.0.1:1', '--model', 'm']);
    assert.notEqual(r.code, 0);
    assert.match(r.output, /switchyard bench: cannot reach http:\/\/127\.0\.0\.1:1/);
  });

  // Several models listed need a listed name (unit: EndpointProbe); a one-model
  // endpoint takes any name as that model, and says so.
  test('an unlisted model on a one-model endpoint is that model, with a note', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50, alias: 'm' });
    const r = await bench(['--url', sim.url, '--model', 'nope', '--input-len', 32, '--output-len', 8,
      '--concurrency', 1, '--requests-per-step', 2]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /'nope' is not among .* serves one model, m: benchmarked that/);
  });

  test('a 401 from a gateway with API keys', TIMEOUT, async () => {
    const gw = await startGateway({ ...simFleet({ count: 1, speedFactor: 50 }), api_keys: ['sk-right'] });
    const r = await bench(['--url', gw.url, '--model', 'qwen-27b', '--api-key', 'sk-wrong']);
    assert.notEqual(r.code, 0);
    assert.match(r.output, /switchyard bench: .*refused the API key \(401/);
    const ok = await bench(['--url', gw.url, '--model', 'qwen-27b', '--api-key', 'sk-right', '--input-len', 32,
      '--output-len', 8, '--concurrency', 1, '--requests-per-step', 2]);
    assert.equal(ok.code, 0, ok.output);
  });

  test('an endpoint that ignores ignore_eos', TIMEOUT, async () => {
    const server = await startEosIgnoringEngine();
    try {
      const r = await bench(['--url', `http://127.0.0.1:${server.address().port}`, '--model', 'm', '--vocab-size', 32000,
        '--output-len', 64]);
      assert.notEqual(r.code, 0);
      assert.match(r.output, /does not honour ignore_eos: asked for exactly 64 tokens, got 5/);
    } finally {
      server.close();
    }
  });

  test('bad flags exit 2', TIMEOUT, async () => {
    const r = await bench(['--url', 'ftp://x', '--model', 'm']);
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /--url/);
  });
});
