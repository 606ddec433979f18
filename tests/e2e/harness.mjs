// Shared machinery for the end-to-end and client tests: start `switchyard sim`
// and `switchyard serve` as real processes on loopback, talk to them over
// HTTP (fetch, SSE, raw sockets), and make sure nothing outlives the tests.
//
// Every process started here is tracked; call `after(stopAll)` in each test
// file, and an exit hook kills whatever is left if a file dies early.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.resolve(process.env.SWITCHYARD_BIN ?? path.join(REPO, 'build/switchyard'));
export const SHARED = path.resolve(REPO, '../shared');

// A start-up that takes longer than this is a failure, not a slow machine.
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`'s value, or null if it takes longer than `ms` (the timer never outlives the wait). */
export async function within(promise, ms) {
  let timer;
  const expired = new Promise((resolve) => { timer = setTimeout(resolve, ms, null); });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` until it returns a truthy value; throws `what` after `timeoutMs`. */
export async function waitUntil(probe, { timeoutMs = 5000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`);
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------
// Processes

// Every Proc still to clean up: until it exits, or for a gateway until its
// stop() has also killed its engines' process groups.
const live = new Set();

class Proc {
  constructor(command, args) {
    this.name = `${path.basename(command)} ${args[0]}`;
    this.args = args;
    this.child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.chunks = [];
    this.listeners = new Set();
    const collect = (data) => {
      this.chunks.push(data.toString());
      for (const l of this.listeners) l();
    };
    this.child.stdout.on('data', collect);
    this.child.stderr.on('data', collect);
    this.exited = new Promise((resolve) => {
      this.child.on('error', (e) => {
        this.chunks.push(`[spawn error: ${e.message}]`);
        resolve({ code: null, signal: null });
      });
      this.child.on('close', (code, signal) => resolve({ code, signal }));
    }).then((status) => {
      this.status = status;
      if (!this.engineGroups) live.delete(this);
      for (const l of this.listeners) l();
      return status;
    });
    live.add(this);
  }

  output() {
    return this.chunks.join('');
  }

  /**
   * Resolves with the first match of `regex` in the output from offset `from`
   * on; rejects on exit or timeout.
   */
  waitForOutput(regex, timeoutMs = START_TIMEOUT_MS, from = 0) {
    return new Promise((resolve, reject) => {
      const done = (fn, value) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        fn(value);
      };
      const check = () => {
        const m = this.output().slice(from).match(regex);
        if (m) return done(resolve, m);
        if (this.status)
          done(reject, new Error(`${this.name} exited (${JSON.stringify(this.status)}) ` +
                                 `before printing ${regex}; output:\n${this.output()}`));
      };
      const timer = setTimeout(() => done(reject, new Error(
        `${this.name} did not print ${regex} within ${timeoutMs} ms; output:\n${this.output()}`)), timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited within `timeoutMs`. Returns the exit status. */
  async stop(timeoutMs = STOP_TIMEOUT_MS) {
    if (this.status) return this.status;
    this.child.kill('SIGTERM');
    const status = await within(this.exited, timeoutMs);
    if (status) return status;
    this.child.kill('SIGKILL');
    return this.exited;
  }
}

/** Runs `switchyard args...` to completion (bounded); resolves {code, signal, output}. */
export async function runSwitchyard(args, { timeoutMs = 10_000 } = {}) {
  const p = new Proc(BIN, args);
  const status = await within(p.exited, timeoutMs);
  if (!status) {
    await p.stop(1000);
    throw new Error(`switchyard ${args.join(' ')} did not exit within ${timeoutMs} ms; output:\n${p.output()}`);
  }
  return { ...status, output: p.output() };
}

// The engines a gateway says it started ("instance X: started pid N"); each
// leads its own process group, which cleanup kills whatever the gateway did.
function enginePids(output) {
  return [...output.matchAll(/instance (\S+): started pid (\d+)/g)].map((m) => ({ name: m[1], pid: Number(m[2]) }));
}

/**
 * The processes of a process group that are still running (not zombies), from
 * /proc: a zombie is dead, just not yet reaped by its parent.
 */
export function runningInGroup(pgid) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try { stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8'); } catch { continue; }
    // "pid (comm) state ppid pgrp ...": comm may contain spaces and parens.
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') found.push({ pid: Number(entry), ppid: Number(ppid), state });
  }
  return found;
}

function killGroups(pids) {
  for (const pid of pids) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

/** Stops every process this harness started and still runs. For `after` hooks. */
export async function stopAll() {
  await Promise.all([...live].map((p) => (p.handle ? p.handle.stop() : p.stop())));
}

// Last resort when a test file exits with processes still running (a crash,
// a timeout): synchronous, so it works from 'exit'.
process.on('exit', () => {
  for (const p of live) {
    try { p.child.kill('SIGKILL'); } catch { /* gone */ }
    if (p.engineGroups) killGroups(p.engineGroups());
  }
});

// ---------------------------------------------------------------------------
// sim

/**
 * Starts `switchyard sim` on a free loopback port. Options map to flags:
 * {slots, tokensPerSecond, prefillTokensPerSecond, speedFactor, seed, alias, ctxSize};
 * `extraArgs` are appended as they are (e.g. ['--reset-after-tokens', '3']).
 */
export async function startSim(opts = {}, extraArgs = []) {
  const flags = {
    slots: '--slots', tokensPerSecond: '--tokens-per-second', prefillTokensPerSecond: '--prefill-tokens-per-second',
    speedFactor: '--speed-factor', seed: '--seed', alias: '--alias', ctxSize: '--ctx-size',
  };
  const args = ['sim', '--host', '127.0.0.1', '--port', '0'];
  for (const [key, value] of Object.entries(opts)) {
    if (!flags[key]) throw new Error(`startSim: unknown option ${key}`);
    args.push(flags[key], String(value));
  }
  args.push(...extraArgs.map(String));
  return startListening(new Proc(BIN, args));
}

/** The path of fake-engine.mjs, for `command:` instances: node <FAKE_ENGINE> --port ${PORT}. */
export const FAKE_ENGINE = fileURLToPath(new URL('./fake-engine.mjs', import.meta.url));

/** Starts fake-engine.mjs (a recording OpenAI-shaped engine); `seen()` lists the POSTs it got. */
export async function startFakeEngine({ ignoreSigterm = false } = {}) {
  const args = [FAKE_ENGINE, '--port', '0', ...(ignoreSigterm ? ['--ignore-sigterm'] : [])];
  const handle = await startListening(new Proc(process.execPath, args));
  handle.seen = async () => (await fetchJson(`${handle.url}/_seen`)).body;
  return handle;
}

// Waits for a server process's "listening on 127.0.0.1:PORT" line.
async function startListening(proc) {
  try {
    const [, port] = await proc.waitForOutput(/listening on 127\.0\.0\.1:(\d+)/);
    const handle = { url: `http://127.0.0.1:${port}`, port: Number(port), proc, output: () => proc.output(), stop: () => proc.stop() };
    proc.handle = handle;
    return handle;
  } catch (e) {
    await proc.stop(1000);
    throw e;
  }
}

