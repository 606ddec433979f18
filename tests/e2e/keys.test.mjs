// Keys, limits, sessions, the fair queue and the usage ledger (issue 14),
// against the real binary: `switchyard keys` changes a running gateway's
// keys without a reload; every limit answers 429 with its code, Retry-After
// and the x-ratelimit-* headers; a session cap holds a new agent; one key's
// flood does not starve another's lone request; the ledger matches what the
// clients received.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  USER_MESSAGES, expectError, fetchJson, metricValue, queueDepth, runSwitchyard, scrapeMetric, simInstance, startGateway, stopAll,
  waitUntil,
} from './harness.mjs';

const TIMEOUT = { timeout: 30_000 };
const MODEL = 'qwen-27b';
const STATIC = 'sk-static-admin';
const bearer = (key) => ({ authorization: `Bearer ${key}` });
const chat = (url, key, { maxTokens = 4, headers = {}, content = 'Say something.' } = {}) => fetchJson(`${url}/v1/chat/completions`, {
  headers: { ...bearer(key), ...headers },
  body: { model: MODEL, max_tokens: maxTokens, messages: [{ role: 'user', content }] },
  timeoutMs: 20_000,
});

async function createKey(gw, name, flags = []) {
  const r = await runSwitchyard(['keys', '-c', gw.configFile, 'create', name, ...flags]);
  assert.equal(r.code, 0, r.output);
  const key = r.output.match(/^(sy-\S+)$/m)?.[1];
  assert.ok(key, `a key printed: ${r.output}`);
  return key;
}

