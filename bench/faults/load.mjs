#!/usr/bin/env node
// The client side of bench/faults.sh: sends chat completions to a gateway and
// counts what became of every one of them, so a fault row can say how many
// requests were answered, refused cleanly, lost or left hanging.
//
//   ok     200 and a whole answer (a stream up to `data: [DONE]`, no error event)
//   clean  an answer that says it failed: an HTTP error status with an OpenAI
//          error body, a stream that ends with an error event and [DONE], or a
//          connection refused at once (a gateway that stopped listening)
//   lost   anything else: a reset or close with no answer or mid-answer, a
//          malformed body, a truncated stream
//   hung   no end within --deadline-ms (the request is then aborted)
//   wrong  (with --expect-code C) a clean error whose code is not C; (with
//          --key) a 401 to the valid key, or a 200 to a request sent without it
//
// Modes:
//   load       --requests N (or --seconds S) at --concurrency C; --stream-share
//              of them streamed (default 1). --slowloris K also holds K
//              connections that send their headers a byte a second, and counts
//              how long the gateway let them stay. --read-tokens K: each stream
//              is closed by the client after K content events (ok when it got
//              them); the summary's `reads` lists [X-Request-Id, events read].
//              --key K sends `Authorization: Bearer K`; --unauth-share F sends
//              that share of the requests with no key or a wrong one instead
//              (alternately), whose expected answer is a 401 (clean).
//              --url may list several gateways, comma-separated: requests go
//              to each in turn.
//   idle       opens --streams N streams to an engine that stalls after one
//              token, waits until each has its first token, records the
//              gateway's RSS and descriptors (--gateway-pid), closes them all,
//              waits until the gateway has closed its side and its RSS has
//              stopped falling, records again; --rounds times.
// Progress (requests ended so far, streams with a first token) is written to
// --progress FILE every 100 ms so the shell can time its fault on it. The
// summary is one JSON object on stdout.
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

function parseArgs(argv) {
  const o = {
    mode: 'load', url: '', model: '', requests: 0, seconds: 0, concurrency: 8, maxTokens: 32,
    streamShare: 1, deadlineMs: 60_000, progress: '', slowloris: 0, streams: 0, rounds: 1,
    gatewayPid: 0, openBatch: 250, settleMs: 20_000, expectCode: '', readTokens: 0, key: '', unauthShare: 0,
  };
  const names = {
    '--mode': ['mode', String], '--url': ['url', String], '--model': ['model', String],
    '--requests': ['requests', Number], '--seconds': ['seconds', Number],
    '--concurrency': ['concurrency', Number], '--max-tokens': ['maxTokens', Number],
    '--stream-share': ['streamShare', Number], '--deadline-ms': ['deadlineMs', Number],
    '--progress': ['progress', String], '--slowloris': ['slowloris', Number],
    '--streams': ['streams', Number], '--rounds': ['rounds', Number],
    '--gateway-pid': ['gatewayPid', Number], '--open-batch': ['openBatch', Number],
    '--settle-ms': ['settleMs', Number], '--expect-code': ['expectCode', String],
    '--read-tokens': ['readTokens', Number], '--key': ['key', String],
    '--unauth-share': ['unauthShare', Number],
  };
  for (let i = 2; i < argv.length; i += 2) {
    const spec = names[argv[i]];
    if (!spec || i + 1 >= argv.length) throw new Error(`load.mjs: unknown or incomplete option '${argv[i]}'`);
    const v = spec[1](argv[i + 1]);
    if (spec[1] === Number && !Number.isFinite(v)) throw new Error(`load.mjs: ${argv[i]}: not a number`);
    o[spec[0]] = v;
  }
  if (!o.url || !o.model) throw new Error('load.mjs: --url and --model are required');
  return o;
}

const opts = parseArgs(process.argv);
const targets = opts.url.split(',').map((u) => new URL(u));
const target = targets[0];
// One keep-alive connection per concurrent request, as a client library keeps.
const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(opts.concurrency, opts.streams, 1) });

