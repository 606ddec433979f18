// Hostile input and process faults (issue 12): request smuggling and broken
// chunked bodies over raw sockets, the connection cap and a low descriptor
// limit, sockets that engines must not inherit, zombies, and a gateway
// killed with SIGKILL. Every refusal must be an answer (OpenAI error body),
// never a silent close or a hang.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import {
  BIN, USER_MESSAGES, fetchJson, parseRawResponse, rawConnect, runningInGroup, simInstance, startGateway, startSim,
  stopAll, toYaml, waitUntil, within,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 30_000 };
after(stopAll);

const CHAT = JSON.stringify({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 });

/** A gateway over one sim it does not supervise (quick to start). */
async function gatewayOverSim(extra = {}) {
  const sim = await startSim({ slots: 4, speedFactor: 50, alias: MODEL });
  const gw = await startGateway({ models: [{ name: MODEL, aliases: [] }], instances: [{ name: 's', model: MODEL, url: sim.url }], ...extra });
  return { sim, gw };
}

/**
 * Sends `payload` on a fresh connection and waits for the server to close it.
 * Returns the received text, the responses in it, and the first one parsed.
 */
async function sendRaw(port, payload) {
  const conn = await rawConnect(port);
  await conn.write(payload);
  const closed = await within(conn.closed.then(() => true), 10_000);
  conn.destroy();
  const text = conn.text();
  return { text, closed: Boolean(closed), statuses: [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1])), first: parseRawResponse(text) };
}

/** Asserts exactly one response, an OpenAI error with `status`, then a close. */
function expectOneErrorThenClose(r, status, what) {
  assert.ok(r.closed, `${what}: the connection is closed (received ${JSON.stringify(r.text)})`);
  assert.deepEqual(r.statuses, [status], `${what}: one ${status} response, nothing after it: ${JSON.stringify(r.text)}`);
  assert.ok(r.first.json?.error?.message, `${what}: an OpenAI error body: ${r.first.body}`);
  // HTTP/1.0 closes by default: no header needed.
  if (r.text.startsWith('HTTP/1.1')) assert.equal(r.first.headers.connection, 'close', `${what}: Connection: close`);
  assert.ok(!r.text.includes('switchyard_'), `${what}: no /metrics text`);
}

