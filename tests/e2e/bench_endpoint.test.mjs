// `switchyard bench` meeting an endpoint as a new user does: no --model for a
// one-model engine, an alias it does not list, the method line, the open
// loop's achieved rate, JSON without a negative warm-up, the simulator
// recognised by its X-Simulated header.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { fetchJson, runSwitchyard, simFleet, startGateway, startSim, stopAll } from './harness.mjs';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-endpoint-'));
after(async () => {
  await stopAll();
  fs.rmSync(TMP, { recursive: true, force: true });
});

const bench = (args) => runSwitchyard(['bench', ...args.map(String)], { timeoutMs: 60_000 });
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const TIMEOUT = { timeout: 90_000 };

test('--model may be left out, or be a name the one-model endpoint does not list', TIMEOUT, async () => {
  const sim = await startSim({ slots: 2, speedFactor: 50, alias: 'served-name' });
  const json = path.join(TMP, 'nomodel.json');
  const r = await bench(['--url', sim.url, '--input-len', 64, '--output-len', 8, '--concurrency', 1,
    '--requests-per-step', 2, '--json', json]);
  assert.equal(r.code, 0, r.output);
  const doc = readJson(json);
  assert.equal(doc.model, 'served-name');
  assert.match(doc.method.description, /^prompts of 64 tokens: /);
  assert.equal(doc.method.warmup, null, 'no "warmup": -1');
  assert.equal(doc.steps[0].warmup, 1);
  assert.equal(doc.steps[0].prompt_off_target, 0);
  assert.equal(doc.steps[0].prompt_checked, 2);

  const alias = await bench(['--url', sim.url, '--model', 'qwen3-8b', '--input-len', 64, '--output-len', 8,
    '--concurrency', 1, '--requests-per-step', 2]);
  assert.equal(alias.code, 0, alias.output);
  assert.match(alias.output, /'qwen3-8b' is not among .*served-name: benchmarked that/);
});

test('--vocab-size beyond the engine\'s names the engine\'s vocabulary', TIMEOUT, async () => {
  const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
  const models = await fetchJson(`${sim.url}/v1/models`);
  const nVocab = models.body.data[0].meta?.n_vocab;
  assert.ok(nVocab > 0, JSON.stringify(models.body));
  const r = await bench(['--url', sim.url, '--vocab-size', nVocab + 1000, '--concurrency', 1,
    '--requests-per-step', 1]);
  assert.equal(r.code, 2, r.output);
  assert.match(r.output, new RegExp(`--vocab-size: ${nVocab + 1000} is beyond the engine's vocabulary of ${nVocab} tokens`));
});

test('open loop: the table shows the achieved rate beside the offered one', TIMEOUT, async () => {
  const sim = await startSim({ slots: 4, speedFactor: 50, alias: 'm' });
  const json = path.join(TMP, 'open.json');
  const r = await bench(['--url', sim.url, '--input-len', 32, '--output-len', 8, '--rate', 20,
    '--requests-per-step', 20, '--warmup', 0, '--json', json]);
  assert.equal(r.code, 0, r.output);
  assert.match(r.output, /offered achieved peak N/);
  const step = readJson(json).steps[0];
  assert.ok(step.achieved_rate > 0, JSON.stringify(step));
  assert.match(r.output, new RegExp(`20/s +${step.achieved_rate.toFixed(2)}/s`));
});

test('a simulator behind a gateway is labelled SIMULATED from its X-Simulated header', TIMEOUT, async (t) => {
  const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
  const probe = await fetch(`${sim.url}/health`);
  if (probe.headers.get('x-simulated') !== 'switchyard-sim') {
    t.skip('switchyard sim does not send X-Simulated yet (the sim branch adds it)');
    return;
  }
  const gw = await startGateway(simFleet({ count: 1, speedFactor: 50 }));
  const r = await bench(['--url', gw.url, '--model', 'qwen-27b', '--input-len', 32, '--output-len', 8,
    '--concurrency', 1, '--requests-per-step', 2]);
  assert.equal(r.code, 0, r.output);
  assert.match(r.output, /SIMULATED ENGINES/);
});