describe('keys CLI and limits', () => {
  let gw;
  before(async () => {
    gw = await startGateway({
      models: [{ name: MODEL, aliases: ['default'] }, { name: 'slow', aliases: [] }],
      instances: [simInstance('gpu0', MODEL, { slots: 4, speedFactor: 50 }),
        simInstance('slow0', 'slow', { slots: 1, speedFactor: 1, tokensPerSecond: 10 })],
      api_keys: [STATIC],
      queue: { max_wait: '1s' },
    });
  });
  after(stopAll);

  test('a created key works within a second, is listed without its secret, and is refused once revoked', TIMEOUT, async () => {
    const key = await createKey(gw, 'alice');
    await waitUntil(async () => (await chat(gw.url, key)).status === 200, { timeoutMs: 2000, what: 'the new key accepted' });
    const list = await runSwitchyard(['keys', '-c', gw.configFile, 'list']);
    assert.equal(list.code, 0);
    assert.match(list.output, /alice\s+sy-\S{7}…/);
    assert.ok(!list.output.includes(key), 'the key itself is never listed');
    assert.ok(!gw.output().includes(key), 'the key is never logged');
    const revoke = await runSwitchyard(['keys', '-c', gw.configFile, 'revoke', 'alice']);
    assert.equal(revoke.code, 0, revoke.output);
    await waitUntil(async () => (await chat(gw.url, key)).status === 401, { timeoutMs: 2000, what: 'the revoked key refused' });
    assert.equal((await chat(gw.url, STATIC)).status, 200, 'static keys keep working');
    const again = await runSwitchyard(['keys', '-c', gw.configFile, 'create', 'alice']);
    assert.equal(again.code, 2);
    assert.match(again.output, /exists already \(revoked\)/);
  });

  test('rpm: 429 rate_limit_exceeded with Retry-After; x-ratelimit headers on every answer', TIMEOUT, async () => {
    const key = await createKey(gw, 'rpm-key', ['--rpm', '2', '--tpm', '100000']);
    await waitUntil(async () => (await chat(gw.url, key)).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    const second = await chat(gw.url, key);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-ratelimit-limit-requests'), '2');
    assert.equal(second.headers.get('x-ratelimit-remaining-requests'), '0');
    assert.match(second.headers.get('x-ratelimit-reset-requests'), /^\d+(ms|s|m\d+s)$/);
    assert.equal(second.headers.get('x-ratelimit-limit-tokens'), '100000');
    assert.ok(Number(second.headers.get('x-ratelimit-remaining-tokens')) < 100000);
    const third = await chat(gw.url, key);
    expectError(assert, third, 429, { code: 'rate_limit_exceeded', messageIncludes: ['rpm-key', '2 requests per minute'] });
    assert.ok(Number(third.headers.get('retry-after')) >= 20, `Retry-After ${third.headers.get('retry-after')}`);
    assert.equal(third.headers.get('x-ratelimit-remaining-requests'), '0');
  });

  test('tpm and tokens per day: the reservation (prompt + max_tokens) is checked up front', TIMEOUT, async () => {
    const tpm = await createKey(gw, 'tpm-key', ['--tpm', '100']);
    await waitUntil(async () => (await chat(gw.url, tpm, { maxTokens: 20 })).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    expectError(assert, await chat(gw.url, tpm, { maxTokens: 500 }), 429, { code: 'rate_limit_exceeded', messageIncludes: 'lower max_tokens' });
    const day = await createKey(gw, 'day-key', ['--tokens-per-day', '60']);
    await waitUntil(async () => (await chat(gw.url, day, { maxTokens: 20 })).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    const over = await chat(gw.url, day, { maxTokens: 59 });
    expectError(assert, over, 429, { code: 'budget_exceeded', messageIncludes: 'for today' });
    assert.ok(Number(over.headers.get('retry-after')) >= 1);
  });

  test('max_concurrency: the excess waits in the key\'s lane, then 429 concurrency_limit_exceeded', TIMEOUT, async () => {
    const key = await createKey(gw, 'one-at-a-time', ['--max-concurrency', '1']);
    await waitUntil(async () => (await chat(gw.url, key)).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    // The first runs until the test lets it go; the second waits out queue.max_wait (1 s).
    const leave = new AbortController();
    const long = fetchJson(`${gw.url}/v1/chat/completions`, {
      headers: bearer(key), signal: leave.signal, timeoutMs: 20_000,
      body: { model: 'slow', max_tokens: 1000, ignore_eos: true, messages: USER_MESSAGES },
    }).catch(() => 'left');
    await waitUntil(async () => (await scrapeMetric(gw.url, 'switchyard_instance_in_flight', { instance: 'slow0' })) === 1, { what: 'the long request running' });
    const waited = await chat(gw.url, key);
    expectError(assert, waited, 429, { code: 'concurrency_limit_exceeded', messageIncludes: 'max_concurrency' });
    assert.equal((await chat(gw.url, STATIC)).status, 200, 'other keys are not held');
    leave.abort();
    assert.equal(await long, 'left');
    // Its slot is given back when it ends.
    await waitUntil(async () => (await chat(gw.url, key)).status === 200, { what: 'the key\'s slot given back' });
  });

  test('max_sessions 1: a seated session goes ahead, a second waits for the seat, then 429 naming the cap', TIMEOUT, async () => {
    const key = await createKey(gw, 'one-agent', ['--max-sessions', '1', '--session-idle', '1h']);
    const agent = (id) => chat(gw.url, key, { headers: { 'x-session-id': id } });
    await waitUntil(async () => (await agent('agent-a')).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    assert.equal((await agent('agent-a')).status, 200, 'the seated session goes ahead');
    const second = await agent('agent-b');
    expectError(assert, second, 429, { code: 'session_limit_exceeded', messageIncludes: ['1 active session', 'max_sessions', 'frees in'] });
    assert.ok(Number(second.headers.get('retry-after')) > 3000, 'Retry-After: when the oldest seat frees');

    const idle = await createKey(gw, 'short-idle', ['--max-sessions', '1', '--session-idle', '300ms']);
    const a = (id) => chat(gw.url, idle, { headers: { 'x-session-id': id } });
    await waitUntil(async () => (await a('first')).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    // Held until the first idles out (well within queue.max_wait), then seated.
    assert.equal((await a('second')).status, 200);
  });

  test('max_sessions covers requests without a conversation: each is a session while it runs', TIMEOUT, async () => {
    const key = await createKey(gw, 'seated-completions', ['--max-sessions', '1', '--session-idle', '1h']);
    const complete = () => fetchJson(`${gw.url}/v1/completions`, {
      headers: bearer(key), timeoutMs: 20_000, body: { model: MODEL, max_tokens: 4, prompt: 'Once upon a time' },
    });
    await waitUntil(async () => (await complete()).status === 200, { timeoutMs: 2000, what: 'the key accepted' });
    // Its seat freed when it ended (not an hour later): the next one and then an agent get one.
    assert.equal((await complete()).status, 200);
    const agent = () => chat(gw.url, key, { headers: { 'x-session-id': 'agent-a' } });
    assert.equal((await agent()).status, 200);
    // Now the agent holds the only seat: a completion waits for it, then 429.
    expectError(assert, await complete(), 429, { code: 'session_limit_exceeded', messageIncludes: 'max_sessions' });
  });

  test('per-key metrics: requests by outcome, tokens by kind, rejections by reason, named by the key\'s name', TIMEOUT, async () => {
    const key = await createKey(gw, 'metered', ['--rpm', '2']);
    const answers = [];
    await waitUntil(async () => {
      const r = await chat(gw.url, key, { content: 'count my tokens' });
      if (r.status === 200) answers.push(r);
      return r.status === 200;
    }, { timeoutMs: 2000, what: 'the key accepted' });
    answers.push(await chat(gw.url, key, { content: 'count my tokens' }));
    assert.equal(answers[1].status, 200);
    expectError(assert, await chat(gw.url, key), 429, { code: 'rate_limit_exceeded' });
    const sum = (f) => answers.reduce((n, r) => n + f(r.body.usage), 0);
    // The per-key series name the keys: a scrape presents a key to see them.
    const text = (await fetchJson(`${gw.url}/metrics`, { headers: bearer(STATIC) })).text;
    const anonymous = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.doesNotMatch(anonymous, /switchyard_key_|metered/, 'no key names for a scrape without a key');
    assert.match(anonymous, /switchyard_requests_total/, 'the rest is there');
    const value = (name, labels) => metricValue(text, name, { key: 'metered', ...labels });
    assert.equal(value('switchyard_key_requests_total', { outcome: 'ok' }), 2);
    assert.equal(value('switchyard_key_requests_total', { outcome: 'error' }), 1);
    assert.equal(value('switchyard_key_rejections_total', { reason: 'rate_limit_exceeded' }), 1);
    assert.equal(value('switchyard_key_tokens_total', { kind: 'prompt' }), sum((u) => u.prompt_tokens));
    assert.equal(value('switchyard_key_tokens_total', { kind: 'completion' }), sum((u) => u.completion_tokens));
    assert.equal(value('switchyard_key_tokens_total', { kind: 'cached' }), sum((u) => u.prompt_tokens_details?.cached_tokens ?? 0));
    const other = await createKey(gw, 'metered-models', ['--models', 'some-other-model']);
    await waitUntil(async () => (await chat(gw.url, other)).status === 403, { timeoutMs: 2000, what: 'the key known' });
    const scraped = (await fetchJson(`${gw.url}/metrics`, { headers: bearer(STATIC) })).text;
    assert.ok(metricValue(scraped, 'switchyard_key_rejections_total', { key: 'metered-models', reason: 'model_not_allowed' }) >= 1);
    assert.ok(!text.includes(key), 'the key itself is never a label');
  });

  test('a key limited to some models gets 403 model_not_allowed for others', TIMEOUT, async () => {
    const key = await createKey(gw, 'other-models', ['--models', 'some-other-model']);
    await waitUntil(async () => (await chat(gw.url, key)).status === 403, { timeoutMs: 2000, what: 'the key known' });
    expectError(assert, await chat(gw.url, key), 403, { code: 'model_not_allowed' });
  });
});

describe('fair queue and ledger', () => {
  let gw;
  before(async () => {
    gw = await startGateway({
      models: [{ name: MODEL, aliases: ['default'] }],
      instances: [simInstance('gpu0', MODEL, { slots: 1, speedFactor: 2 })],
      api_keys: [STATIC, { key: 'sk-flood', name: 'flood' }, { key: 'sk-lone', name: 'lone' }],
      queue: { max_wait: '60s' },
    });
  });
  after(stopAll);

  test('one key flooding 50 requests delays another key\'s lone request by about one request', { timeout: 60_000 }, async () => {
    const done = [];
    const flood = Array.from({ length: 50 }, (_, i) => chat(gw.url, 'sk-flood', { maxTokens: 8, content: `flood ${i}` })
      .then((r) => { assert.equal(r.status, 200); done.push('flood'); }));
    await waitUntil(async () => (await queueDepth(gw.url, MODEL)) >= 30, { timeoutMs: 10_000, what: 'the flood queued' });
    const before = done.length;
    await chat(gw.url, 'sk-lone', { maxTokens: 8 }).then((r) => { assert.equal(r.status, 200); done.push('lone'); });
    const floodServedMeanwhile = done.indexOf('lone') - before;
    // FIFO would serve every queued flood request first (30 or more). Round
    // robin: the one running, the flood's turn of this round, and one that
    // may finish while the lone request is on its way.
    assert.ok(floodServedMeanwhile <= 3, `${floodServedMeanwhile} flood requests went ahead of the lone one`);
    await Promise.all(flood);
  });

  test('the ledger\'s rows match what the clients received', TIMEOUT, async () => {
    const received = { prompt: 0, completion: 0, requests: 0 };
    for (let i = 0; i < 5; ++i) {
      const r = await chat(gw.url, 'sk-lone', { maxTokens: 6, content: `count me ${i}`, headers: { 'x-session-id': 'ledger-session' } });
      assert.equal(r.status, 200);
      received.prompt += r.body.usage.prompt_tokens;
      received.completion += r.body.usage.completion_tokens;
      received.requests += 1;
    }
    const usage = async () => {
      const r = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'session', '--json']);
      assert.equal(r.code, 0, r.output);
      return JSON.parse(r.output).find((row) => row.session === 'ledger-session');
    };
    const row = await waitUntil(async () => { const u = await usage(); return u?.requests === 5 && u; }, { what: 'the ledger rows' });
    assert.equal(row.prompt_tokens, received.prompt);
    assert.equal(row.completion_tokens, received.completion);
    assert.equal(row.errors, 0);
    const byKey = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'key', '--csv']);
    assert.match(byKey.output, /^key,requests,errors,prompt_tokens/);
    assert.match(byKey.output, /^flood,50,0,/m);
    // A session id is the client's: one a spreadsheet would run as a formula
    // is written as text (a leading apostrophe).
    const injected = await chat(gw.url, 'sk-lone', { headers: { 'x-session-id': '@SUM(1+1)' } });
    assert.equal(injected.status, 200, injected.text);
    const bySession = await waitUntil(async () => {
      const r = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'session', '--csv']);
      return r.output.includes('SUM(1+1)') && r.output;
    }, { what: 'the session row' });
    assert.match(bySession, /^'@SUM\(1\+1\),1,/m);
    assert.doesNotMatch(bySession, /^[=+\-@]/m, 'no cell starts a formula');
    const trace = await runSwitchyard(['usage', '-c', gw.configFile, '--trace']);
    const lines = trace.output.trim().split('\n').map((l) => JSON.parse(l));
    const mine = lines.filter((l) => l.session === 'ledger-session');
    assert.equal(mine.length, 5);
    assert.equal(mine[0].max_tokens, 6);
    assert.equal(mine[0].model, MODEL);
  });
});

describe('day budget across a restart', () => {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-budget-')); });
  after(async () => {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a restarted gateway starts each key\'s day from the ledger: spend, restart, refused', { timeout: 60_000 }, async () => {
    const config = {
      state_db: path.join(dir, 'state.db'),
      models: [{ name: MODEL, aliases: ['default'] }],
      instances: [simInstance('gpu0', MODEL, { slots: 1, speedFactor: 50 })],
      api_keys: [STATIC, { key: 'sk-day', name: 'day', tokens_per_day: 100 }],
    };
    const ask = (url, maxTokens) => fetchJson(`${url}/v1/chat/completions`, {
      headers: bearer('sk-day'), timeoutMs: 20_000,
      body: { model: MODEL, max_tokens: maxTokens, ignore_eos: true, messages: [{ role: 'user', content: 'Spend.' }] },
    });
    let gw = await startGateway(config);
    const spent = await ask(gw.url, 60);
    assert.equal(spent.status, 200);
    const used = spent.body.usage.prompt_tokens + spent.body.usage.completion_tokens;
    assert.ok(used > 100 - 40, `used ${used}: the next request (about 40 reserved) must not fit`);
    await waitUntil(async () => {
      const r = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'key', '--csv']);
      return /^day,1,/m.test(r.output);
    }, { what: 'the ledger row' });
    await gw.stop();

    gw = await startGateway(config);
    const refused = await ask(gw.url, 30);
    expectError(assert, refused, 429, { code: 'budget_exceeded', messageIncludes: `has used ${used} of its 100 tokens` });
    assert.equal((await chat(gw.url, STATIC)).status, 200, 'other keys are not held');
  });
});

