// The box's doors (issue 31), against the real binary: a key store that
// cannot be read stops the gateway at start and, damaged while it runs,
// leaves the keys last read in force; the admin key never reaches the access
// log; a page in the user's browser on another local port cannot drive the
// admin API (headless Chromium, as dashboard.test.mjs), nor can a request
// for another Host (DNS rebinding); /ui is sent with its security headers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

import {
  REPO, expectError, fetchJson, runServe, runSwitchyard, simInstance, startGateway, stopAll, toYaml, waitUntil,
} from './harness.mjs';

const require = createRequire(path.join(REPO, 'tests/client/package.json'));
const puppeteer = require('puppeteer-core');

const TIMEOUT = { timeout: 60_000 };
const MODEL = 'qwen-27b';
const bearer = (key) => ({ authorization: `Bearer ${key}` });
const chat = (url, headers = {}) => fetchJson(`${url}/v1/chat/completions`, {
  headers, body: { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Hi.' }] },
});

// One page of the file overwritten with random bytes, as the issue's `dd`.
function damagePage(file, page) {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, Buffer.from(Array.from({ length: 4096 }, () => Math.floor(Math.random() * 256))), 0, 4096, page * 4096);
  } finally {
    fs.closeSync(fd);
  }
}

describe('the key store fails closed', () => {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-doors-')); });
  after(async () => { await stopAll(); fs.rmSync(dir, { recursive: true, force: true }); });

  const config = (db) => ({
    models: [{ name: MODEL, aliases: ['default'] }],
    instances: [simInstance('gpu0', MODEL, { speedFactor: 50 })],
    state_db: db,
  });

  test('a damaged keys table (header intact) stops the gateway at start: exit 2, the file and SQLite\'s reason', TIMEOUT, async () => {
    const db = path.join(dir, 'fleet.db');
    const file = path.join(dir, 'keys.yaml');
    fs.writeFileSync(file, toYaml(config(db)));
    const created = await runSwitchyard(['keys', '-c', file, 'create', 'alice']);
    assert.equal(created.code, 0, created.output);
    damagePage(db, 3);  // dd if=/dev/urandom of=fleet.db bs=4096 seek=3 count=1 conv=notrunc
    const served = await runServe(config(db));
    assert.equal(served.code, 2, served.output);
    assert.ok(served.output.includes(db), `names the file: ${served.output}`);
    assert.match(served.output, /malformed|not a database|corrupt/i, 'SQLite\'s reason');
    assert.doesNotMatch(served.output, /listening on/, 'never served');
  });

  test('damaged while running: the keys last read stay in force and the gateway says so', TIMEOUT, async () => {
    const db = path.join(dir, 'running.db');
    const gw = await startGateway(config(db));
    const made = await runSwitchyard(['keys', '-c', gw.configFile, 'create', 'bob']);
    assert.equal(made.code, 0, made.output);
    const key = made.output.match(/^(sy-\S+)$/m)[1];
    // In force once a request without it is refused (no stored key, no authentication).
    await waitUntil(async () => (await chat(gw.url)).status === 401, { timeoutMs: 3000, what: 'the key in force' });
    assert.equal((await chat(gw.url, bearer(key))).status, 200);
    damagePage(db, 0);  // the header too: every read fails now
    // A change the watcher must try to read (its version query fails).
    await waitUntil(() => /keys: cannot read .*the keys last read stay in force/.test(gw.output()),
      { timeoutMs: 5000, what: 'the failed read logged' });
    assert.equal((await chat(gw.url, bearer(key))).status, 200, 'the key still works');
    expectError(assert, await chat(gw.url), 401);
    expectError(assert, await chat(gw.url, bearer('nope')), 401);
  });
});

// A page served from another local port, which tries to drive the admin API
// the way the red team did.
function startAttackPage(target) {
  const html = `<!doctype html><title>elsewhere</title><script>
    window.tries = Promise.allSettled([
      fetch('${target}/admin/profile', { method: 'POST', mode: 'no-cors', body: JSON.stringify({ profile: 'b' }) }),
      fetch('${target}/admin/instances/gpu0/drain', { method: 'POST', mode: 'no-cors' }),
      fetch('${target}/admin/profile', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"profile":"b"}' }),
    ]).then(() => 'sent');
  </script>`;
  const server = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(html); });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => { server.close(r); server.closeAllConnections(); }),
  })));
}