const counts = { sent: 0, ok: 0, clean: 0, lost: 0, hung: 0, wrong: 0 };
// --read-tokens: [request id, content events read] of each stream closed early.
const reads = [];
// Why requests were not ok, e.g. {"503": 4, "stream-error-mid": 2, "ECONNRESET": 1}.
const detail = {};
let firstTokens = 0;
const note = (kind, why, code) => {
  counts[kind] += 1;
  if (kind !== 'ok') detail[`${kind}:${why}`] = (detail[`${kind}:${why}`] ?? 0) + 1;
  // An error that says it failed, but not the way this row expects.
  if (opts.expectCode && kind === 'clean' && code !== undefined && code !== opts.expectCode) {
    counts.wrong += 1;
    detail[`wrong:${code}`] = (detail[`wrong:${code}`] ?? 0) + 1;
  }
};
// The code of an OpenAI error body or event (null when it has none); undefined
// when `text` is no error.
const errorCode = (text) => {
  try { const e = JSON.parse(text).error; return typeof e === 'object' ? (e.code ?? null) : undefined; } catch { return undefined; }
};

function writeProgress() {
  if (!opts.progress) return;
  const ended = counts.ok + counts.clean + counts.lost + counts.hung;
  // Renamed into place: a reader never sees the file empty.
  fs.writeFileSync(`${opts.progress}.new`, `${ended} ${firstTokens} ${counts.sent}\n`);
  fs.renameSync(`${opts.progress}.new`, opts.progress);
}
const progressTimer = opts.progress ? setInterval(writeProgress, 100) : null;

// One request to its end; resolves with [kind, why, error code, HTTP status].
// `onFirstToken` runs once a stream has delivered its first content chunk; `id`
// is sent as X-Request-Id, `auth` as Authorization; `to` is the gateway.
function oneRequest(stream, { onFirstToken, signal, id, auth, to = target } = {}) {
  const body = JSON.stringify({
    model: opts.model, stream, max_tokens: opts.maxTokens,
    messages: [{ role: 'user', content: 'Count to a hundred, slowly.' }],
  });
  return new Promise((resolve) => {
    let settled = false;
    let status;
    const finish = (kind, why, code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve([kind, why, code, status]);
    };
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (id) headers['x-request-id'] = id;
    if (auth) headers.authorization = auth;
    const req = http.request({ agent, host: to.hostname, port: to.port, method: 'POST', path: '/v1/chat/completions', headers });
    const timer = setTimeout(() => { finish('hung', 'deadline'); req.destroy(); }, opts.deadlineMs);
    if (signal) signal.addEventListener('abort', () => { finish('aborted', 'closed by us'); req.destroy(); }, { once: true });
    req.on('error', (e) => {
      finish(e.code === 'ECONNREFUSED' ? 'clean' : 'lost', e.code ?? e.message);
    });
    req.on('response', (res) => {
      status = res.statusCode;
      let text = '';
      let sawContent = false;
      let contentEvents = 0;
      let sawError = false;
      let code;
      let sawDone = false;
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        if (res.statusCode !== 200 || !stream) { text += d; return; }
        pending += d;
        let cut;
        while ((cut = pending.indexOf('\n\n')) >= 0) {
          const event = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          for (const line of event.split('\n')) {
            if (!line.startsWith('data: ')) continue;
            const data = line.slice(6);
            if (data === '[DONE]') { sawDone = true; continue; }
            if (data.includes('"error"')) { sawError = true; code = errorCode(data); continue; }
            // Non-empty text, as the gateway counts an event's token.
            if (!/"content":"[^"]/.test(data)) continue;
            contentEvents += 1;
            if (!sawContent) {
              sawContent = true;
              firstTokens += 1;
              if (onFirstToken) onFirstToken();
            }
            if (opts.readTokens > 0 && contentEvents === opts.readTokens) {
              reads.push([id, contentEvents]);
              finish('ok', '');
              req.destroy();  // the client leaves mid-stream
              return;
            }
          }
        }
      });
      res.on('error', (e) => finish('lost', `mid-body ${e.code ?? e.message}`));
      res.on('aborted', () => finish('lost', 'aborted mid-body'));
      res.on('end', () => {
        if (res.statusCode !== 200) {
          let isError = false;
          try { isError = typeof JSON.parse(text).error === 'object'; } catch { /* not JSON: lost */ }
          finish(isError ? 'clean' : 'lost', isError ? String(res.statusCode) : `${res.statusCode} without an error body`,
            errorCode(text));
        } else if (!stream) {
          let whole = false;
          try { whole = Array.isArray(JSON.parse(text).choices); } catch { /* truncated: lost */ }
          finish(whole ? 'ok' : 'lost', 'truncated body');
        } else if (sawError && sawDone) {
          finish('clean', sawContent ? 'stream-error-after-first-token' : 'stream-error-before-first-token', code);
        } else if (sawDone) {
          finish('ok', '');
        } else {
          finish('lost', 'stream ended without [DONE]');
        }
      });
    });
    req.end(body);
  });
}

