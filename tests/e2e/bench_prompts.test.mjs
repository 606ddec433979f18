// `switchyard bench`'s text prompts as a real engine counts them: exact
// against a tokenizer whose words are not a token each (the sim's, like
// llama.cpp's small vocabularies), a base URL for --tokenize-url, no silent
// fallback to estimates, and salted prompts a rerun's prefix cache does not
// hold, with the cached tokens the engine reported in the report.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { fetchJson, runSwitchyard, startSim, stopAll } from './harness.mjs';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-prompts-'));
after(async () => {
  await stopAll();
  fs.rmSync(TMP, { recursive: true, force: true });
});

const TIMEOUT = { timeout: 90_000 };
const bench = (args) => runSwitchyard(['bench', ...args.map(String)], { timeoutMs: 60_000 });
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

describe('bench text prompts', () => {
  test('the sim counts words of six letters or more as two tokens, as llama.cpp splits words', TIMEOUT, async () => {
    const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
    const count = async (content) => (await fetchJson(`${sim.url}/tokenize`, { body: { content } })).body.tokens.length;
    assert.equal(await count(' the people'), 3);
    assert.equal(await count(' the dog'), 2);
  });

  test('chat prompts are exactly --input-len tokens, with a base URL as --tokenize-url', TIMEOUT, async () => {
    const sim = await startSim({ slots: 2, speedFactor: 50, alias: 'm' });
    const json = path.join(TMP, 'exact.json');
    const r = await bench(['--url', sim.url, '--model', 'm', '--endpoint', 'chat', '--input-len', 128, '--output-len', 4,
      '--concurrency', '2', '--requests-per-step', 16, '--tokenize-url', sim.url, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const doc = readJson(json);
    assert.equal(doc.method.prompt_mode, 'text_exact');
    assert.match(doc.method.description, new RegExp(`sized with ${sim.url}/tokenize`));
    const off = doc.requests.filter((q) => q.prompt_tokens !== 128).map((q) => q.prompt_tokens);
    assert.deepEqual(off, [], 'every prompt is exactly 128 tokens as the engine counts them');
    assert.equal(doc.steps[0].prompt_off_target, 0);
  });

  test('a tokenizer that does not answer is exit 2, unless --allow-estimate', TIMEOUT, async () => {
    const sim = await startSim({ slots: 2, speedFactor: 50, alias: 'm' });
    const args = ['--url', sim.url, '--model', 'm', '--endpoint', 'chat', '--input-len', 32, '--output-len', 4,
      '--concurrency', '1', '--requests-per-step', 2, '--tokenize-url', `${sim.url}/no-such-tokenizer`];
    const refused = await bench(args);
    assert.equal(refused.code, 2, refused.output);
    assert.match(refused.output, /no token counting at .*no-such-tokenizer.*--allow-estimate/s);
    const json = path.join(TMP, 'estimated.json');
    const estimated = await bench([...args, '--allow-estimate', '--json', json]);
    assert.equal(estimated.code, 0, estimated.output);
    assert.equal(readJson(json).method.prompt_mode, 'text_estimated');
  });

  test('a rerun with the same seed is salted: no prefix-cache hits, and the report says what it saw', TIMEOUT, async () => {
    const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
    const runs = [];
    for (const name of ['first', 'second']) {
      const json = path.join(TMP, `${name}.json`);
      const r = await bench(['--url', sim.url, '--model', 'm', '--endpoint', 'chat', '--input-len', 96, '--output-len', 4,
        '--concurrency', '1', '--requests-per-step', 6, '--seed', 7, '--json', json]);
      assert.equal(r.code, 0, r.output);
      runs.push(readJson(json));
    }
    assert.notEqual(runs[0].method.salt, runs[1].method.salt);
    assert.equal(runs[0].method.seed, runs[1].method.seed);
    const second = runs[1];
    const prompt = second.requests.filter((q) => !q.warmup).reduce((n, q) => n + q.prompt_tokens, 0);
    const cached = second.steps[0].cached_tokens;
    assert.equal(typeof cached, 'number', 'the cached tokens the engine reported');
    assert.ok(cached < prompt * 0.1, `the rerun found ${cached} of ${prompt} prompt tokens cached`);
    assert.ok(second.notes.some((n) => n.includes(`served ${cached} of ${prompt} measured prompt tokens`)),
      second.notes.join('\n'));
  });
});