// ---------------------------------------------------------------------------
// gateway

/** A minimal YAML writer for config objects: mappings, lists, scalars (JSON-quoted strings). */
export function toYaml(value, indent = '') {
  const scalar = (v) => (typeof v === 'string' ? JSON.stringify(v) : String(v));
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return value.map((item) => {
      if (item !== null && typeof item === 'object') {
        const body = toYaml(item, indent + '  ');
        return `${indent}- ${body.slice(indent.length + 2)}`;
      }
      return `${indent}- ${scalar(item)}`;
    }).join('\n');
  }
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).map(([k, v]) => {
      if (v !== null && typeof v === 'object' && !(Array.isArray(v) && v.length === 0))
        return `${indent}${k}:\n${toYaml(v, indent + '  ')}`;
      return `${indent}${k}: ${Array.isArray(v) ? '[]' : scalar(v)}`;
    }).join('\n');
  }
  return scalar(value);
}

/**
 * A config `instances` entry for a sim the gateway supervises. `extraArgs`
 * are appended to its command as they are, for the fault flags
 * (e.g. ['--reset-after-tokens', 5]): a supervised engine gets its flags
 * only through `command`.
 */
export function simInstance(name, model, { slots = 1, speedFactor = 20, tokensPerSecond, seed, alias = model, declareSlots = true, extraArgs = [] } = {}) {
  let command = `\${SWITCHYARD} sim --port \${PORT} --slots ${slots} --speed-factor ${speedFactor} --alias ${alias}`;
  if (tokensPerSecond) command += ` --tokens-per-second ${tokensPerSecond}`;
  if (seed !== undefined) command += ` --seed ${seed}`;
  if (extraArgs.length > 0) command += ` ${extraArgs.map(String).join(' ')}`;
  const inst = { name, model, command };
  if (declareSlots) inst.slots = slots;
  return inst;
}

