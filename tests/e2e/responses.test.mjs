// OpenAI's Responses API through the gateway (issue 30), against simulated
// llama-servers: the named events pass with the client's model name, usage
// from response.completed reaches the key's totals, the ledger and the
// metrics; a stream the client leaves is charged the deltas it was sent;
// the token-counting routes are forwarded; the base URL answers the probes
// agents send before their first request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  expectError, fetchJson, metricValue, postStream, readSse, runSwitchyard, simInstance, startGateway, stopAll,
  waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const KEY = 'sk-responses';
const auth = { authorization: `Bearer ${KEY}` };
const TIMEOUT = { timeout: 60_000 };

describe('the Responses API', () => {
  let dir;
  let gw;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-responses-'));
    gw = await startGateway({
      state_db: path.join(dir, 'state.db'),
      models: [{ name: MODEL, aliases: ['coder'] }],
      instances: [simInstance('gpu0', MODEL, { slots: 2, speedFactor: 1, tokensPerSecond: 100 })],
      api_keys: ['sk-static', { key: KEY, name: 'agent' }],
    });
  });
  after(async () => {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const today = async () => (await fetchJson(`${gw.url}/admin/keys`)).body.keys.find((k) => k.name === 'agent').today;

  test('GET and HEAD / answer 200 without a key; other methods get 405', TIMEOUT, async () => {
    const get = await fetchJson(`${gw.url}/`);
    assert.equal(get.status, 200);
    assert.equal(get.body.api, '/v1');
    const head = await fetch(`${gw.url}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    const post = await fetchJson(`${gw.url}/`, { body: {} });
    expectError(assert, post, 405, {});
    assert.equal(post.headers.get('allow'), 'GET');
  });

  test('a streamed response: events in order, the alias as its model, usage charged to the key', TIMEOUT, async () => {
    const before = await today();
    const res = await postStream(`${gw.url}/v1/responses`,
      { model: 'coder', input: [{ role: 'user', content: 'Say something.' }], max_output_tokens: 12 }, { headers: auth });
    assert.equal(res.status, 200);
    const { raw, events } = await readSse(res);
    assert.ok(!raw.includes('[DONE]'), 'the Responses API has no [DONE]');
    const types = events.map((e) => e.json.type);
    assert.deepEqual(types.slice(0, 4),
      ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.equal(types.filter((t) => t === 'response.output_text.delta').length, 12);
    const completed = events.at(-1).json;
    assert.equal(completed.type, 'response.completed');
    assert.equal(completed.response.model, 'coder', 'the name asked for, not the engine\'s');
    const usage = completed.response.usage;
    assert.equal(usage.output_tokens, 12);
    const after = await waitUntil(async () => { const t = await today(); return t.requests === before.requests + 1 && t; },
      { what: 'the key charged' });
    assert.equal(after.completion_tokens - before.completion_tokens, 12);
    assert.equal(after.prompt_tokens - before.prompt_tokens, usage.input_tokens);
    const metrics = (await fetchJson(`${gw.url}/metrics`, { headers: auth })).text;
    assert.ok(metricValue(metrics, 'switchyard_key_tokens_total', { key: 'agent', kind: 'completion' }) >= 12);
  });

  test('a streamed response the client leaves is charged the deltas it was sent', TIMEOUT, async () => {
    const abort = new AbortController();
    const res = await postStream(`${gw.url}/v1/responses`,
      { model: MODEL, input: 'Say something.', max_output_tokens: 400 }, { headers: auth, signal: abort.signal });
    assert.equal(res.status, 200);
    let seen = 0;
    await readSse(res, {
      onEvent: (e) => {
        if (e.json.type === 'response.output_text.delta') seen += 1;
        return seen < 30;
      },
    });
    abort.abort();
    const line = await waitUntil(() => gw.output().split('\n')
      .find((l) => /access id=.* client_closed key=agent .*tokens=\d+\+\d+/.test(l)),
    { what: `a client_closed access line:\n${gw.output()}` });
    const charged = Number(line.match(/tokens=\d+\+(\d+)/)[1]);
    // At 100 tok/s the gateway may have relayed a few more before it saw the close.
    assert.ok(charged >= 30 && charged <= 60, `charged ${charged} output tokens for 30 read`);
    const ledger = await waitUntil(async () => {
      const r = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'key', '--json']);
      const row = JSON.parse(r.output).find((k) => k.key === 'agent');
      return row?.requests >= 2 && row;
    }, { what: 'the ledger rows' });
    assert.ok(ledger.completion_tokens >= 12 + 30);
  });

  test('input_tokens routes are forwarded to the model\'s engine', TIMEOUT, async () => {
    const responses = await fetchJson(`${gw.url}/v1/responses/input_tokens`,
      { body: { model: 'coder', input: 'Say something.' }, headers: auth });
    assert.equal(responses.status, 200, responses.text);
    assert.equal(responses.body.object, 'response.input_tokens');
    assert.ok(responses.body.input_tokens > 0);
    const chat = await fetchJson(`${gw.url}/v1/chat/completions/input_tokens`,
      { body: { model: 'coder', messages: [{ role: 'user', content: 'Say something.' }] }, headers: auth });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.body.input_tokens, responses.body.input_tokens, 'the same prompt either way');
  });

  test('errors are OpenAI-shaped and name the field or the model', TIMEOUT, async () => {
    expectError(assert, await fetchJson(`${gw.url}/v1/responses`, { body: { model: MODEL }, headers: auth }),
      400, { type: 'invalid_request_error', messageIncludes: "'input' is required" });
    expectError(assert, await fetchJson(`${gw.url}/v1/responses`, { body: { model: 'gpt-17', input: 'x' }, headers: auth }),
      404, { code: 'model_not_found' });
    expectError(assert, await fetchJson(`${gw.url}/v1/responses`, { body: { model: MODEL, input: 'x' } }),
      401, {});
  });
});