// One request with a Host header of our choosing (fetch does not allow it).
function requestWithHost(url, host, { method = 'GET', body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { host, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the admin API is not drivable by a web page', () => {
  let gw, chromium, profileDir;
  before(async () => {
    gw = await startGateway({
      models: [{ name: MODEL, aliases: ['default'] }],
      instances: [simInstance('gpu0', MODEL, { speedFactor: 50 }), simInstance('gpu1', MODEL, { speedFactor: 50 })],
      profiles: { a: ['gpu0'], b: ['gpu1'] },
      switching: { mode: 'manual', drain_timeout: '5s' },
    }, { waitReady: false });  // gpu1 is parked: profile b is not active
    await gw.waitForState('gpu0', 'ready', 20_000);
    profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-chromium-'));
    chromium = await puppeteer.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profileDir}`],
    });
  });
  after(async () => {
    await chromium?.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
    await stopAll();
  });

  test('a page on another local port sends no-cors POSTs to /admin/profile and drain: all refused, nothing changes', TIMEOUT, async () => {
    const attack = await startAttackPage(gw.url);
    try {
      const page = await chromium.newPage();
      await page.goto(attack.url, { waitUntil: 'load' });
      assert.equal(await page.evaluate(() => window.tries), 'sent');
      await page.close();
      await waitUntil(() => (gw.output().match(/POST \/admin\/\S+ status=(403|415) refused before the body/g) ?? []).length >= 3,
        { timeoutMs: 5000, what: 'the three requests refused' });
      assert.doesNotMatch(gw.output(), /POST \/admin\/\S+ model=\S+ instance=\S+ status=200/, 'none served');
      const status = (await fetchJson(`${gw.url}/admin/status`)).body;
      assert.equal(status.active, 'a', 'the profile did not switch');
      assert.notEqual(status.instances.find((i) => i.name === 'gpu0').admin, 'draining', 'gpu0 not drained');
    } finally {
      await attack.close();
    }
  });

  test('Host: evil.example (DNS rebinding) is refused; the listen address and localhost answer', TIMEOUT, async () => {
    const evil = await requestWithHost(`${gw.url}/admin/instances/gpu0/drain`, 'evil.example', { method: 'POST', body: '{}' });
    assert.equal(evil.status, 403, evil.text);
    assert.match(evil.text, /admin_hosts/);
    assert.equal((await requestWithHost(`${gw.url}/admin/status`, 'evil.example')).status, 403);
    assert.equal((await requestWithHost(`${gw.url}/ui`, 'evil.example')).status, 403);
    assert.equal((await requestWithHost(`${gw.url}/admin/status`, `localhost:${new URL(gw.url).port}`)).status, 200);
    assert.equal((await requestWithHost(`${gw.url}/admin/status`, new URL(gw.url).host)).status, 200);
    // The API is not the admin's: another Host is fine there.
    assert.equal((await requestWithHost(`${gw.url}/v1/models`, 'evil.example')).status, 200);
  });

  test('a state change needs JSON: the CLI and scripts send it; text/plain is 415', TIMEOUT, async () => {
    const plain = await fetchJson(`${gw.url}/admin/instances/gpu1/drain`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
    expectError(assert, plain, 415, { messageIncludes: 'application/json' });
    const cli = await runSwitchyard(['admin', '--url', gw.url, 'drain', 'gpu0']);
    assert.equal(cli.code, 0, cli.output);
    const enable = await runSwitchyard(['admin', '--url', gw.url, 'enable', 'gpu0']);
    assert.equal(enable.code, 0, enable.output);
  });

  test('/ui is sent with a CSP, X-Frame-Options: DENY and nosniff', TIMEOUT, async () => {
    for (const p of ['/ui', '/ui/app.js']) {
      const res = await fetchJson(`${gw.url}${p}`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/);
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  });
});

describe('the admin key never reaches the access log', () => {
  after(stopAll);

  test('a login POST sets an HttpOnly, SameSite=Strict cookie that opens the event stream; query values are not logged', TIMEOUT, async () => {
    const gw = await startGateway({
      admin_key: 'adm-never-logged',
      models: [{ name: MODEL, aliases: ['default'] }],
      instances: [simInstance('gpu0', MODEL, { speedFactor: 50 })],
    });
    expectError(assert, await fetchJson(`${gw.url}/admin/login`, { body: {} }), 401);
    const login = await fetchJson(`${gw.url}/admin/login`, { body: {}, headers: bearer('adm-never-logged') });
    assert.equal(login.status, 200, login.text);
    // One cookie for the admin routes, one for llama.cpp router mode's /models/load|unload.
    const [cookie, forModels] = login.headers.getSetCookie();
    assert.match(cookie, /^switchyard_admin=[0-9a-f]{64}; Path=\/admin; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    assert.equal(forModels, cookie.replace('Path=/admin', 'Path=/models'));
    const ticket = cookie.split(';')[0];
    const controller = new AbortController();
    const events = await fetch(`${gw.url}/admin/events`, { headers: { cookie: ticket }, signal: controller.signal });
    assert.equal(events.status, 200);
    controller.abort();
    assert.equal((await fetchJson(`${gw.url}/admin/status`, { headers: { cookie: ticket } })).status, 200);
    assert.equal((await fetchJson(`${gw.url}/admin/status`, { headers: { cookie: 'switchyard_admin=0000' } })).status, 401);
    // Old dashboards and guesses put the key in the URL: refused, and not logged.
    assert.equal((await fetchJson(`${gw.url}/admin/events?key=adm-never-logged`)).status, 401);
    assert.equal((await fetchJson(`${gw.url}/admin/events?key=adm-guess-1`)).status, 401);
    assert.equal((await fetchJson(`${gw.url}/v1/models?key=adm-never-logged&x=1`)).status, 200);
    await waitUntil(() => /GET \/v1\/models\?key=\*&x=\* /.test(gw.output()), { timeoutMs: 3000, what: 'the models request logged' });
    assert.match(gw.output(), /GET \/admin\/events\?key=\* status=401/);
    assert.ok(!gw.output().includes('adm-never-logged'), 'the admin key is nowhere in the log');
    assert.ok(!gw.output().includes('adm-guess-1'), 'nor a guess');
    assert.ok(!gw.output().includes(ticket.split('=')[1]), 'nor the ticket');
  });
});