/** A fleet of `count` supervised sims serving one model (with aliases). */
export function simFleet({ count = 1, model = 'qwen-27b', aliases = ['default'], ...simOpts } = {}) {
  return {
    models: [{ name: model, aliases }],
    instances: Array.from({ length: count }, (_, i) => simInstance(`gpu${i}`, model, { seed: i + 1, ...simOpts })),
  };
}

// Defaults that keep a failing test from hanging the suite: a broken engine
// fails start-up in seconds, and a shutdown never waits long.
const TEST_TIMEOUTS = { startup: '15s', drain: '5s', stop: '2s' };

// The text of a config file: YAML text as is, an object as YAML with the test
// timeouts merged in.
function configText(config) {
  return typeof config === 'string' ? config
    : toYaml({ ...config, timeouts: { ...TEST_TIMEOUTS, ...(config.timeouts ?? {}) } }) + '\n';
}

function writeConfig(config) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-e2e-'));
  const file = path.join(dir, 'fleet.yaml');
  fs.writeFileSync(file, configText(config));
  return { dir, file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs `switchyard serve` with `config` to its exit, for start-up failures.
 * Resolves {code, signal, output, file}.
 */
export async function runServe(config, { listen = '127.0.0.1:0', timeoutMs = 10_000 } = {}) {
  const cfg = writeConfig(config);
  try {
    return { ...(await runSwitchyard(['serve', '-c', cfg.file, '--listen', listen], { timeoutMs })), file: cfg.file };
  } finally {
    cfg.remove();
  }
}

/**
 * Starts `switchyard serve` with `config` (an object, written as YAML with test
 * timeouts merged in, or YAML text used as is) on a free loopback port. With
 * `waitReady` (default) it also waits until every instance is ready.
 */
export async function startGateway(config, { waitReady = true } = {}) {
  const cfg = writeConfig(config);
  const proc = new Proc(BIN, ['serve', '-c', cfg.file, '--listen', '127.0.0.1:0']);
  proc.engineGroups = () => enginePids(proc.output()).map((e) => e.pid);
  // With API keys, /health shows the instances only to a key.
  const first = typeof config === 'object' ? config.api_keys?.[0] : undefined;
  const key = typeof first === 'object' ? first?.key : first;
  const healthHeaders = key ? { authorization: `Bearer ${key}` } : {};
  const handle = {
    proc,
    configFile: cfg.file,
    output: () => proc.output(),
    /** [{name, pid}] of the engines the gateway started (pid = process group leader). */
    engines: () => enginePids(proc.output()),
    health: async () => (await fetchJson(`${handle.url}/health`, { headers: healthHeaders })).body,
    /** The /health entry of instance `name` (undefined when it is not listed). */
    instance: async (name) => (await handle.health()).instances.find((i) => i.name === name),
    /** Waits until instance `name` reports `state` in /health; returns its entry. */
    waitForState: (name, state, timeoutMs = 10_000) => waitUntil(async () => {
      const inst = await handle.instance(name);
      return inst?.state === state && inst;
    }, { timeoutMs, intervalMs: 50, what: `instance ${name} ${state}` })
      .catch((e) => { throw new Error(`${e.message}\ngateway output:\n${proc.output()}`); }),
    /**
     * Signals the process group of `name`'s current engine (the last "started
     * pid" line). The logged pid is the /bin/sh the gateway ran, with the
     * engine as its child; the shell leads a process group both are in, so
     * signalling the group reaches the engine whatever the shell did.
     * Returns that pid (the group id).
     */
    killEngine: (name, signal = 'SIGKILL') => {
      const engine = enginePids(proc.output()).filter((e) => e.name === name).at(-1);
      if (!engine) throw new Error(`no 'started pid' line for ${name} in:\n${proc.output()}`);
      process.kill(-engine.pid, signal);
      return engine.pid;
    },
    /**
     * Rewrites the config file (same merging as at start) and sends SIGHUP,
     * as an operator would. Resolves with the output offset before the
     * signal, so callers can look only at what the reload logged.
     */
    reload: (config) => {
      fs.writeFileSync(cfg.file, configText(config));
      const mark = proc.output().length;
      proc.child.kill('SIGHUP');
      return mark;
    },
    /**
     * SIGTERM (SIGKILL after a bound), then SIGKILL to the engines' process
     * groups: whatever the gateway failed to stop must not outlive the test.
     */
    stop: async (timeoutMs = STOP_TIMEOUT_MS) => {
      const status = await proc.stop(timeoutMs);
      killGroups(proc.engineGroups());
      live.delete(proc);
      cfg.remove();
      return status;
    },
  };
  proc.handle = handle;
  try {
    const [, port] = await proc.waitForOutput(/switchyard gateway listening on http:\/\/127\.0\.0\.1:(\d+)/);
    handle.port = Number(port);
    handle.url = `http://127.0.0.1:${port}`;
    if (waitReady) {
      await waitUntil(async () => {
        const h = await handle.health();
        return h?.instances?.length > 0 && h.instances.every((i) => i.state === 'ready');
      }, { timeoutMs: START_TIMEOUT_MS, intervalMs: 100, what: 'every instance ready' })
        .catch((e) => { throw new Error(`${e.message}\ngateway output:\n${proc.output()}`); });
    }
    return handle;
  } catch (e) {
    await handle.stop(2000);
    throw e;
  }
}

// ---------------------------------------------------------------------------
// HTTP helpers

/**
 * fetch with a JSON body (objects are serialised); resolves {status, headers, text, body}.
 * `signal` aborts it early (a client that leaves); `timeoutMs` always bounds it.
 */
export async function fetchJson(url, { method, body, headers = {}, timeoutMs = 10_000, signal } = {}) {
  const bound = AbortSignal.timeout(timeoutMs);
  const init = { method: method ?? (body === undefined ? 'GET' : 'POST'), headers: { ...headers }, signal: signal ? AbortSignal.any([bound, signal]) : bound };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    init.headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed = null;
  try { parsed = JSON.parse(text); } catch { /* not JSON: callers look at text */ }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/**
 * Reads a text/event-stream response to its end. Returns {raw, events} where
 * each event is {data, json, at}: `json` is the parsed data (undefined for
 * [DONE]) and `at` the ms since `t0` when the event arrived.
 */
export async function readSse(res, { t0 = Date.now(), onEvent } = {}) {
  const decoder = new TextDecoder();
  let raw = '';
  let pending = '';
  const events = [];
  // A reader rather than `for await`: leaving a `for await` early cancels the
  // body (closing the connection), and a test that stops reading may want
  // the stream to stay open.
  const reader = res.body.getReader();
  for (;;) {
    const { value: piece, done } = await reader.read();
    if (done) break;
    const text = decoder.decode(piece, { stream: true });
    raw += text;
    pending += text;
    let end;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      const event = { data, json: data === '[DONE]' ? undefined : JSON.parse(data), at: Date.now() - t0 };
      events.push(event);
      if (onEvent && (await onEvent(event, events)) === false) {
        reader.releaseLock();
        return { raw, events, stopped: true };
      }
    }
  }
  return { raw, events, rest: pending };
}

/** POSTs a streaming request and returns the fetch Response (status checked by the caller). */
export function postStream(url, body, { headers = {}, signal } = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ stream: true, ...body }),
    signal: signal ?? AbortSignal.timeout(30_000),
  });
}

