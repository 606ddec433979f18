// The dashboard in a real browser: headless Chromium (Debian's chromium)
// driven by puppeteer-core. The page loads with no console errors, shows the
// demo's four instances, a running request appears live, and killing an
// engine turns its card red within seconds; the profiles panel switches and
// follows the steps; the keys panel shows limits and today's usage; the
// models panel loads and unloads on-demand models. With
// SWITCHYARD_SCREENSHOT=FILE.png it also saves screenshots (FILE.png and
// FILE-profiles.png: docs/dashboard.png and docs/dashboard-profiles.png are
// taken this way).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

import { REPO, fetchJson, postStream, readSse, startGateway, stopAll, waitUntil } from './harness.mjs';

const require = createRequire(path.join(REPO, 'tests/client/package.json'));
const puppeteer = require('puppeteer-core');

const TIMEOUT = { timeout: 60_000 };
// The page's first look at /admin/events, before it has the admin key.
const ASKED_FOR_KEY = /status of 401 \(Unauthorized\)/;
const STEP_ORDER = ['draining', 'stopping', 'starting', 'warming', 'active'];
const DEMO = fs.readFileSync(path.join(REPO, 'examples/sim-demo.yaml'), 'utf8');

async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`],
  });
  return { browser, close: async () => { await browser.close(); fs.rmSync(profile, { recursive: true, force: true }); } };
}

/** A page that records every console error and uncaught exception. */
async function openPage(browser, url) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [];
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('requestfailed', (r) => { if (!r.url().includes('/admin/events')) errors.push(`${r.url()}: ${r.failure()?.errorText}`); });
  await page.goto(url, { waitUntil: 'load' });
  return { page, errors };
}

describe('dashboard', () => {
  let chromium;
  before(async () => { chromium = await launch(); });
  after(async () => { await chromium?.close(); await stopAll(); });

  test('/ui is embedded (no CDN): the page, its script and uPlot come from the gateway', TIMEOUT, async () => {
    const gw = await startGateway(DEMO);
    const page = await fetchJson(`${gw.url}/ui`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    assert.doesNotMatch(page.text, /https?:\/\//, 'nothing loaded from the internet');
    for (const file of ['app.js', 'style.css', 'uPlot.iife.min.js', 'uPlot.min.css']) {
      const res = await fetchJson(`${gw.url}/ui/${file}`);
      assert.equal(res.status, 200, file);
      assert.ok(page.text.includes(`/ui/${file}`), `the page uses ${file}`);
    }
    const uplot = fs.readFileSync(path.join(REPO, 'tests/client/node_modules/uplot/dist/uPlot.iife.min.js'), 'utf8');
    assert.equal((await fetchJson(`${gw.url}/ui/uPlot.iife.min.js`)).text, uplot);
    assert.equal((await fetchJson(`${gw.url}/ui/nothing.js`)).status, 404);
    await gw.stop();
  });

  test('four instances, a running request live, a killed engine\'s card red', TIMEOUT, async () => {
    const gw = await startGateway(DEMO);
    const { page, errors } = await openPage(chromium.browser, `${gw.url}/ui`);
    await page.waitForFunction(() => document.querySelectorAll('.card[data-instance]').length === 4, { timeout: 10_000 });
    const names = await page.$$eval('.card[data-instance]', (cards) => cards.map((c) => c.dataset.instance).sort());
    assert.deepEqual(names, ['gpu0', 'gpu1', 'gpu2', 'gpu3']);
    assert.equal(await page.$$eval('.card.bad', (c) => c.length), 0);

    // A long stream (65 tok/s in the demo) appears among the running requests.
    const stream = await postStream(`${gw.url}/v1/chat/completions`,
      { model: 'qwen-27b', max_tokens: 100, ignore_eos: true, messages: [{ role: 'user', content: 'tell me a story' }] },
      { headers: { 'x-request-id': 'dashboard-live-1' } });
    assert.equal(stream.status, 200);
    const reading = readSse(stream);
    await page.waitForSelector('#running tr[data-id="dashboard-live-1"]', { timeout: 5000 });
    await page.waitForFunction(() => [...document.querySelectorAll('.card[data-instance]')]
      .some((c) => c.querySelector('.slots span.busy')), { timeout: 5000 });
    const { events } = await reading;
    assert.ok(events.length > 10);
    await page.waitForSelector('#recent tr[data-id="dashboard-live-1"].ok', { timeout: 5000 });

    if (process.env.SWITCHYARD_SCREENSHOT) {
      const streams = [0, 1, 2].map((i) => postStream(`${gw.url}/v1/chat/completions`,
        { model: 'qwen-27b', max_tokens: 400, ignore_eos: true, messages: [{ role: 'user', content: `story ${i}` }] }));
      await waitUntil(async () => (await page.$$eval('#running tr', (r) => r.length)) >= 3, { timeoutMs: 5000, what: 'three running' });
      await page.waitForFunction(() => document.querySelector('#summary').textContent.match(/[1-9][\d.]* tok\/s/), { timeout: 15_000 });
      gw.killEngine('gpu3');
      await page.waitForSelector('.card[data-instance="gpu3"].bad', { timeout: 5000 });
      await page.screenshot({ path: process.env.SWITCHYARD_SCREENSHOT, fullPage: true });
      for (const s of await Promise.all(streams)) await s.body?.cancel().catch(() => {});
    }

    const restarts = (name) => page.$eval(`.card[data-instance="${name}"] dd[data-field="restarts"]`, (d) => d.textContent);
    assert.equal(await restarts('gpu2'), '0');
    gw.killEngine('gpu2');
    await page.waitForSelector('.card[data-instance="gpu2"].bad', { timeout: 5000 });
    const state = await page.$eval('.card[data-instance="gpu2"]', (c) => c.dataset.state);
    assert.notEqual(state, 'ready');
    // The supervisor restarts it, and the card counts it.
    await page.waitForFunction(() => document.querySelector('.card[data-instance="gpu2"] dd[data-field="restarts"]').textContent === '1', { timeout: 10_000 });
    assert.equal(await restarts('gpu1'), '0');
    assert.deepEqual(errors, [], 'no console errors');
    await page.close();
    await gw.stop();
  });

  test('profiles: the button switches, the panel follows the steps, the sims agree', { timeout: 90_000 }, async () => {
    const sim = (extra) => `\${SWITCHYARD} sim --port \${PORT} --speed-factor 20 --alias qwen-27b ${extra}`;
    const gw = await startGateway({
      admin_key: 'sk-admin-profiles',
      models: [{ name: 'qwen-27b', aliases: ['default'] }],
      instances: [
        { name: 'xtx0', model: 'qwen-27b', gpus: [0], slots: 1, command: sim('--slots 1 --seed 1') },
        { name: 'xtx1', model: 'qwen-27b', gpus: [1], slots: 1, command: sim('--slots 1 --seed 2') },
        // 40 s at 20x: a start of 2 s, long enough to be seen as a step.
        { name: 'tp2', model: 'qwen-27b', gpus: [0, 1], slots: 4, sleep: true,
          command: sim('--dialect vllm --slots 4 --sleep-mode --load-time 40 --wake-time 20 --seed 3') },
      ],
      profiles: { replicas: ['xtx0', 'xtx1'], tp2: ['tp2'] },
      switching: { mode: 'manual', drain_timeout: '20s' },
    }, { waitReady: false });
    const admin = { authorization: 'Bearer sk-admin-profiles' };
    const status = async () => (await fetchJson(`${gw.url}/admin/status`, { headers: admin })).body;
    await waitUntil(async () => (await status()).instances.filter((i) => i.admin !== 'parked').every((i) => i.state === 'ready'),
      { timeoutMs: 15_000, what: 'the replicas ready' });

    const { page, errors } = await openPage(chromium.browser, `${gw.url}/ui`);
    await page.waitForSelector('#key-prompt:not([hidden])', { timeout: 5000 });
    await page.type('#key-input', 'sk-admin-profiles');
    await page.click('#key-form button');
    await page.waitForSelector('#profiles .card[data-profile="replicas"][data-active="true"]', { timeout: 10_000 });
    assert.equal(await page.$eval('#profiles-section', (e) => e.hidden), false);
    assert.match(await page.$eval('#switch-state', (e) => e.textContent), /Active: replicas/);
    assert.match(await page.$eval('#last-switch', (e) => e.textContent), /No switch yet/);
    // Every step the panel marks as the current one, as it happens.
    await page.evaluate(() => {
      window.seenSteps = [];
      new MutationObserver(() => {
        const step = document.querySelector('#switch-steps li.current')?.dataset.step;
        if (step && window.seenSteps.at(-1) !== step) window.seenSteps.push(step);
      }).observe(document.querySelector('#switch-steps'), { childList: true, subtree: true });
    });

    await page.click('#profiles button[data-switch="tp2"]');
    if (process.env.SWITCHYARD_SCREENSHOT) {
      // docs/dashboard-profiles.png: the switch at its start step.
      await page.waitForSelector('#switch-steps li.current[data-step="starting"]', { timeout: 10_000 });
      const section = await page.$('#profiles-section');
      await section.screenshot({ path: process.env.SWITCHYARD_SCREENSHOT.replace(/\.png$/, '-profiles.png') });
    }
    await page.waitForSelector('#profiles .card[data-profile="tp2"][data-active="true"]', { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('#switch-state').dataset.state === 'active', { timeout: 10_000 });
    assert.match(await page.$eval('#switch-state', (e) => e.textContent), /Active: tp2/);
    await page.waitForFunction(() => /replicas → tp2, manual/.test(document.querySelector('#last-switch').textContent), { timeout: 5000 });
    assert.match(await page.$eval('#last-switch', (e) => e.textContent), /starting \d/);
    const steps = await page.evaluate(() => window.seenSteps);
    assert.ok(steps.includes('starting'), `the panel showed the start as it ran (${steps})`);
    assert.deepEqual(steps, STEP_ORDER.filter((x) => steps.includes(x)), 'steps shown in order');
    // Switching back is offered.
    await page.waitForSelector('#profiles button[data-switch="replicas"]:not([disabled])', { timeout: 5000 });

    // The gateway and the engines themselves agree: tp2 runs and answers,
    // the replicas' engines are stopped.
    const s = await status();
    assert.equal(s.active, 'tp2');
    assert.equal(s.last_switch.ok, true);
    const urls = Object.fromEntries((await gw.health()).instances.map((i) => [i.name, i.url]));
    assert.equal((await fetchJson(`${urls.tp2}/is_sleeping`)).body.is_sleeping, false, 'the tp2 sim is awake');
    for (const name of ['xtx0', 'xtx1'])
      await assert.rejects(fetchJson(`${urls[name]}/health`, { timeoutMs: 1000 }), `${name}'s sim is stopped`);
    const cards = await page.$$eval('.card[data-instance]', (c) => Object.fromEntries(c.map((x) => [x.dataset.instance, x.querySelector('dl').textContent])));
    assert.match(cards.xtx0, /adminparked/);
    assert.match(cards.tp2, /adminactive/);
    assert.deepEqual(errors.filter((e) => !ASKED_FOR_KEY.test(e)), [], 'no console errors');
    await page.close();
    await gw.stop();
  });

  test('keys: limits, today\'s usage, seats and running; requests show their key and session', TIMEOUT, async () => {
    const gw = await startGateway({
      admin_key: 'sk-admin-keys',
      health_detail: 'public',  // the harness waits for the instances on /health
      api_keys: [{ key: 'sk-team-0123456789abcdef', name: 'team', max_sessions: 2, max_concurrency: 3, tokens_per_day: 50000, rpm: 100 },
        { key: 'sk-other-0123456789abcdef', name: 'other' }],
      models: [{ name: 'qwen-27b', aliases: ['default'] }],
      // 30 tok/s: a 100-token stream runs for seconds, seen across ticks.
      instances: [{ name: 'gpu0', model: 'qwen-27b', slots: 2, command: '${SWITCHYARD} sim --port ${PORT} --slots 2 --tokens-per-second 30 --alias qwen-27b' }],
    });
    const { page, errors } = await openPage(chromium.browser, `${gw.url}/ui`);
    await page.waitForSelector('#key-prompt:not([hidden])', { timeout: 5000 });
    await page.type('#key-input', 'sk-admin-keys');
    await page.click('#key-form button');
    await page.waitForSelector('#key-rows tr[data-key="team"]', { timeout: 10_000 });
    const row = (name) => page.$eval(`#key-rows tr[data-key="${name}"]`, (tr) =>
      Object.fromEntries([...tr.children].map((td) => [td.className, td.textContent])));
    let team = await row('team');
    assert.equal(team.requests, '0');
    assert.equal(team.sessions, '0 / 2');
    assert.equal(team.running, '0 / 3');
    assert.match(team.limits, /100 rpm · 50.0k tokens\/day/);
    assert.equal(team.prefix, 'config', 'a config key shows where it comes from, none of its characters');
    assert.equal((await row('other')).sessions, '—', 'no seats without max_sessions');
    const html = await page.content();
    assert.ok(!html.includes('sk-team-0123456789abcdef'), 'the page never holds a key');

    // A streaming request of team with its agent session: the running row
    // and then the finished one show the key and the session; the panel
    // counts it running, then its usage.
    const stream = await postStream(`${gw.url}/v1/chat/completions`,
      { model: 'qwen-27b', max_tokens: 100, ignore_eos: true, stream: true, messages: [{ role: 'user', content: 'hello' }] },
      { headers: { authorization: 'Bearer sk-team-0123456789abcdef', 'x-session-id': 'agent-7', 'x-request-id': 'keyed-1' } });
    assert.equal(stream.status, 200);
    const reading = readSse(stream);
    await page.waitForSelector('#running tr[data-id="keyed-1"]', { timeout: 5000 });
    assert.equal(await page.$eval('#running tr[data-id="keyed-1"] td.key', (td) => td.textContent), 'team');
    assert.equal(await page.$eval('#running tr[data-id="keyed-1"] td.session', (td) => td.textContent), 'agent-7');
    await page.waitForFunction(() => document.querySelector('#key-rows tr[data-key="team"] td.running').textContent === '1 / 3', { timeout: 5000 });
    await reading;
    await page.waitForSelector('#recent tr[data-id="keyed-1"].ok', { timeout: 5000 });
    assert.equal(await page.$eval('#recent tr[data-id="keyed-1"] td.session', (td) => td.textContent), 'agent-7');
    await page.waitForFunction(() => document.querySelector('#key-rows tr[data-key="team"] td.requests').textContent === '1', { timeout: 5000 });
    team = await row('team');
    assert.equal(team.running, '0 / 3');
    assert.equal(team.sessions, '1 / 2', 'the agent keeps its seat while idle');
    const api = (await fetchJson(`${gw.url}/admin/keys`, { headers: { authorization: 'Bearer sk-admin-keys' } })).body;
    const tokens = api.keys.find((k) => k.name === 'team').today.tokens;
    assert.ok(tokens > 100, `prompt + 100 completion tokens counted (${tokens})`);
    assert.equal(team.tokens, `${tokens} / 50.0k`, 'the page shows what /admin/keys says');
    assert.deepEqual(errors.filter((e) => !ASKED_FOR_KEY.test(e)), [], 'no console errors');
    await page.close();
    await gw.stop();
  });

  test('models on the cards: states, memory per card, load and unload from the page, errors shown', TIMEOUT, async () => {
    // Two on-demand models of 16 GiB on one 24 GiB card: one fits at a time.
    const onDemand = (name, model) => ({
      name, model, gpus: [0], memory: '16GiB', load: 'on-demand', slots: 2,
      command: `\${SWITCHYARD} sim --port \${PORT} --slots 2 --load-time 1 --alias ${model}`,
    });
    const gw = await startGateway({
      admin_key: 'sk-admin-models',
      gpus: [{ id: 0, memory: '24GiB' }],
      models: [{ name: 'A' }, { name: 'B' }],
      instances: [onDemand('a', 'A'), onDemand('b', 'B')],
      swapping: { max_wait: '20s', min_resident: '0s' },
      switching: { drain_timeout: '20s', switch_cost: '2s' },
    }, { waitReady: false });
    const { page, errors } = await openPage(chromium.browser, `${gw.url}/ui`);
    await page.waitForSelector('#key-prompt:not([hidden])', { timeout: 5000 });
    await page.type('#key-input', 'sk-admin-models');
    await page.click('#key-form button');
    await page.waitForFunction(() => document.querySelectorAll('#residency tr[data-model]').length === 2, { timeout: 10_000 });
    const row = (m) => page.$eval(`#residency tr[data-model="${m}"]`, (r) => ({
      state: r.dataset.state, memory: r.querySelector('.memory').textContent, button: r.querySelector('button').textContent,
    }));
    const waitState = (m, state) => page.waitForFunction((mm, ss) =>
      document.querySelector(`#residency tr[data-model="${mm}"]`)?.dataset.state === ss, { timeout: 15_000 }, m, state);
    const gpuUse = () => page.$eval('#gpu-use', (e) => e.textContent);
    assert.deepEqual(await row('A'), { state: 'unloaded', memory: 'a: GPU 0 16.0 GiB', button: 'load' });
    assert.equal((await row('B')).state, 'unloaded');
    assert.equal(await gpuUse(), 'GPU 0: 0.0 GiB of 24.0 GiB in use');

    await page.click('#residency tr[data-model="A"] button');
    await waitState('A', 'loaded');
    await page.waitForFunction(() => document.querySelector('#gpu-use').textContent === 'GPU 0: 16.0 GiB of 24.0 GiB in use', { timeout: 5000 });
    assert.equal((await row('A')).button, 'unload');

    await page.click('#residency tr[data-model="B"] button');  // room is made: A goes
    await waitState('B', 'loaded');
    assert.equal((await row('A')).state, 'unloaded');
    await page.click('#residency tr[data-model="B"] button');
    await waitState('B', 'unloaded');
    await page.waitForFunction(() => document.querySelector('#gpu-use').textContent.startsWith('GPU 0: 0.0 GiB'), { timeout: 5000 });

    // What the gateway refuses is said on the page (A is not loaded).
    await page.evaluate(() => modelRequest('unload', 'A'));
    assert.match(await page.$eval('#model-error', (e) => e.textContent), /^unload A: .*'A'/);
    assert.deepEqual(errors.filter((e) => !ASKED_FOR_KEY.test(e) && !/status of 400/.test(e)), [], 'no console errors');
    await page.close();
    await gw.stop();
  });

  test('with admin_key the page asks for the key once and keeps it for the session', TIMEOUT, async () => {
    const gw = await startGateway({
      admin_key: 'sk-admin-test',
      models: [{ name: 'qwen-27b', aliases: ['default'] }],
      instances: [{ name: 'gpu0', model: 'qwen-27b', command: '${SWITCHYARD} sim --port ${PORT} --slots 1 --alias qwen-27b' }],
    });
    assert.equal((await fetchJson(`${gw.url}/admin/events`)).status, 401);
    assert.equal((await fetchJson(`${gw.url}/admin/events?key=wrong`)).status, 401);
    const { page } = await openPage(chromium.browser, `${gw.url}/ui`);
    await page.waitForSelector('#key-prompt:not([hidden])', { timeout: 5000 });
    await page.type('#key-input', 'sk-admin-test');
    await page.click('#key-form button');
    await page.waitForSelector('.card[data-instance="gpu0"]', { timeout: 10_000 });
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('.card[data-instance="gpu0"]', { timeout: 10_000 });
    assert.equal(await page.$eval('#key-prompt', (e) => e.hidden), true, 'not asked again');
    await page.close();
    await gw.stop();
  });
});