// --slowloris: K connections that send a request's headers a byte a second
// and never finish; how long until the gateway closed each.
function slowloris(k, stop) {
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\nX-Pad: ${'a'.repeat(4000)}`;
  const held = [];
  for (let i = 0; i < k; i++) {
    held.push(new Promise((resolve) => {
      const t0 = Date.now();
      const sock = net.connect(Number(target.port), target.hostname);
      let at = 0;
      let tick;
      const done = (how) => { clearInterval(tick); sock.destroy(); resolve([how, Date.now() - t0]); };
      sock.on('connect', () => {
        tick = setInterval(() => {
          if (stop.aborted) return done('still open at the end');
          if (at < head.length) sock.write(head[at++]);
        }, 1000);
      });
      sock.on('data', () => {});
      sock.on('close', () => done('closed by the gateway'));
      sock.on('error', () => {});
    }));
  }
  return Promise.all(held);
}

// --key: what a request with the key (valid) or without it (unauthenticated:
// no key, or a wrong one) must not get.
function noteAuth(valid, status) {
  const why = valid && status === 401 ? '401-to-the-valid-key' : !valid && status === 200 ? '200-without-a-valid-key' : '';
  if (!why) return;
  counts.wrong += 1;
  detail[`wrong:${why}`] = (detail[`wrong:${why}`] ?? 0) + 1;
}

async function loadMode() {
  const streamEvery = opts.streamShare >= 1 ? 1 : opts.streamShare <= 0 ? 0 : 1 / opts.streamShare;
  // The last of every unauthEvery requests goes without the key.
  const unauthEvery = opts.unauthShare > 0 ? Math.max(1, Math.round(1 / opts.unauthShare)) : 0;
  let unauthSent = 0;
  const until = opts.seconds > 0 ? Date.now() + opts.seconds * 1000 : Infinity;
  const stopSlow = { aborted: false };
  const slow = opts.slowloris > 0 ? slowloris(opts.slowloris, stopSlow) : null;
  let next = 0;
  const more = () => (opts.seconds > 0 ? Date.now() < until : next < opts.requests);
  const worker = async () => {
    while (more()) {
      const i = next++;
      const stream = streamEvery === 1 || (streamEvery > 0 && i % Math.round(streamEvery) === 0);
      const valid = !(unauthEvery && i % unauthEvery === unauthEvery - 1);
      // Without the key: alternately none and a wrong one of the same shape.
      const auth = valid ? (opts.key && `Bearer ${opts.key}`) : unauthSent++ % 2 ? `Bearer sy-${'x'.repeat(40)}` : '';
      counts.sent += 1;
      // The gateways in turn, the turn shifted by one each round, so that
      // each gets streamed and whole requests alike.
      const to = targets[(i + Math.floor(i / targets.length)) % targets.length];
      const [kind, why, code, status] = await oneRequest(stream, { id: `load-${process.pid}-${i}`, auth, to });
      note(kind, why, code);
      if (opts.key || unauthEvery) noteAuth(valid, status);
    }
  };
  const t0 = Date.now();
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const wallS = (Date.now() - t0) / 1000;
  const out = { mode: 'load', ...counts, detail, wall_s: wallS };
  if (opts.readTokens > 0) out.reads = reads;
  if (slow) {
    stopSlow.aborted = true;
    const ends = await slow;
    const cut = ends.filter(([how]) => how === 'closed by the gateway').map(([, ms]) => ms);
    out.slowloris = {
      held: opts.slowloris, closed_by_gateway: cut.length,
      held_ms_min: cut.length ? Math.min(...cut) : null, held_ms_max: cut.length ? Math.max(...cut) : null,
    };
  }
  return out;
}

function gatewayState(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number((status.match(new RegExp(`^${field}:\\s+(\\d+)`, 'm')) ?? [0, 0])[1]);
  // RSS split as the kernel counts it: anonymous (the heap, stacks) and file
  // pages (the binary's and libraries' code paged in).
  return {
    rss_mib: kb('VmRSS') / 1024, anon_mib: kb('RssAnon') / 1024, file_mib: kb('RssFile') / 1024,
    hwm_mib: kb('VmHWM') / 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length,
  };
}

// The gateway's side of client connections it has not closed yet: sockets on
// its listening port, established or with the client's FIN received
// (CLOSE_WAIT). Its descriptors are no measure of that: it keeps idle
// upstream connections after a burst.
function clientConnectionsOpen(port) {
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let open = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = fs.readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 3 && f[1].endsWith(local) && (f[3] === '01' || f[3] === '08')) open += 1;
    }
  }
  return open;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function idleMode() {
  if (!opts.gatewayPid) throw new Error('load.mjs: --mode idle needs --gateway-pid');
  const rounds = [];
  const base = gatewayState(opts.gatewayPid);
  for (let round = 1; round <= opts.rounds; round++) {
    firstTokens = 0;
    const ctl = new AbortController();
    setMaxListeners(0, ctl.signal);  // one listener per stream
    const ends = [];
    // Opened in batches, each waiting for its first tokens, so the listen
    // backlog never overflows (a SYN retried after 1 s is not a lost stream).
    for (let at = 0; at < opts.streams; at += opts.openBatch) {
      const batch = [];
      for (let i = at; i < Math.min(opts.streams, at + opts.openBatch); i++) {
        counts.sent += 1;
        batch.push(new Promise((first) => {
          ends.push(oneRequest(true, { onFirstToken: first, signal: ctl.signal }).then((r) => { first(); return r; }));
        }));
      }
      await Promise.all(batch);
    }
    const port = Number(target.port);
    const open = { ...gatewayState(opts.gatewayPid), client_connections: clientConnectionsOpen(port) };
    const openStreams = firstTokens;
    ctl.abort();
    const results = await Promise.all(ends);
    for (const [kind, why] of results) if (kind !== 'aborted') note(kind, why);
    counts.ok += results.filter(([kind]) => kind === 'aborted').length;
    // Wait until the gateway has closed its side of every stream (bounded).
    const deadline = Date.now() + opts.settleMs;
    while (clientConnectionsOpen(port) > 0 && Date.now() < deadline) await sleep(100);
    let after = gatewayState(opts.gatewayPid);
    // Then until its RSS has stopped falling (it trims the heap a moment
    // after a burst of closes): the same for 5 samples 100 ms apart.
    for (let same = 0; same < 5 && Date.now() < deadline; ) {
      await sleep(100);
      const now = gatewayState(opts.gatewayPid);
      same = now.rss_mib === after.rss_mib ? same + 1 : 0;
      after = now;
    }
    // Not 0: the figures were taken with streams still open (the deadline passed).
    after.client_connections = clientConnectionsOpen(port);
    rounds.push({ round, open_streams: openStreams, open, after });
  }
  agent.destroy();
  return { mode: 'idle', ...counts, detail, base, rounds };
}

const result = opts.mode === 'idle' ? await idleMode() : await loadMode();
if (progressTimer) clearInterval(progressTimer);
writeProgress();
agent.destroy();
process.stdout.write(JSON.stringify(result) + '\n');