/**
 * The value of one Prometheus series: `name` with at least the given label
 * values. Returns undefined when no series matches.
 */
export function metricValue(text, name, labels = {}) {
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([^{\s]+)(?:\{(.*)\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === String(v))) return Number(m[3]);
  }
  return undefined;
}

/** The sum of every series of `name` with at least the given label values (0 when none). */
export function metricSum(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([^{\s]+)(?:\{(.*)\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === String(v))) sum += Number(m[3]);
  }
  return sum;
}

export async function scrapeMetric(baseUrl, name, labels = {}) {
  const res = await fetchJson(`${baseUrl}/metrics`);
  return metricValue(res.text, name, labels);
}

/** The gateway's queue depth for `model` (0 before the series exists). */
export async function queueDepth(baseUrl, model) {
  return (await scrapeMetric(baseUrl, 'switchyard_queue_depth', { model })) ?? 0;
}

/** Waits until `model`'s queue holds exactly `depth` requests. */
export function waitForQueueDepth(baseUrl, model, depth, timeoutMs = 5000) {
  return waitUntil(async () => (await queueDepth(baseUrl, model)) === depth,
    { timeoutMs, what: `queue depth ${depth} for ${model}` });
}

/**
 * A raw TCP connection for what fetch cannot do (lying Content-Length,
 * Expect: 100-continue, stalling mid-headers). `text()` is everything
 * received; `closed` resolves when the server closes the connection.
 */
