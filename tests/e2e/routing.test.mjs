// Cache-aware routing against simulated llama-servers: sessions stick (the
// sims' own cached-token counts say so), a hot prefix spills at the load
// bound instead of piling onto one engine, and a session whose engine died
// moves once and stays where it moved; a long first turn waits for an
// instance to finish its light turn instead of holding it to a token per
// chunk of its prompt; and the simulated llama-server keeps
// a prompt evicted from its slot in RAM (--cache-ram), as the real one does.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  fetchJson, metricValue, postStream, queueDepth, readSse, scrapeMetric, simFleet, startGateway, startSim, stopAll,
  waitForQueueDepth, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 60_000 };

// A long, distinct opening per session, as an agent's system prompt and tools.
const opening = (tag) => `${tag}: ${'You are a careful agent. Tools: read, write, run. '.repeat(12)}`;

function chat(url, messages, { session, maxTokens = 8 } = {}) {
  return fetchJson(`${url}/v1/chat/completions`, {
    body: { model: MODEL, messages, max_tokens: maxTokens },
    headers: session ? { 'x-session-id': session } : {},
  });
}

// {instance, match} from X-Switchyard-Route.
function route(res) {
  const value = res.headers.get('x-switchyard-route') ?? '';
  const instance = /instance=([^;]+)/.exec(value)?.[1];
  const match = /match=([0-9.]+)/.exec(value)?.[1];
  return { instance, match: match === undefined ? undefined : Number(match) };
}

const cachedShare = (res) => res.body.usage.prompt_tokens_details.cached_tokens / res.body.usage.prompt_tokens;

// One agent turn: the history so far plus a new user message; the answer is
// appended to the history.
async function turn(url, session, history, n) {
  history.push({ role: 'user', content: `turn ${n}: ${'look at the next file please. '.repeat(2)}` });
  const res = await chat(url, history, { session });
  assert.equal(res.status, 200, res.text);
  history.push({ role: 'assistant', content: res.body.choices[0].message.content });
  return res;
}

describe('routing: session', () => {
  after(stopAll);

  test('each session sticks to one instance, and that instance has its prefix cached', TIMEOUT, async () => {
    // Slow enough that the first turns overlap: each cold session then
    // finds the others' instances busy and takes an idle one.
    const gw = await startGateway({ ...simFleet({ count: 4, model: MODEL, slots: 2, speedFactor: 5, extraArgs: ['--ctx-size', 65536] }), routing: 'session' });
    const sessions = ['s0', 's1', 's2', 's3'].map((s) => ({ id: s, history: [{ role: 'system', content: opening(s) }], seen: [] }));
    for (let n = 1; n <= 4; ++n) {
      const answers = await Promise.all(sessions.map((s) => turn(gw.url, s.id, s.history, n)));
      answers.forEach((res, i) => {
        sessions[i].seen.push(route(res).instance);
        if (n >= 2) {
          // The engine itself reports the reuse (llama-server's cache_n).
          assert.ok(res.body.timings.cache_n > 0, `${sessions[i].id} turn ${n}: cache_n ${res.body.timings.cache_n}`);
          assert.ok(cachedShare(res) >= 0.8, `${sessions[i].id} turn ${n}: ${cachedShare(res)} cached`);
        }
      });
    }
    for (const s of sessions) assert.equal(new Set(s.seen).size, 1, `${s.id} went to ${s.seen}`);
    // Four sessions, four instances: one home each.
    assert.equal(new Set(sessions.map((s) => s.seen[0])).size, 4);
    const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.equal(metricValue(metrics, 'switchyard_route_decisions_total', { policy: 'session', reason: 'hit' }), 12);
    assert.equal(metricValue(metrics, 'switchyard_route_decisions_total', { policy: 'session', reason: 'cold' }), 4);
    await gw.stop();
  });

  test('sessions that start one after another each get a home of their own', TIMEOUT, async () => {
    // Each first turn ends before the next begins: every instance is idle
    // at each choice, and only the homes they hold tell them apart.
    const gw = await startGateway({ ...simFleet({ count: 4, model: MODEL, slots: 2, speedFactor: 50, extraArgs: ['--ctx-size', 65536] }), routing: 'session' });
    const homes = [];
    for (const s of ['p', 'q', 'r', 's', 't', 'u', 'v', 'w']) {
      const res = await turn(gw.url, s, [{ role: 'system', content: opening(s) }], 1);
      homes.push(route(res).instance);
    }
    const per = {};
    for (const h of homes) per[h] = (per[h] ?? 0) + 1;
    assert.deepEqual(Object.values(per).sort(), [2, 2, 2, 2], JSON.stringify(per));
    await gw.stop();
  });

  test('a session whose instance is killed moves once and sticks to its new home', TIMEOUT, async () => {
    // Slow enough that the first turns overlap: each cold session then
    // finds the others' instances busy and takes an idle one.
    const gw = await startGateway({ ...simFleet({ count: 4, model: MODEL, slots: 2, speedFactor: 5, extraArgs: ['--ctx-size', 65536] }), routing: 'session' });
    const sessions = ['a', 'b', 'c', 'd'].map((s) => ({ id: s, history: [{ role: 'system', content: opening(s) }] }));
    const homes = {};
    const first = await Promise.all(sessions.map((s) => turn(gw.url, s.id, s.history, 1)));
    sessions.forEach((s, i) => { homes[s.id] = route(first[i]).instance; });
    const victim = homes.a;
    gw.killEngine(victim);
    await waitUntil(async () => (await gw.instance(victim))?.state !== 'ready', { timeoutMs: 10_000, what: `${victim} noticed down` });

    const moved = route(await turn(gw.url, 'a', sessions[0].history, 2)).instance;
    assert.notEqual(moved, victim);
    // Cold sessions go to the fastest idle instance, so another session may
    // share the victim: it moves too; the rest stay home.
    const homeless = sessions.filter((s) => homes[s.id] === victim).length;
    for (const s of sessions.slice(1)) {
      const now = route(await turn(gw.url, s.id, s.history, 2)).instance;
      if (homes[s.id] === victim) assert.notEqual(now, victim);
      else assert.equal(now, homes[s.id]);
    }
    // Back up (restarted by the gateway): the moved session stays where it went.
    await gw.waitForState(victim, 'ready', 20_000);
    for (let n = 3; n <= 4; ++n) {
      const res = await turn(gw.url, 'a', sessions[0].history, n);
      assert.equal(route(res).instance, moved);
      assert.ok(cachedShare(res) >= 0.8, `turn ${n} on the new home: ${cachedShare(res)} cached`);
    }
    assert.equal(await scrapeMetric(gw.url, 'switchyard_route_decisions_total', { policy: 'session', reason: 'session-moved' }), homeless);
    assert.match(gw.output(), /session moved from instance/);
    await gw.stop();
  });
});

