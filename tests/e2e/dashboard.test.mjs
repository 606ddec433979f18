// The dashboard in a real browser: headless Chromium (Debian's chromium)
// driven by puppeteer-core. The page loads with no console errors, shows the
// demo's four instances, a running request appears live, and killing an
// engine turns its card red within seconds. With SWITCHYARD_SCREENSHOT=FILE
// it also saves a screenshot (docs/dashboard.png is taken this way).
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

    gw.killEngine('gpu2');
    await page.waitForSelector('.card[data-instance="gpu2"].bad', { timeout: 5000 });
    const state = await page.$eval('.card[data-instance="gpu2"]', (c) => c.dataset.state);
    assert.notEqual(state, 'ready');
    assert.deepEqual(errors, [], 'no console errors');
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