export function rawConnect(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let received = '';
    const waiters = new Set();
    const closed = new Promise((r) => socket.on('close', () => { r(); for (const w of waiters) w(); }));
    socket.on('data', (d) => { received += d.toString('latin1'); for (const w of waiters) w(); });
    socket.on('error', () => { /* surfaced as 'close' */ });
    socket.once('connect', () => resolve({
      socket,
      closed,
      text: () => received,
      write: (data) => new Promise((r) => socket.write(data, r)),
      /** Resolves when the received text matches `regex`; rejects on close or timeout. */
      waitFor: (regex, timeoutMs = 5000) => new Promise((res, rej) => {
        const check = () => {
          if (regex.test(received)) { cleanup(); res(received); } else if (socket.destroyed || socket.readyState === 'closed') {
            cleanup(); rej(new Error(`connection closed before ${regex}; received: ${JSON.stringify(received)}`));
          }
        };
        const timer = setTimeout(() => { cleanup(); rej(new Error(`no ${regex} within ${timeoutMs} ms; received: ${JSON.stringify(received)}`)); }, timeoutMs);
        const cleanup = () => { clearTimeout(timer); waiters.delete(check); };
        waiters.add(check);
        check();
      }),
      destroy: () => socket.destroy(),
    }));
    socket.once('error', reject);
  });
}

/** Splits a raw HTTP/1.1 response (Content-Length framed) into {status, headers, body}. */
export function parseRawResponse(text) {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const status = Number(statusLine.split(' ')[1]);
  const body = text.slice(end + 4);
  let json = null;
  try { json = JSON.parse(body); } catch { /* not JSON */ }
  return { status, headers, body, json };
}

// ---------------------------------------------------------------------------
// OpenAI-shaped request bodies and checks

export const USER_MESSAGES = [{ role: 'user', content: 'Say something.' }];

/** Content chunks of a chat or completions stream, and their concatenated text. */
export function streamContent(events) {
  const pieces = [];
  for (const e of events) {
    const c = e.json?.choices?.[0];
    const piece = c?.delta?.content ?? c?.text;
    if (typeof piece === 'string' && piece.length > 0) pieces.push(piece);
  }
  return { count: pieces.length, text: pieces.join('') };
}

/**
 * One streamed chat completion of exactly `maxTokens` tokens (ignore_eos),
 * read to its end and summed up, so a test can sort many concurrent results:
 * - refused (status != 200): {status, error, retryAfter, text};
 * - served: {status: 200, events, tokens, done (ended with [DONE]), usage,
 *   errorEvent (the `error` of an in-stream error event, if any), cleanEnd
 *   (the body ended normally, not by a reset), readError}.
 * `onEvent` is passed to readSse; `signal` aborts the request.
 */
export async function streamChat(url, { model, maxTokens, signal, onEvent, headers } = {}) {
  const res = await postStream(`${url}/v1/chat/completions`,
    { model, messages: USER_MESSAGES, max_tokens: maxTokens, ignore_eos: true, stream_options: { include_usage: true } },
    { signal, headers });
  if (res.status !== 200) {
    const text = await res.text();
    let error;
    try { error = JSON.parse(text).error; } catch { /* not JSON: the caller sees text */ }
    return { status: res.status, error, retryAfter: res.headers.get('retry-after'), text };
  }
  const events = [];
  let cleanEnd = true;
  let readError;
  try {
    await readSse(res, { onEvent: (e, seen) => { events.push(e); return onEvent?.(e, seen); } });
  } catch (e) {
    cleanEnd = false;
    readError = e;
  }
  const usage = events.findLast((e) => e.json?.usage)?.json.usage;
  return {
    status: 200, events, tokens: streamContent(events).count, done: events.at(-1)?.data === '[DONE]',
    usage, errorEvent: events.find((e) => e.json?.error)?.json.error, cleanEnd, readError,
  };
}

/** Asserts an OpenAI-style error body; returns its `error` object. */
export function expectError(assert, res, status, { code, type, messageIncludes } = {}) {
  assert.equal(res.status, status, `status (body: ${res.text})`);
  assert.ok(res.body?.error, `an {"error": ...} body, got ${res.text}`);
  const e = res.body.error;
  for (const key of ['message', 'type', 'param', 'code']) assert.ok(key in e, `error.${key} present in ${res.text}`);
  if (code !== undefined) assert.equal(e.code, code, `error.code in ${res.text}`);
  if (type !== undefined) assert.equal(e.type, type, `error.type in ${res.text}`);
  for (const s of [messageIncludes ?? []].flat()) assert.ok(e.message.includes(s), `error.message mentions '${s}': ${e.message}`);
  return e;
}
