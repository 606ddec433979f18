// Profiles: the box switches between two replicas (one per card) and one
// tensor-parallel engine over both cards, on an admin's word, without losing
// a request; a failed start rolls back; the admin API needs its key; and two
// instances that share a GPU are never awake at once (the sims say so).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import os from 'node:os';

import {
  BIN, expectError, fetchJson, metricSum, metricValue, runSwitchyard, sleep, startGateway, stopAll, streamChat, toYaml, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';

function replica(name, gpu) {
  return {
    name, model: MODEL, gpus: [gpu], slots: 4,
    command: `\${SWITCHYARD} sim --port \${PORT} --slots 4 --speed-factor 20 --tokens-per-second 10 --alias ${MODEL} --seed ${gpu + 1}`,
  };
}

function tp2(extra = '') {
  return {
    name: 'tp2', model: MODEL, gpus: [0, 1], slots: 8, sleep: true,
    command: `\${SWITCHYARD} sim --dialect vllm --port \${PORT} --slots 8 --speed-factor 20 --tokens-per-second 10 --alias ${MODEL} ` +
      `--sleep-mode --load-time 4 --wake-time 2${extra}`,
  };
}

function boxConfig(extra = {}) {
  return {
    models: [{ name: MODEL, aliases: ['default'] }],
    instances: [replica('xtx0', 0), replica('xtx1', 1), tp2()],
    profiles: { replicas: ['xtx0', 'xtx1'], tp2: ['tp2'] },
    switching: { mode: 'manual', drain_timeout: '20s', max_hold: '30s' },
    ...extra,
  };
}

// A gateway whose first profile's instances are ready (the others are parked).
async function startBox(config) {
  const gw = await startGateway(config, { waitReady: false });
  const headers = config.admin_key ? { authorization: `Bearer ${config.admin_key}` } : {};
  await waitUntil(async () => {
    const s = (await fetchJson(`${gw.url}/admin/status`, { headers })).body;
    return s?.instances?.filter((i) => i.admin !== 'parked').every((i) => i.state === 'ready');
  }, { timeoutMs: 15_000, what: 'the replicas ready' });
  return gw;
}

const status = async (gw, headers = {}) => (await fetchJson(`${gw.url}/admin/status`, { headers })).body;

// Whether an engine answers at all (a stopped one refuses the connection).
async function answers(url) {
  if (!url) return false;
  try {
    return (await fetchJson(`${url}/health`, { timeoutMs: 1000 })).status > 0;
  } catch {
    return false;
  }
}

async function tp2Awake(url) {
  if (!url) return false;
  try {
    const r = await fetchJson(`${url}/is_sleeping`, { timeoutMs: 1000 });
    return r.status === 200 && r.body?.is_sleeping === false;
  } catch {
    return false;
  }
}

/**
 * Samples the engines' own state until stopped: tp2 awake (its /is_sleeping)
 * while a replica's engine answers on a card it shares is a violation. tp2
 * is read before and after the replicas, and counted only when awake both
 * times, so the order of the reads cannot make a correct switch look wrong.
 */
function watchGpus(gw) {
  let running = true;
  const seen = { samples: 0, violations: [], tp2Awake: 0, replicasUp: 0 };
  const done = (async () => {
    while (running) {
      const inst = (await gw.health()).instances;
      const url = (n) => inst.find((i) => i.name === n)?.url;
      const before = await tp2Awake(url('tp2'));
      const up = await Promise.all(['xtx0', 'xtx1'].map((n) => answers(url(n))));
      const afterwards = await tp2Awake(url('tp2'));
      seen.samples += 1;
      if (before && afterwards) seen.tp2Awake += 1;
      if (up.some(Boolean)) seen.replicasUp += 1;
      if (before && afterwards && up.some(Boolean)) seen.violations.push({ at: Date.now(), up });
      await sleep(20);
    }
  })();
  return { seen, stop: async () => { running = false; await done; return seen; } };
}

function assertAllServed(results, what) {
  const bad = results.filter((r) => r.status !== 200 || !r.done || !r.cleanEnd || r.errorEvent);
  assert.deepEqual(bad.map((r) => ({ status: r.status, error: r.error ?? r.errorEvent, done: r.done })), [], `${what}: every request served in full`);
}

describe('manual switches on a 2-card box', { timeout: 120_000 }, () => {
  after(stopAll);

  test('replicas → tp2 → replicas → tp2 under 16 streams and queued requests: none lost, cards never shared awake',
    async () => {
      const gw = await startBox(boxConfig());
      let s = await status(gw);
      assert.equal(s.active, 'replicas');
      assert.equal(s.state, 'active');
      assert.deepEqual(s.profiles.map((p) => [p.name, p.active]), [['replicas', true], ['tp2', false]]);
      const parked = s.instances.find((i) => i.name === 'tp2');
      assert.equal(parked.admin, 'parked');
      assert.equal(parked.state, 'stopped', 'a profile that is not active is not started');

      const gpus = watchGpus(gw);
      const all = [];
      const load = (n, maxTokens) => Array.from({ length: n }, () => streamChat(gw.url, { model: MODEL, maxTokens }));

      // 16 streams on 8 replica slots: 8 run, 8 queue; then switch.
      const first = load(16, 400);
      await waitUntil(async () => (await status(gw)).queue.find((q) => q.model === MODEL)?.queued > 0,
        { timeoutMs: 10_000, what: 'requests queued before the switch' });
      const toTp2 = fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'tp2' }, timeoutMs: 60_000 });
      await waitUntil(async () => (await status(gw)).state !== 'active', { what: 'the switch under way' });
      // Requests arriving during the switch are held, not refused.
      const during = load(8, 50);
      const switched = await toTp2;
      assert.equal(switched.status, 200, switched.text);
      assert.equal(switched.body.active, 'tp2');
      assert.equal(switched.body.switch.ok, true);
      all.push(...await Promise.all([...first, ...during]));
      assertAllServed(all, 'replicas → tp2');

      s = await status(gw);
      assert.equal(s.active, 'tp2');
      assert.equal(s.last_switch.from, 'replicas');
      assert.equal(s.last_switch.to, 'tp2');
      for (const n of ['xtx0', 'xtx1']) {
        const i = s.instances.find((x) => x.name === n);
        assert.equal(i.admin, 'parked');
        assert.equal(i.state, 'stopped', `${n} was stopped (the stop/start path)`);
      }
      // Served on tp2 now.
      const onTp2 = await Promise.all(load(4, 20));
      assertAllServed(onTp2, 'on tp2');

      // Back: tp2 goes to sleep (the sleep path), the replicas start again.
      const busyBack = load(8, 200);
      await waitUntil(async () => (await status(gw)).instances.find((i) => i.name === 'tp2').in_flight > 0,
        { what: 'streams on tp2' });
      const back = await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'replicas' }, timeoutMs: 60_000 });
      assert.equal(back.status, 200, back.text);
      assertAllServed(await Promise.all(busyBack), 'tp2 → replicas');
      s = await status(gw);
      const slept = s.instances.find((i) => i.name === 'tp2');
      assert.equal(slept.asleep, true, 'tp2 sleeps rather than stops');
      assert.equal(slept.state, 'ready', 'its process is kept');
      const tpUrl = (await gw.health()).instances.find((i) => i.name === 'tp2').url;
      assert.equal((await fetchJson(`${tpUrl}/is_sleeping`)).body.is_sleeping, true, 'the sim itself says it sleeps');

      // And forth again: this time tp2 is woken, not started.
      const pidsBefore = gw.engines().filter((e) => e.name === 'tp2').length;
      const again = await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'tp2' }, timeoutMs: 60_000 });
      assert.equal(again.status, 200, again.text);
      assert.equal(gw.engines().filter((e) => e.name === 'tp2').length, pidsBefore, 'woken, not restarted');
      assert.equal((await fetchJson(`${tpUrl}/is_sleeping`)).body.is_sleeping, false);
      assertAllServed(await Promise.all(load(4, 20)), 'on tp2 after waking');

      const seen = await gpus.stop();
      assert.deepEqual(seen.violations, [], 'tp2 never awake while a replica on its cards runs');
      assert.ok(seen.tp2Awake > 0 && seen.replicasUp > 0, `the watch saw both sides (${JSON.stringify(seen)})`);

      const metrics = (await fetchJson(`${gw.url}/metrics`)).text;
      assert.equal(metricValue(metrics, 'switchyard_profile_active', { profile: 'tp2' }), 1);
      assert.equal(metricValue(metrics, 'switchyard_profile_active', { profile: 'replicas' }), 0);
      assert.equal(metricValue(metrics, 'switchyard_profile_switches_total', { from: 'replicas', to: 'tp2', reason: 'manual' }), 2);
      assert.equal(metricValue(metrics, 'switchyard_profile_switches_total', { from: 'tp2', to: 'replicas', reason: 'manual' }), 1);
      assert.equal(metricValue(metrics, 'switchyard_profile_switch_seconds_count'), 3);
      assert.equal(metricValue(metrics, 'switchyard_instance_admin_state', { instance: 'xtx0', state: 'parked' }), 1);
      assert.equal(metricValue(metrics, 'switchyard_instance_admin_state', { instance: 'tp2', state: 'active' }), 1);
      const log = gw.output();
      for (const phase of ['draining', 'stopping', 'starting', 'warming'])
        assert.match(log, new RegExp(`profile switch replicas -> tp2: ${phase}`));
      assert.match(log, /instance tp2: asleep \(POST \/sleep\?level=1\)/);
      await gw.stop();
    });

  test('prestart: tp2 is loaded and put to sleep before the replicas start; its first switch wakes it', async () => {
    const config = boxConfig();
    config.instances[2].prestart = true;
    const gw = await startGateway(config, { waitReady: false });
    // From the gateway's start: tp2's engine up and not asleep (loading
    // counts: its /is_sleeping answers 503 then) while a replica's engine
    // answers on a card it shares is a violation.
    let watching = true;
    const seen = { samples: 0, violations: [], tp2Asleep: 0, replicasUp: 0 };
    const watch = (async () => {
      while (watching) {
        const inst = (await gw.health().catch(() => undefined))?.instances ?? [];
        const url = (n) => inst.find((i) => i.name === n)?.url;
        const awake = async () => {
          if (!(await answers(url('tp2')))) return false;
          try {
            return (await fetchJson(`${url('tp2')}/is_sleeping`, { timeoutMs: 1000 })).body?.is_sleeping !== true;
          } catch {
            return true;
          }
        };
        const before = await awake();
        const up = await Promise.all(['xtx0', 'xtx1'].map((n) => answers(url(n))));
        const afterwards = await awake();
        seen.samples += 1;
        if (!before && !afterwards && url('tp2') && (await answers(url('tp2')))) seen.tp2Asleep += 1;
        if (up.some(Boolean)) seen.replicasUp += 1;
        if ((before || afterwards) && up.some(Boolean)) seen.violations.push({ at: Date.now(), up, before, afterwards });
        await sleep(20);
      }
    })();
    // Until the watcher has also seen a replica answer: a fast build has them
    // ready between two of its samples.
    await waitUntil(async () => {
      const s = await status(gw);
      const ready = s?.instances?.filter((i) => i.admin !== 'parked').every((i) => i.state === 'ready');
      return ready && seen.replicasUp > 0;
    }, { timeoutMs: 20_000, what: 'the replicas ready and seen answering' });
    watching = false;
    await watch;
    assert.deepEqual(seen.violations, [], 'tp2 never up and awake while a replica runs');
    assert.ok(seen.replicasUp > 0, JSON.stringify(seen));

    let s = await status(gw);
    const tp = s.instances.find((i) => i.name === 'tp2');
    assert.equal(tp.admin, 'parked');
    assert.equal(tp.state, 'ready', 'started at the gateway start');
    assert.equal(tp.asleep, true);
    const tpUrl = (await gw.health()).instances.find((i) => i.name === 'tp2').url;
    assert.equal((await fetchJson(`${tpUrl}/is_sleeping`)).body.is_sleeping, true, 'the sim itself says it sleeps');
    const log = gw.output();
    assert.match(log, /instance tp2: prestart: starting it to sleep before the first profile starts/);
    const asleepAt = log.search(/instance tp2: asleep \(POST \/sleep\?level=1\)/);
    const replicaAt = log.search(/instance xtx[01]: started pid/);
    assert.ok(asleepAt >= 0 && replicaAt > asleepAt, 'the replicas start once tp2 sleeps');

    // The first switch wakes it: no second engine, the same process.
    const engines = gw.engines().filter((e) => e.name === 'tp2').length;
    const to = await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'tp2' }, timeoutMs: 60_000 });
    assert.equal(to.status, 200, to.text);
    assert.equal(gw.engines().filter((e) => e.name === 'tp2').length, engines, 'woken, not started');
    await waitUntil(() => /instance tp2: awake/.test(gw.output()), { what: 'the wake-up logged' });
    assert.equal((await fetchJson(`${tpUrl}/is_sleeping`)).body.is_sleeping, false);
    assertAllServed(await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 10 }))), 'on tp2');
    s = await status(gw);
    assert.equal(s.active, 'tp2');
    await gw.stop();
  });

  test('an instance the operator drained stays drained through a switch and back', async () => {
    const gw = await startBox(boxConfig());
    const drained = await runSwitchyard(['admin', '--url', gw.url, 'drain', 'xtx0']);
    assert.equal(drained.code, 0, drained.output);
    for (const profile of ['tp2', 'replicas']) {
      const res = await fetchJson(`${gw.url}/admin/profile`, { body: { profile }, timeoutMs: 60_000 });
      assert.equal(res.status, 200, res.text);
    }
    const s = await status(gw);
    const xtx0 = s.instances.find((i) => i.name === 'xtx0');
    assert.equal(xtx0.state, 'ready');
    assert.equal(xtx0.admin, 'draining', 'the operator\'s drain outlives the switch');
    assert.equal(xtx0.causes, 'operator');
    assert.equal(s.instances.find((i) => i.name === 'xtx1').admin, 'active');
    // Every request goes to xtx1 until the operator enables xtx0 again.
    const routed = await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 5 })));
    assertAllServed(routed, 'requests with xtx0 drained');
    assert.equal(metricSum(await (await fetch(`${gw.url}/metrics`)).text(), 'switchyard_requests_total', { instance: 'xtx0' }), 0);
    const enabled = await runSwitchyard(['admin', '--url', gw.url, 'enable', 'xtx0']);
    assert.equal(enabled.code, 0, enabled.output);
    assert.equal((await status(gw)).instances.find((i) => i.name === 'xtx0').admin, 'active');
    await gw.stop();
  });

  test('a failed start rolls back to the old profile and says why; requests go on', async () => {
    const config = boxConfig();
    config.instances.push({ name: 'broken', model: MODEL, gpus: [0, 1], command: `\${SWITCHYARD} sim --port \${PORT} --no-such-flag` });
    config.profiles.broken = ['broken'];
    const gw = await startBox(config);
    const during = Array.from({ length: 6 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 50 }));
    const res = await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'broken' }, timeoutMs: 60_000 });
    expectError(assert, res, 503, { code: 'switch_failed', messageIncludes: ['rolled back', "'replicas'", 'broken did not start', 'exited with status'] });
    assertAllServed(await Promise.all(during), 'requests during the failed switch');
    const s = await status(gw);
    assert.equal(s.active, 'replicas');
    assert.equal(s.state, 'active');
    assert.equal(s.last_switch.ok, false);
    assert.match(s.last_switch.error, /broken did not start/);
    for (const n of ['xtx0', 'xtx1']) assert.equal(s.instances.find((i) => i.name === n).admin, 'active');
    assert.equal(s.instances.find((i) => i.name === 'broken').state, 'stopped', 'the failed engine is not left restarting');
    assertAllServed(await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 10 }))), 'after the rollback');
    // The CLI says the same for people.
    const cli = await runSwitchyard(['admin', '--url', gw.url, 'status']);
    assert.equal(cli.code, 0, cli.output);
    assert.match(cli.output, /profile replicas \(active, mode manual\)/);
    assert.match(cli.output, /last switch: replicas -> broken \(manual\) rolled back/);
    await gw.stop();
  });
});