// Issue 28: a key's wait and the model's queue share one bound. A request
// that waited for its key's max_concurrency and then for a slot used to get
// its 429 after both waits (up to twice queue.max_wait).
describe('one bound for both waits', () => {
  let gw;
  before(async () => {
    gw = await startGateway({
      models: [{ name: 'slow', aliases: ['default'] }],
      instances: [simInstance('slow0', 'slow', { slots: 1, speedFactor: 1, tokensPerSecond: 10 })],
      api_keys: [STATIC, { key: 'sk-one-at-a-time', name: 'single', max_concurrency: 1 }],
      queue: { max_wait: '2s' },
    });
  });
  after(stopAll);

  const long = (key, signal) => fetchJson(`${gw.url}/v1/chat/completions`, {
    headers: bearer(key), signal, timeoutMs: 20_000,
    body: { model: 'slow', max_tokens: 1000, ignore_eos: true, messages: USER_MESSAGES },
  }).catch(() => 'left');
  const waitingOf = async (name) => {
    const r = await fetchJson(`${gw.url}/admin/keys`);
    return r.body.keys.find((k) => k.name === name)?.waiting;
  };

  test('a request that waited for its key and then for a slot gets its 429 at queue.max_wait', { timeout: 30_000 }, async () => {
    const first = new AbortController();
    const running = long('sk-one-at-a-time', first.signal);
    await waitUntil(async () => (await scrapeMetric(gw.url, 'switchyard_instance_in_flight', { instance: 'slow0' })) === 1, { what: 'the key\'s request running' });
    const sent = Date.now();
    const second = fetchJson(`${gw.url}/v1/chat/completions`, {
      headers: bearer('sk-one-at-a-time'), timeoutMs: 20_000,
      body: { model: 'slow', max_tokens: 4, messages: USER_MESSAGES },
    });
    await waitUntil(async () => (await waitingOf('single')) === 1, { what: 'the second waiting for its key' });
    // Another key's long request queues for the one slot, ahead of the second.
    const other = new AbortController();
    const otherRunning = long(STATIC, other.signal);
    await waitUntil(async () => (await queueDepth(gw.url, 'slow')) === 1, { what: 'the other key queued' });
    // The scenario needs the key wait to use most of the bound before the
    // key's first request ends and the slot goes to the other key.
    await new Promise((resolve) => setTimeout(resolve, 1200 - (Date.now() - sent)));
    first.abort();
    const refused = await second;
    const elapsed = Date.now() - sent;
    expectError(assert, refused, 429, { messageIncludes: ['within 2 s', 'max_concurrency'] });
    assert.ok(elapsed < 2700, `answered after ${elapsed} ms: one queue.max_wait (2 s), not two`);
    other.abort();
    assert.equal(await running, 'left');
    assert.equal(await otherRunning, 'left');
  });
});