describe('routing: a long prefill does not hold up what runs', () => {
  after(stopAll);

  test('a 10K-token first turn waits for an instance to finish its light turn, which is kept for it', TIMEOUT, async () => {
    // Light turns answer at 20 tok/s for minutes; prompts evaluate at once.
    const gw = await startGateway({
      ...simFleet({ count: 2, model: MODEL, slots: 2, speedFactor: 1, tokensPerSecond: 20,
        extraArgs: ['--ctx-size', 65536, '--prefill-tokens-per-second', 1_000_000] }),
      routing: { policy: 'session', home_wait: '30s' },
    });
    // A light turn answering on each instance, each with a free slot beside it.
    const lights = {};
    for (const s of ['a', 'b']) {
      const leave = new AbortController();
      const res = await postStream(`${gw.url}/v1/chat/completions`,
        { model: MODEL, messages: [{ role: 'user', content: `${s}: hello` }], max_tokens: 5000, ignore_eos: true },
        { headers: { 'x-session-id': s }, signal: leave.signal });
      assert.equal(res.status, 200);
      await readSse(res, { onEvent: () => false });  // its first token went out
      lights[route(res).instance] = leave;
    }
    assert.equal(Object.keys(lights).length, 2, 'one light turn on each instance');

    // Beside either, the heavy prompt would hold that turn to a token per
    // chunk of it: it waits instead.
    const heavy = fetchJson(`${gw.url}/v1/chat/completions`, {
      body: { model: MODEL, messages: [{ role: 'user', content: 'word '.repeat(10_000) }], max_tokens: 1 },
      headers: { 'x-session-id': 'heavy' }, timeoutMs: 30_000,
    });
    await waitForQueueDepth(gw.url, MODEL, 1);
    // A light request meanwhile goes past it, not to the instance kept for it.
    const light = await chat(gw.url, [{ role: 'user', content: 'c: hello' }], { session: 'c', maxTokens: 2 });
    assert.equal(light.status, 200, light.text);
    const other = route(light).instance;
    const kept = Object.keys(lights).find((name) => name !== other);
    assert.equal(await queueDepth(gw.url, MODEL), 1, 'the heavy request still waits');

    // The kept instance's light turn ends: the heavy request goes there.
    lights[kept].abort();
    const res = await heavy;
    assert.equal(res.status, 200, res.text);
    assert.equal(route(res).instance, kept);
    lights[other].abort();
    await gw.stop();
  });
});