describe('request smuggling (RFC 9112 framing)', () => {
  let gw;
  afterEach(stopAll);

  const smuggled = 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n';
  const post = (headers, body) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n${body}`;

  test('an unknown or non-final coding, or TE with Content-Length: refused, closed, the smuggled GET never runs', TIMEOUT, async () => {
    ({ gw } = await gatewayOverSim());
    const cases = [
      ['xchunked without Content-Length', post('Transfer-Encoding: xchunked\r\n', smuggled), 501],
      ['xchunked with Content-Length', post(`Transfer-Encoding: xchunked\r\nContent-Length: ${smuggled.length}\r\n`, smuggled), 400],
      ['Content-Length then chunked', post('Content-Length: 4\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${smuggled}`), 400],
      ['chunked then Content-Length', post('Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${smuggled}`), 400],
      ['gzip, chunked (undecoded)', post('Transfer-Encoding: gzip, chunked\r\n', `${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\n\r\n${smuggled}`), 501],
      ['chunked, identity (chunked not final)', post('Transfer-Encoding: chunked, identity\r\n', `0\r\n\r\n${smuggled}`), 400],
      ['chunked twice', post('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${smuggled}`), 400],
      ['HTTP/1.0 with chunked', post('Transfer-Encoding: chunked\r\n', `0\r\n\r\n${smuggled}`).replace('HTTP/1.1', 'HTTP/1.0'), 400],
    ];
    for (const [what, payload, status] of cases) expectOneErrorThenClose(await sendRaw(gw.port, payload), status, what);
    // The gateway logged no /metrics request and still serves.
    assert.ok(!/GET \/metrics/.test(gw.output()), `no smuggled request in the log:\n${gw.output()}`);
    const ok = await fetchJson(`${gw.url}/v1/chat/completions`, { body: CHAT });
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('malformed chunked request bodies', () => {
  afterEach(stopAll);

  test('bad sizes, overflow, a size shorter than its data, chunked;q=1: 400 with an OpenAI body, then close', TIMEOUT, async () => {
    const { gw } = await gatewayOverSim();
    const head = (te = 'chunked') => `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n`;
    const cases = [
      ['size zz', `${head()}zz\r\n${CHAT}\r\n0\r\n\r\n`],
      ['size -1', `${head()}-1\r\n${CHAT}\r\n0\r\n\r\n`],
      ['size overflows 64 bits', `${head()}100000000000000000\r\n${CHAT}\r\n0\r\n\r\n`],
      ['size shorter than the data', `${head()}3\r\n${CHAT}\r\n0\r\n\r\n`],
      ['chunked;q=1', `${head('chunked;q=1')}${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\n\r\n`],
    ];
    for (const [what, payload] of cases) expectOneErrorThenClose(await sendRaw(gw.port, payload), 400, what);
    // A well-formed chunked body still works.
    const good = await sendRaw(gw.port, `${head()}`.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n') +
      `${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\n\r\n`);
    assert.deepEqual(good.statuses, [200], good.text);
  });
});

describe('a chunked body a byte at a time', () => {
  afterEach(stopAll);

  // Beast 1.81 asserts in debug builds (this ASan build) when the final
  // chunk comes in pieces under 5 bytes: the gateway must not abort on it.
  test('the last chunk and trailer sent byte by byte: answered, and the gateway serves on', TIMEOUT, async () => {
    const { gw } = await gatewayOverSim();
    const conn = await rawConnect(gw.port);
    conn.socket.setNoDelay(true);
    await conn.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${CHAT.length.toString(16)}\r\n${CHAT}`);
    // Pacing the client's bytes so that each arrives in a read of its own.
    for (const byte of '\r\n0\r\nX-Trailer: y\r\n\r\n') {
      await conn.write(byte);
      await new Promise((r) => setTimeout(r, 5));
    }
    await conn.waitFor(/HTTP\/1\.1 200 /, 10_000);
    conn.destroy();
    const ok = await fetchJson(`${gw.url}/v1/chat/completions`, { body: CHAT });
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('the connection cap', () => {
  afterEach(stopAll);

  test('over max_connections: a prompt 503 with an OpenAI body, logged once; served again once below', TIMEOUT, async () => {
    const { gw } = await gatewayOverSim({ max_connections: 4 });
    assert.match(gw.output(), /at most 4 client connection\(s\)/);
    // Eight connections each ask for /v1/models and stay open (keep-alive).
    // This process's fetch may hold a pooled connection too, so at most
    // four are served and the rest refused.
    const conns = [];
    for (let i = 0; i < 8; ++i) {
      const c = await rawConnect(gw.port);
      await c.write('GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
      await c.waitFor(/HTTP\/1\.1 (200|503) [\s\S]*\r\n\r\n\{/);
      conns.push(c);
    }
    const refused = conns.filter((c) => c.text().startsWith('HTTP/1.1 503'));
    const served = conns.filter((c) => c.text().startsWith('HTTP/1.1 200'));
    assert.ok(served.length >= 1 && served.length <= 4, `1 to 4 served, got ${served.length}`);
    assert.equal(refused.length + served.length, 8);
    for (const c of refused) {
      await within(c.closed, 5000);
      const r = parseRawResponse(c.text());
      assert.equal(r.json?.error?.type, 'server_error', r.body);
      assert.match(r.json.error.message, /connection limit/);
      assert.equal(r.headers['retry-after'], '1');
      assert.equal(r.headers.connection, 'close');
    }
    const warnings = gw.output().match(/new connections get 503/g) ?? [];
    assert.equal(warnings.length, 1, `one log line for the episode:\n${gw.output()}`);
    for (const c of conns) c.destroy();
    await waitUntil(() => /below max_connections again; \d+ connection\(s\) were refused/.test(gw.output()),
      { what: 'the end of the episode logged' });
    const ok = await fetchJson(`${gw.url}/health`);
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('probes at the connection cap', () => {
  afterEach(stopAll);

  test('at max_connections /health and /metrics are still answered; other paths get 503', TIMEOUT, async () => {
    const { gw } = await gatewayOverSim({ max_connections: 4 });
    // Kept-alive connections until one is refused: the cap is reached, and
    // a path other than the probes' is refused there.
    const held = [];
    while (!held.some((c) => c.text().startsWith('HTTP/1.1 503'))) {
      assert.ok(held.length < 10, 'the cap is reached within 10 connections');
      const c = await rawConnect(gw.port);
      await c.write('GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
      await c.waitFor(/HTTP\/1\.1 (200|503) [\s\S]*\r\n\r\n\{/);
      held.push(c);
    }
    // 45 probes, as the red team sent: every one answered 200.
    for (let i = 0; i < 45; ++i) {
      const path = i % 3 === 2 ? '/metrics' : '/health';
      const c = await rawConnect(gw.port);
      await c.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      await within(c.closed, 5000);
      const r = parseRawResponse(c.text());
      assert.equal(r.status, 200, `probe ${i} (${path}): ${c.text().slice(0, 300)}`);
      c.destroy();
    }
    for (const c of held) c.destroy();
  });
});

describe('a body cut short by a half-close', () => {
  afterEach(stopAll);

  test('fewer bytes than Content-Length, then a half-close: a prompt 400 naming the count, never a hang', TIMEOUT, async () => {
    const { gw } = await gatewayOverSim();
    const c = await rawConnect(gw.port);
    await c.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`);
    const t0 = Date.now();
    c.socket.end();  // the write side only: the client still reads
    assert.ok(await within(c.closed.then(() => true), 5000), `closed promptly; received ${JSON.stringify(c.text())}`);
    assert.ok(Date.now() - t0 < 3000, `answered in ${Date.now() - t0} ms`);
    const r = parseRawResponse(c.text());
    assert.equal(r.status, 400, c.text());
    assert.match(r.json.error.message, /ended after 9 of its 100 bytes/);
    c.destroy();
    const ok = await fetchJson(`${gw.url}/health`);
    assert.equal(ok.status, 200, 'the gateway serves on');
  });
});

describe('a low descriptor limit', () => {
  const spawned = [];
  after(() => { for (const p of spawned) p.kill('SIGKILL'); });

  /** `switchyard serve` under prlimit; resolves {proc, port, output()} once listening. */
  async function serveUnderLimit(nofile, config) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-hostile-'));
    const file = path.join(dir, 'fleet.yaml');
    fs.writeFileSync(file, `${toYaml(config)}\n`);
    const proc = spawn('prlimit', [`--nofile=${nofile}`, BIN, 'serve', '-c', file, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.push(proc);
    let text = '';
    proc.stdout.on('data', (d) => { text += d; });
    proc.stderr.on('data', (d) => { text += d; });
    proc.on('close', () => fs.rmSync(dir, { recursive: true, force: true }));
    const port = await waitUntil(() => text.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/)?.[1], { timeoutMs: 15_000, what: `the gateway listening:\n${text}` });
    return { proc, port: Number(port), output: () => text };
  }

  test('the soft limit is raised to the hard one', TIMEOUT, async () => {
    const sim = await startSim({ alias: MODEL });
    const gw = await serveUnderLimit('256:4096', { instances: [{ name: 's', model: MODEL, url: sim.url }] });
    assert.match(gw.output(), /descriptor limit 4096; at most \d+ client connection\(s\) \(derived from it\)/);
    gw.proc.kill('SIGTERM');
  });

  test('past the derived cap every connection gets an answer, none hangs, and serving goes on', TIMEOUT, async () => {
    const sim = await startSim({ alias: MODEL, slots: 4 });
    // 200 descriptors: (200 - 64 - 34) / 2 = 51 connections.
    const gw = await serveUnderLimit('200:200', { instances: [{ name: 's', model: MODEL, url: sim.url, slots: 4 }] });
    assert.match(gw.output(), /descriptor limit 200; at most 51 client connection\(s\)/);
    await waitUntil(async () => (await fetchJson(`http://127.0.0.1:${gw.port}/health`)).body?.instances?.[0]?.state === 'ready', { what: 'ready' });
    // Opened together: a probe in the reserve that sends nothing for 2 s is
    // closed unanswered, and 80 connections one after another can take that
    // long on a loaded machine.
    const held = await Promise.all(Array.from({ length: 80 }, () => rawConnect(gw.port)));
    // Past the cap's 51 and the reserve of 8 for probes, connections get 503
    // as they are accepted, before they send anything. Waiting for those
    // first means the gateway has taken all 80: a probe answered in the
    // reserve frees its place, so a connection accepted later would be served.
    const refusedAtOnce = () => held.filter((c) => /^HTTP\/1\.1 503 /.test(c.text())).length;
    await waitUntil(() => refusedAtOnce() >= 21, { what: '21 connections refused before they sent anything' });
    // The others ask for /health: the cap's (less any connection this
    // process's fetch keeps) and the reserve's are served.
    const asking = held.filter((c) => c.text() === '');
    await Promise.all(asking.map((c) => c.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n')));
    await Promise.all(held.map((c) => c.waitFor(/HTTP\/1\.1 (200|503) [\s\S]*\r\n\r\n\{/, 10_000)));
    const statuses = held.map((c) => Number(c.text().match(/HTTP\/1\.1 (\d{3})/)[1]));
    const served = statuses.filter((s) => s === 200).length;
    assert.ok(served >= 50, `the cap and the reserve served: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 503).length, 80 - served, `statuses: ${statuses}`);
    assert.ok((gw.output().match(/accept failed/g) ?? []).length <= 1, `accept failures logged at most once:\n${gw.output()}`);
    for (const c of held) c.destroy();
    await waitUntil(async () => (await fetchJson(`http://127.0.0.1:${gw.port}/health`)).status === 200, { what: 'serving again' });
    const chat = await fetchJson(`http://127.0.0.1:${gw.port}/v1/chat/completions`, { body: CHAT });
    assert.equal(chat.status, 200, chat.text);
    gw.proc.kill('SIGTERM');
  });
});

// ---------------------------------------------------------------------------
// Processes

/** "socket:[inode]" targets of the descriptors of `pid`. */
function socketInodes(pid) {
  const found = new Set();
  let entries = [];
  try { entries = fs.readdirSync(`/proc/${pid}/fd`); } catch { return found; }
  for (const fd of entries) {
    try {
      const m = fs.readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
      if (m) found.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  return found;
}

/** Children of `pid` that are zombies, from /proc. */
function zombieChildren(pid) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try { stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8'); } catch { continue; }
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === pid && state === 'Z') found.push(Number(entry));
  }
  return found;
}

/** Waits for `name`'s (n+1)-th "started pid" line and for it to be ready again. */
async function waitForRestart(gw, name, count) {
  await waitUntil(() => gw.engines().filter((e) => e.name === name).length > count, { timeoutMs: 10_000, what: `${name} restarted` });
  await gw.waitForState(name, 'ready');
}

describe('engines and the gateway\'s descriptors', () => {
  afterEach(stopAll);

  test('a restarted engine holds none of the gateway\'s sockets (listening or client)', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL, aliases: [] }], instances: [simInstance('gpu0', MODEL)] });
    const client = await rawConnect(gw.port);  // open while the engine restarts
    gw.killEngine('gpu0');
    await waitForRestart(gw, 'gpu0', 1);
    const engine = gw.engines().at(-1).pid;
    const gatewaySockets = socketInodes(gw.proc.child.pid);
    assert.ok(gatewaySockets.size >= 2, 'the gateway has its listening and client sockets');
    const shared = [...socketInodes(engine)].filter((i) => gatewaySockets.has(i));
    assert.deepEqual(shared, [], `engine ${engine} shares no socket with the gateway`);
    // Without shell syntax the command is exec'd directly: the logged pid is the engine.
    assert.equal(fs.readlinkSync(`/proc/${engine}/exe`), fs.realpathSync(BIN));
    client.destroy();
  });

  test('after kill -9 of the gateway its port is free at once and the engines exit', TIMEOUT, async () => {
    const gw = await startGateway({ models: [{ name: MODEL, aliases: [] }], instances: [simInstance('gpu0', MODEL), simInstance('gpu1', MODEL)] });
    const engines = gw.engines().map((e) => e.pid);
    gw.proc.child.kill('SIGKILL');
    await gw.proc.exited;
    const squatter = net.createServer();
    await new Promise((resolve, reject) => { squatter.once('error', reject); squatter.listen(gw.port, '127.0.0.1', resolve); });
    await new Promise((resolve) => squatter.close(resolve));
    await waitUntil(() => engines.every((pid) => runningInGroup(pid).length === 0), { what: 'the engines gone (SIGTERM on parent death)' });
  });
});

describe('zombies', () => {
  afterEach(stopAll);

  test('killing an engine\'s shell wrapper, or the engine, 3 times each leaves no <defunct> child', { timeout: 60_000 }, async () => {
    // `|| exit 1` is shell syntax: this one runs under /bin/sh, the wrapper.
    const wrapped = simInstance('wrapped', MODEL);
    wrapped.command += ' || exit 1';
    const gw = await startGateway({ models: [{ name: MODEL, aliases: [] }], instances: [wrapped, simInstance('direct', MODEL)],
      health: { interval: '30s', backoff: '100ms', backoff_max: '200ms' } });
    const gatewayPid = gw.proc.child.pid;
    for (let round = 0; round < 3; ++round) {
      const shell = gw.engines().filter((e) => e.name === 'wrapped').at(-1).pid;
      process.kill(shell, 'SIGKILL');  // the wrapper only: its engine is orphaned
      process.kill(gw.engines().filter((e) => e.name === 'direct').at(-1).pid, 'SIGKILL');
      await waitForRestart(gw, 'wrapped', round + 1);
      await waitForRestart(gw, 'direct', round + 1);
      await waitUntil(() => runningInGroup(shell).length === 0, { what: 'the orphaned engine gone' });
      await waitUntil(() => zombieChildren(gatewayPid).length === 0,
        { what: `no zombie children of the gateway (round ${round + 1})`, timeoutMs: 5000 });
    }
  });
});