describe('reload with profiles', { timeout: 60_000 }, () => {
  after(stopAll);

  test('a reload that changes a parked instance keeps it parked, and the switch uses the new copy', async () => {
    const config = boxConfig();
    const gw = await startBox(config);
    config.instances[2].command += ' --seed 7';
    const mark = gw.reload(config);
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    const s = await status(gw);
    const tp2 = s.instances.find((i) => i.name === 'tp2');
    assert.equal(tp2.admin, 'parked');
    assert.equal(tp2.state, 'stopped', 'not started beside the replicas on their cards');
    assert.doesNotMatch(gw.output(), /instance tp2: started pid/);
    const res = await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'tp2' }, timeoutMs: 60_000 });
    assert.equal(res.status, 200, res.text);
    assert.match(gw.output().slice(mark), /instance tp2: started pid \d+: .*--seed 7/);
    await gw.stop();
  });
});

describe('admin access', { timeout: 60_000 }, () => {
  after(stopAll);

  test('with admin_key: refused without it or with a wrong one; the CLI passes --key', async () => {
    const gw = await startBox(boxConfig({ admin_key: 'sk-admin-test' }));
    expectError(assert, await fetchJson(`${gw.url}/admin/status`), 401, { messageIncludes: 'admin key is required' });
    expectError(assert, await fetchJson(`${gw.url}/admin/status`, { headers: { authorization: 'Bearer nope' } }), 401);
    expectError(assert, await fetchJson(`${gw.url}/admin/profile`, { body: { profile: 'tp2' } }), 401);
    expectError(assert, await fetchJson(`${gw.url}/admin/instances/xtx0/drain`, { method: 'POST' }), 401);
    const ok = await fetchJson(`${gw.url}/admin/status`, { headers: { authorization: 'Bearer sk-admin-test' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.active, 'replicas');
    const refused = await runSwitchyard(['admin', '--url', gw.url, 'drain', 'xtx0']);
    assert.equal(refused.code, 1);
    assert.match(refused.output, /admin key is required.*\(401\)/);
    const drained = await runSwitchyard(['admin', '--url', gw.url, '--key', 'sk-admin-test', 'drain', 'xtx0']);
    assert.equal(drained.code, 0, drained.output);
    assert.match(drained.output, /instance xtx0: admin draining/);
    assert.equal((await status(gw, { authorization: 'Bearer sk-admin-test' })).instances.find((i) => i.name === 'xtx0').admin, 'draining');
    const enabled = await runSwitchyard(['admin', '--url', gw.url, '--key', 'sk-admin-test', 'enable', 'xtx0']);
    assert.equal(enabled.code, 0, enabled.output);
    // A parked instance is its profile's to start.
    const parked = await fetchJson(`${gw.url}/admin/instances/tp2/enable`, { body: {}, headers: { authorization: 'Bearer sk-admin-test' } });
    expectError(assert, parked, 409, { messageIncludes: 'parked by its profile' });
    await gw.stop();
  });

  test('without admin_key: a client on another address is refused (403)', async (t) => {
    const address = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (!address) {
      t.skip('no non-loopback IPv4 address on this machine');
      return;
    }
    // Listening on that address itself, so the client connects from it.
    const file = `${os.tmpdir()}/switchyard-profiles-${process.pid}.yaml`;
    const cfg = { models: [{ name: MODEL }], instances: [{ name: 'x', model: MODEL, url: 'http://127.0.0.1:9' }], timeouts: { startup: '5s', stop: '1s' } };
    (await import('node:fs')).writeFileSync(file, toYaml(cfg) + '\n');
    const child = spawn(BIN, ['serve', '-c', file, '--listen', `${address}:0`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    try {
      const port = await waitUntil(() => out.match(/listening on http:\/\/[^:]+:(\d+)/)?.[1], { timeoutMs: 10_000, what: 'the gateway listening' });
      const res = await fetchJson(`http://${address}:${port}/admin/status`);
      expectError(assert, res, 403, { messageIncludes: 'loopback clients only' });
    } finally {
      child.kill('SIGKILL');
      (await import('node:fs')).rmSync(file, { force: true });
    }
  });
});

describe('on-demand switching', { timeout: 90_000 }, () => {
  after(stopAll);

  test('a prompt the replicas cannot hold switches to tp2, is served there, and the box goes back when idle', async () => {
    const config = boxConfig();
    config.instances[2].command += ' --max-model-len 32768';
    config.switching = {
      mode: 'on-demand', min_dwell: '0s', idle: '1s', max_hold: '30s', switch_cost: '5s',
      estimates: {
        xtx0: { decode_tps: 200, prefill_tps: 18000, context: 4096 },
        xtx1: { decode_tps: 200, prefill_tps: 18000, context: 4096 },
        tp2: { decode_tps: 200, prefill_tps: 60000, context: 32768 },
      },
    };
    const gw = await startBox(config);
    // ~6000 tokens by the gateway's estimate (4 bytes a token): past a replica's slot.
    const big = 'lorem ipsum dolor sit amet '.repeat(900);
    const res = await fetchJson(`${gw.url}/v1/chat/completions`, {
      body: { model: MODEL, messages: [{ role: 'user', content: big }], max_tokens: 8 }, timeoutMs: 60_000,
    });
    assert.equal(res.status, 200, `${res.text}\n${gw.output()}`);
    assert.match(gw.output(), /profile policy: switching to tp2 \(huge_prompt: a \d+-token prompt does not fit a slot of replicas\): 1 waiting, est\. does not fit replicas vs \d+ s \+ 5 s switch on tp2/);
    const served = (await fetchJson(`${gw.url}/metrics`)).text;
    assert.equal(metricValue(served, 'switchyard_requests_total', { instance: 'tp2', status: '200' }), 1, 'served on tp2');
    assert.equal(metricValue(served, 'switchyard_profile_switches_total', { from: 'replicas', to: 'tp2', reason: 'huge_prompt' }), 1);
    // Nothing more to do: back to the daily profile.
    await waitUntil(async () => {
      const s = await status(gw);
      return s.active === 'replicas' && s.state === 'active' && s.last_switch?.reason === 'idle';
    }, { timeoutMs: 30_000, what: 'back on replicas' });
    const s = await status(gw);
    assert.ok(s.decisions.some((d) => d.startsWith('switching back to replicas (idle)')), JSON.stringify(s.decisions));
    assert.equal(s.instances.find((i) => i.name === 'tp2').asleep, true);
    assertAllServed(await Promise.all(Array.from({ length: 4 }, () => streamChat(gw.url, { model: MODEL, maxTokens: 10 }))), 'back on replicas');
    await gw.stop();
  });
});