describe('routing: prefix-affinity', () => {
  after(stopAll);

  test('a hot prefix spills at the load bound instead of piling onto one instance', TIMEOUT, async () => {
    // Eight slots each: without the bound the home would take eight of the
    // sixteen at once.
    const gw = await startGateway({
      ...simFleet({ count: 4, model: MODEL, slots: 8, speedFactor: 5, extraArgs: ['--ctx-size', 65536] }),
      routing: { policy: 'prefix-affinity', balance_factor: 1.25 },
    });
    const hot = [{ role: 'system', content: opening('hot') }];
    const warm = await chat(gw.url, [...hot, { role: 'user', content: 'first' }]);
    assert.equal(warm.status, 200, warm.text);
    const home = route(warm).instance;
    // Long answers so that all sixteen overlap.
    const burst = await Promise.all(Array.from({ length: 16 }, (_, i) =>
      chat(gw.url, [...hot, { role: 'user', content: `question ${i}` }], { maxTokens: 200 })));
    const per = {};
    for (const res of burst) {
      assert.equal(res.status, 200, res.text);
      per[route(res).instance] = (per[route(res).instance] ?? 0) + 1;
    }
    // Mean 4 per instance: none beyond ceil(1.25 × 4) + 1 = 6.
    assert.ok(Math.max(...Object.values(per)) <= 6, JSON.stringify(per));
    assert.ok(Object.keys(per).length >= 3, JSON.stringify(per));
    assert.ok(per[home] >= 1, `the prefix's home served some: ${JSON.stringify(per)}`);
    const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.ok(metricValue(metrics, 'switchyard_route_decisions_total', { policy: 'prefix-affinity', reason: 'bounded-out' }) > 0);
    assert.ok(metricValue(metrics, 'switchyard_route_prefix_match_ratio_count') >= 17);
    await gw.stop();
  });

  test('the prompt goes where its prefix is, and route_header: false hides the route', TIMEOUT, async () => {
    const gw = await startGateway({
      ...simFleet({ count: 3, model: MODEL, slots: 1, speedFactor: 50, extraArgs: ['--ctx-size', 65536] }),
      routing: { policy: 'prefix-affinity' },
    });
    const convs = ['x', 'y', 'z'].map((t) => [{ role: 'system', content: opening(t) }]);
    const first = [];
    for (const c of convs) first.push(route(await chat(gw.url, [...c, { role: 'user', content: 'one' }])).instance);
    for (const [i, c] of convs.entries()) {
      const res = await chat(gw.url, [...c, { role: 'user', content: 'two' }]);
      const r = route(res);
      assert.equal(r.instance, first[i]);
      assert.ok(r.match > 0.8, `match ${r.match}`);
    }
    await gw.stop();

    const hidden = await startGateway({
      ...simFleet({ count: 1, model: MODEL }),
      routing: { policy: 'prefix-affinity', route_header: false },
    });
    const res = await chat(hidden.url, [{ role: 'user', content: 'hi' }]);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-switchyard-route'), null);
    await hidden.stop();
  });
});

describe('sim: the host-memory prompt cache', () => {
  after(stopAll);

  // One slot: session b's prompt takes it from session a, whose next turn
  // then finds its prompt in RAM (llama-server's --cache-ram), or nowhere.
  for (const [cacheRam, restored] of [['8192', true], ['0', false]]) {
    test(`a prompt evicted by another session is ${restored ? '' : 'not '}restored with --cache-ram ${cacheRam}`, TIMEOUT, async () => {
      const sim = await startSim({ slots: 1, speedFactor: 50, alias: MODEL }, ['--cache-ram', cacheRam]);
      const complete = async (messages) => {
        const res = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { model: MODEL, messages, max_tokens: 4 } });
        assert.equal(res.status, 200, res.text);
        return res.body;
      };
      const a = [{ role: 'system', content: opening('a') }, { role: 'user', content: 'first' }];
      await complete(a);
      const b = await complete([{ role: 'system', content: opening('b') }, { role: 'user', content: 'first' }]);
      assert.ok(b.timings.cache_n < 0.2 * b.usage.prompt_tokens, `b: cache_n ${b.timings.cache_n}`);
      const again = await complete([...a, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'second' }]);
      if (restored) assert.ok(again.timings.cache_n > 0.5 * again.usage.prompt_tokens, `a again: cache_n ${again.timings.cache_n}`);
      else assert.ok(again.timings.cache_n < 0.2 * again.usage.prompt_tokens, `a again: cache_n ${again.timings.cache_n}`);
    });
  }
});
