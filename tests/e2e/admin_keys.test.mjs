// GET /admin/keys (issue 16): every key by name and prefix (never the key),
// its limits, today's usage from the ledger, and what it holds now
// (requests running, sessions seated); behind the admin key; today's usage
// survives a restart (read back from the ledger).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { fetchJson, postStream, runSwitchyard, simInstance, startGateway, stopAll, waitUntil } from './harness.mjs';

const MODEL = 'qwen-27b';
const ADMIN = 'sk-admin-keys-test';
const CONFIG_KEY = 'sk-config-ci-0123456789abcdef';
const bearer = (key) => ({ authorization: `Bearer ${key}` });

function config(stateDb) {
  return {
    admin_key: ADMIN,
    health_detail: 'public',  // the harness waits for the instances on /health
    state_db: stateDb,
    models: [{ name: MODEL, aliases: ['default'] }],
    instances: [simInstance('gpu0', MODEL, { slots: 4, speedFactor: 20, tokensPerSecond: 20 })],
    api_keys: [{ key: CONFIG_KEY, name: 'ci', rpm: 60, max_concurrency: 2 }],
  };
}

const chat = (gw, key, session, maxTokens = 5) => fetchJson(`${gw.url}/v1/chat/completions`, {
  headers: { ...bearer(key), 'x-session-id': session },
  body: { model: MODEL, max_tokens: maxTokens, messages: [{ role: 'user', content: 'Say something.' }] },
  timeoutMs: 20_000,
});
const keysOf = async (gw) => {
  const r = await fetchJson(`${gw.url}/admin/keys`, { headers: bearer(ADMIN) });
  assert.equal(r.status, 200, r.text);
  return { text: r.text, byName: Object.fromEntries(r.body.keys.map((k) => [k.name, k])) };
};

describe('GET /admin/keys', { timeout: 60_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-admin-keys-'));
  after(async () => { await stopAll(); fs.rmSync(dir, { recursive: true, force: true }); });

  test('names, prefixes and limits, today\'s usage, running and seated; the admin key guards it; usage survives a restart', async () => {
    const stateDb = path.join(dir, 'state.db');
    let gw = await startGateway(config(stateDb));
    for (const headers of [{}, bearer('wrong'), bearer(CONFIG_KEY)])
      assert.equal((await fetchJson(`${gw.url}/admin/keys`, { headers })).status, 401, JSON.stringify(headers));

    const created = await runSwitchyard(['keys', '-c', gw.configFile, 'create', 'team',
      '--max-sessions', '2', '--max-concurrency', '3', '--tokens-per-day', '100000', '--models', MODEL]);
    assert.equal(created.code, 0, created.output);
    const team = created.output.match(/^(sy-\S+)$/m)[1];
    await waitUntil(async () => (await chat(gw, team, 'agent-a')).status === 200, { timeoutMs: 3000, what: 'the new key accepted' });

    // Before any more traffic: what a fresh key shows.
    let { text, byName } = await keysOf(gw);
    assert.ok(!text.includes(team) && !text.includes(CONFIG_KEY), 'no key itself in the answer');
    assert.equal(byName.team.source, 'stored');
    assert.equal(byName.team.prefix, team.slice(0, 10), 'the prefix `keys list` shows');
    assert.equal(byName.ci.source, 'config');
    assert.equal(byName.ci.prefix, null, 'a config key shows no characters of itself');
    assert.deepEqual(byName.team.limits, {
      models: [MODEL], rpm: null, tpm: null, tokens_per_day: 100000, max_concurrency: 3, max_sessions: 2,
      session_idle: 300, priority: 0, weight: 1,
    });
    assert.equal(byName.ci.limits.rpm, 60);
    assert.equal(byName.ci.limits.max_concurrency, 2);
    assert.equal(byName.ci.sessions, null, 'no seats without max_sessions');
    assert.equal(byName.ci.today.requests, 0);

    // Two agents of team and one request of ci; their usage is summed per key.
    const answers = [await chat(gw, team, 'agent-b'), await chat(gw, CONFIG_KEY, 'ci-job')];
    for (const a of answers) assert.equal(a.status, 200, a.text);
    ({ byName } = await keysOf(gw));
    assert.equal(byName.team.today.requests, 2);
    assert.equal(byName.team.sessions, 2, 'both agents are seated (idle for 5 min)');
    assert.equal(byName.team.running, 0);
    assert.equal(byName.ci.today.requests, 1);
    const ciUsage = answers[1].body.usage;
    assert.equal(byName.ci.today.prompt_tokens, ciUsage.prompt_tokens);
    assert.equal(byName.ci.today.completion_tokens, ciUsage.completion_tokens);
    assert.equal(byName.ci.today.tokens, ciUsage.prompt_tokens + ciUsage.completion_tokens);

    // A stream in progress counts as running.
    const controller = new AbortController();
    const stream = await postStream(`${gw.url}/v1/chat/completions`,
      { model: MODEL, max_tokens: 2000, ignore_eos: true, stream: true, messages: [{ role: 'user', content: 'a long one' }] },
      { headers: { ...bearer(team), 'x-session-id': 'agent-a' }, signal: controller.signal });
    assert.equal(stream.status, 200);
    await waitUntil(async () => (await keysOf(gw)).byName.team.running === 1, { what: 'team running 1' });
    controller.abort();
    await stream.body?.cancel().catch(() => {});
    await waitUntil(async () => (await keysOf(gw)).byName.team.running === 0, { what: 'team running 0' });
    const before = (await keysOf(gw)).byName;
    assert.equal(before.team.today.requests, 3);

    // A restart reads today's totals back from the ledger.
    const kept = fs.readFileSync(gw.configFile, 'utf8');  // same state_db
    await gw.stop();
    gw = await startGateway(kept);
    ({ byName } = await keysOf(gw));
    assert.deepEqual(byName.team.today, before.team.today, 'team: from the ledger');
    assert.deepEqual(byName.ci.today, before.ci.today, 'ci: from the ledger');
    assert.equal(byName.team.sessions, 0, 'seats are not kept across a restart');
    await gw.stop();
  });
});
