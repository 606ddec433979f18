// The simulator against real llama-server captures (shared/reference/llamacpp):
// the gateway and its tests are only as good as the stand-in is faithful, so
// the wire format (headers, SSE framing, keys and their order) must match.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, SHARED, USER_MESSAGES, fetchJson, metricValue, parseRawResponse, postStream, rawConnect, readSse, runSwitchyard, startSim, stopAll, streamContent, waitUntil, within } from './harness.mjs';

const REF = path.join(SHARED, 'reference/llamacpp');
const ref = (name) => fs.readFileSync(path.join(REF, name), 'utf8');
const refHeaders = (name) => Object.fromEntries(ref(name).split('\r\n').slice(1).filter(Boolean)
  .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
const refEvents = (name) => ref(name).split('\n\n').filter(Boolean).map((b) => b.replace(/^data: /, ''));

// The structure of a JSON value: keys in order, recursively, with leaf types.
// Arrays are described by their first element, so token-dependent lengths do
// not matter but the element shape does.
function shape(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, shape(x)]);
  return typeof v;
}

// Chat stream chunks by role in the stream.
function chatKinds(jsonEvents) {
  return {
    role: jsonEvents.find((e) => e.choices[0]?.delta?.role),
    content: jsonEvents.find((e) => typeof e.choices[0]?.delta?.content === 'string'),
    finish: jsonEvents.find((e) => e.choices[0]?.finish_reason),
    usage: jsonEvents.find((e) => e.choices.length === 0),
  };
}

const TIMEOUT = { timeout: 15_000 };

const waitForIdle = (url) => waitUntil(async () => metricValue((await fetchJson(`${url}/metrics`)).text, 'llamacpp:requests_processing') === 0,
  { what: 'an idle sim' });

describe('sim: llama-server wire format', () => {
  let sim;
  before(async () => { sim = await startSim({ speedFactor: 50, seed: 7, alias: 'stories260K' }); });
  after(stopAll);

  test('streamed chat: headers, framing, chunk shapes match the capture', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/chat/completions`,
      { messages: USER_MESSAGES, max_tokens: 8, stream_options: { include_usage: true } });
    assert.equal(res.status, 200);
    const want = refHeaders('chat_stream.headers');
    assert.equal(res.headers.get('content-type'), want['content-type']);
    assert.equal(res.headers.get('x-accel-buffering'), want['x-accel-buffering']);
    assert.equal(res.headers.get('transfer-encoding'), 'chunked');

    const { raw, events } = await readSse(res);
    // Exactly `data: <one line>\n\n` per event, as llama-server writes it.
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    assert.equal(events.at(-1).data, '[DONE]');

    const got = chatKinds(events.slice(0, -1).map((e) => e.json));
    const capture = chatKinds(refEvents('chat_stream.sse').slice(0, -1).map((d) => JSON.parse(d)));
    for (const kind of ['role', 'content', 'finish', 'usage']) {
      assert.ok(got[kind], `the sim sent a ${kind} chunk`);
      assert.deepEqual(shape(got[kind]), shape(capture[kind]), `${kind} chunk shape`);
    }
    // Order: role first, then content, finish, usage, [DONE].
    assert.equal(events[0].json, got.role);
    assert.equal(events.at(-2).json, got.usage);
    assert.equal(events.at(-3).json, got.finish);
    assert.equal(streamContent(events).count, got.usage.usage.completion_tokens);
    assert.equal(got.usage.usage.completion_tokens, 8);
  });

  test('streamed chat without include_usage: timings ride on the finish chunk, no usage chunk', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/chat/completions`, { messages: USER_MESSAGES, max_tokens: 4 });
    const { events } = await readSse(res);
    const got = chatKinds(events.slice(0, -1).map((e) => e.json));
    const capture = chatKinds(refEvents('chat_stream_no_include_usage.sse').slice(0, -1).map((d) => JSON.parse(d)));
    assert.equal(got.usage, undefined);
    assert.equal(capture.usage, undefined);
    assert.deepEqual(shape(got.finish), shape(capture.finish));
    assert.equal(events.at(-1).data, '[DONE]');
  });

  test('streamed /v1/completions: chunk shapes match the capture', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 8 });
    assert.equal(res.status, 200);
    const { raw, events } = await readSse(res);
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    const capture = refEvents('v1_completions_stream.sse');
    assert.equal(events.at(-1).data, '[DONE]');
    assert.deepEqual(shape(events[0].json), shape(JSON.parse(capture[0])), 'content chunk');
    assert.deepEqual(shape(events.at(-2).json), shape(JSON.parse(capture.at(-2))), 'final chunk');
    assert.equal(events.at(-2).json.usage.completion_tokens, 8);
  });

  test('non-streamed chat and completions: body shapes and headers match the captures', TIMEOUT, async () => {
    const chat = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES, max_tokens: 8 } });
    assert.equal(chat.status, 200);
    assert.equal(chat.headers.get('content-type'), refHeaders('chat_nonstream.headers')['content-type']);
    assert.deepEqual(shape(chat.body), shape(JSON.parse(ref('chat_nonstream.body'))));

    const text = await fetchJson(`${sim.url}/v1/completions`, { body: { prompt: 'Once upon a time', max_tokens: 8 } });
    assert.equal(text.status, 200);
    assert.equal(text.headers.get('content-type'), refHeaders('v1_completions.headers')['content-type']);
    assert.deepEqual(shape(text.body), shape(JSON.parse(ref('v1_completions.body'))));
  });

  test('errors, tokenizer, models, health and embeddings match the captures', TIMEOUT, async () => {
    const noMessages = await fetchJson(`${sim.url}/v1/chat/completions`, { body: {} });
    assert.equal(noMessages.status, 400);
    assert.deepEqual(noMessages.body, JSON.parse(ref('error_no_messages.body')));

    const badJson = await fetchJson(`${sim.url}/v1/chat/completions`, { body: '{"messages": ' });
    assert.equal(badJson.status, 500);
    assert.deepEqual(shape(badJson.body), shape(JSON.parse(ref('error_bad_json.body'))));

    const emb = await fetchJson(`${sim.url}/v1/embeddings`, { body: { input: 'x' } });
    assert.equal(emb.status, 501);
    assert.deepEqual(emb.body, JSON.parse(ref('embeddings_disabled.body')));

    const tok = await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time', with_pieces: true } });
    assert.deepEqual(shape(tok.body), shape(JSON.parse(ref('tokenize.body'))));
    const ids = (await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time' } })).body.tokens;
    const detok = await fetchJson(`${sim.url}/detokenize`, { body: { tokens: ids } });
    assert.deepEqual(shape(detok.body), shape(JSON.parse(ref('detokenize.body'))));
    assert.equal(detok.body.content.trim(), 'Once upon a time');

    const models = await fetchJson(`${sim.url}/v1/models`);
    assert.deepEqual(shape(models.body), shape(JSON.parse(ref('v1_models.body'))));
    assert.equal(models.body.data[0].id, 'stories260K');

    const health = await fetchJson(`${sim.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, JSON.parse(ref('health.body')));
  });

  test('ignore_eos + max_tokens gives exactly N tokens; without max_tokens it stops on its own', TIMEOUT, async () => {
    const exact = await fetchJson(`${sim.url}/v1/chat/completions`,
      { body: { messages: USER_MESSAGES, max_tokens: 40, ignore_eos: true } });
    assert.equal(exact.body.usage.completion_tokens, 40);
    assert.equal(exact.body.choices[0].finish_reason, 'length');

    const free = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { messages: USER_MESSAGES } });
    assert.equal(free.body.choices[0].finish_reason, 'stop');
    assert.ok(free.body.usage.completion_tokens >= 16 && free.body.usage.completion_tokens <= 128,
      `16..128 tokens, got ${free.body.usage.completion_tokens}`);
  });

  test('/slots: idle and busy shapes match the captures; fail_on_no_slot=1 is 503 when all are busy', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 });  // a slot never used yet
    const idle = await fetchJson(`${sim.url}/slots`);
    assert.equal(idle.status, 200);
    const capturedIdle = JSON.parse(ref('slots.body'));
    assert.deepEqual(shape(idle.body[0]), shape(capturedIdle[0]));
    assert.equal((await fetchJson(`${sim.url}/slots?fail_on_no_slot=1`)).status, 200);

    // A long request keeps the only slot busy (1000 tokens at 65 tok/s x50: ~0.3 s).
    const ctrl = new AbortController();
    const busyReq = postStream(`${sim.url}/completion`, { prompt: 'Once upon a time', n_predict: 1000, ignore_eos: true, stream: true },
      { signal: ctrl.signal });
    const res = await busyReq;
    const reader = res.body.getReader();
    await reader.read();
    const busy = await fetchJson(`${sim.url}/slots`);
    assert.deepEqual(shape(busy.body[0]), shape(JSON.parse(ref('slots_busy.body'))[0]));
    assert.equal(busy.body[0].is_processing, true);
    assert.equal(busy.body[0].params.n_predict, 1000);
    const none = await fetchJson(`${sim.url}/slots?fail_on_no_slot=1`);
    assert.equal(none.status, 503);
    assert.deepEqual(Object.keys(none.body.error), ['code', 'message', 'type']);
    ctrl.abort();
    await reader.cancel().catch(() => {});
    // After use an idle slot keeps the last task's fields, as slots_after.body shows.
    await waitForIdle(sim.url);
    const after = await fetchJson(`${sim.url}/slots`);
    assert.deepEqual(shape(after.body[0]), shape(JSON.parse(ref('slots_after.body'))[1]));
    await sim.stop();
  });

  test('POST /completion: body and stream shapes as the captures, stop chunk without [DONE]', TIMEOUT, async () => {
    const full = await fetchJson(`${sim.url}/completion`, { body: { prompt: 'Once upon a time', n_predict: 256, ignore_eos: true } });
    assert.equal(full.status, 200);
    const captured = JSON.parse(ref('completion_ignore_eos.body'));
    assert.deepEqual(shape(full.body), shape(captured));
    assert.equal(full.body.tokens_predicted, 256);
    assert.equal(full.body.stop_type, 'limit');
    assert.equal(full.body.timings.predicted_n, 256);
    assert.deepEqual(full.body.generation_settings.logit_bias, captured.generation_settings.logit_bias);

    // A token-id prompt, streamed, repeated: the slot's prefix is reused.
    const ids = (await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon a time there was' } })).body.tokens;
    let last;
    for (let i = 0; i < 2; i++) {
      const res = await postStream(`${sim.url}/completion`, { prompt: ids, n_predict: 8, stream: true });
      const { raw, events } = await readSse(res);
      assert.match(raw, /^(data: [^\n]+\n\n)+$/);
      assert.ok(!raw.includes('[DONE]'));
      const capture = refEvents('completion_stream.sse').map((d) => JSON.parse(d));
      assert.deepEqual(shape(events[0].json), shape(capture[0]), 'token chunk');
      assert.deepEqual(shape(events.at(-1).json), shape(capture.at(-1)), 'stop chunk');
      assert.equal(events.at(-1).json.stop, true);
      assert.equal(events.length, 9);
      last = events.at(-1).json;
    }
    assert.equal(last.timings.cache_n, ids.length - 1, 'all but the last prompt token from the slot cache');
    assert.equal(last.timings.prompt_n, 1);
  });

  test('POST /apply-template and the context limit', TIMEOUT, async () => {
    const t = await fetchJson(`${sim.url}/apply-template`, { body: { messages: [{ role: 'user', content: 'Hi' }] } });
    assert.deepEqual(t.body, JSON.parse(ref('apply_template.body')));
    assert.equal(t.headers.get('content-type'), refHeaders('apply_template.headers')['content-type']);

    const ctx = (await fetchJson(`${sim.url}/props`)).body.default_generation_settings.n_ctx;
    const tooLong = await fetchJson(`${sim.url}/completion`, { body: { prompt: Array(ctx + 5).fill(300), n_predict: 4 } });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.type, 'exceed_context_size_error');
    assert.equal(tooLong.body.error.n_ctx, ctx);
  });

  test('/metrics: the llama.cpp names in the capture\'s order', TIMEOUT, async () => {
    const names = (text) => text.split('\n').filter((l) => l.startsWith('# TYPE')).map((l) => l.split(' ')[2]);
    const got = names((await fetchJson(`${sim.url}/metrics`)).text).filter((n) => n.startsWith('llamacpp:'));
    assert.deepEqual(got, names(ref('metrics.body')));
  });

  test('/metrics carries llama.cpp gauges and the sim high-water marks', TIMEOUT, async () => {
    const res = await fetchJson(`${sim.url}/metrics`);
    assert.equal(res.status, 200);
    for (const name of ['llamacpp:requests_processing', 'llamacpp:requests_deferred',
      'switchyard_sim:requests_processing_max', 'switchyard_sim:requests_deferred_total'])
      assert.notEqual(metricValue(res.text, name), undefined, `${name} in /metrics`);
    assert.equal(metricValue(res.text, 'llamacpp:requests_processing'), 0);
  });
});

describe('sim: the engine model over llama.cpp\'s API', () => {
  after(stopAll);

  test('requests beyond the slots wait inside the sim, counted as deferred', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 2, slots: 1 });  // ~0.23 s per request
    const body = { messages: USER_MESSAGES, max_tokens: 30, ignore_eos: true };
    const all = Promise.all([1, 2, 3].map(() => fetchJson(`${sim.url}/v1/chat/completions`, { body })));
    await waitUntil(async () => metricValue((await fetchJson(`${sim.url}/metrics`)).text, 'llamacpp:requests_deferred') === 2,
      { what: 'two deferred' });
    for (const r of await all) assert.equal(r.body.usage.completion_tokens, 30);
    const text = (await fetchJson(`${sim.url}/metrics`)).text;
    assert.equal(metricValue(text, 'switchyard_sim:requests_processing_max'), 1);
    assert.equal(metricValue(text, 'switchyard_sim:requests_deferred_total'), 2);
    assert.equal(metricValue(text, 'llamacpp:tokens_predicted_total'), 90);
    await sim.stop();
  });

  test('--over-report inflates the self-reported speed, not the delivered one', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 20 }, ['--over-report', 10]);
    const t0 = performance.now();
    const r = await fetchJson(`${sim.url}/completion`, { body: { prompt: 'Once', n_predict: 40, ignore_eos: true } });
    const wall = (performance.now() - t0) / 1000;
    const t = r.body.timings;
    assert.ok(Math.abs(t.predicted_per_second - 10 * 1000 * t.predicted_n / t.predicted_ms) < 1e-6 * t.predicted_per_second);
    assert.ok(t.predicted_per_second > 5 * (40 / wall), `reported ${t.predicted_per_second}, delivered ${40 / wall}`);
    const reported = metricValue((await fetchJson(`${sim.url}/metrics`)).text, 'llamacpp:predicted_tokens_seconds');
    assert.ok(reported > 5 * 65 * 20, `llamacpp:predicted_tokens_seconds ${reported}`);
    await sim.stop();
  });
});

// One request on a raw keep-alive connection; resolves the parsed response
// once its whole (Content-Length framed) body is in.
async function rawGet(conn, path, from) {
  await conn.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await conn.waitFor(new RegExp(`^[\\s\\S]{${from}}HTTP/1\\.1 [\\s\\S]*?\\r\\n\\r\\n`));
  const head = parseRawResponse(conn.text().slice(from));
  const length = Number(head.headers['content-length']);
  await conn.waitFor(new RegExp(`^[\\s\\S]{${from}}[\\s\\S]*?\\r\\n\\r\\n[\\s\\S]{${length}}`));
  const text = conn.text().slice(from);
  const end = text.indexOf('\r\n\r\n') + 4 + length;
  return { ...parseRawResponse(text.slice(0, end)), end: from + end };
}

describe('sim: keep-alive as llama-server (cpp-httplib) and vLLM (uvicorn) do it', () => {
  after(stopAll);

  test('every response says Keep-Alive: timeout=5, max=100 as the captures; X-Simulated marks the sim', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 });
    const health = await fetchJson(`${sim.url}/health`);
    assert.equal(health.headers.get('keep-alive'), refHeaders('health.headers')['keep-alive']);
    assert.equal(health.headers.get('x-simulated'), 'switchyard-sim');
    const res = await postStream(`${sim.url}/v1/chat/completions`, { messages: USER_MESSAGES, max_tokens: 2 });
    assert.equal(res.headers.get('keep-alive'), refHeaders('chat_stream.headers')['keep-alive']);
    assert.equal(res.headers.get('x-simulated'), 'switchyard-sim');
    await readSse(res);
    // Errors close the connection, as llama-server's do (error_no_messages.headers).
    const error = await fetchJson(`${sim.url}/v1/chat/completions`, { body: {} });
    assert.equal(error.headers.get('connection'), 'close');
    assert.equal(error.headers.get('keep-alive'), null);
    assert.equal(error.headers.get('x-simulated'), 'switchyard-sim');
    await sim.stop();
  });

  test('--keep-alive-timeout 1: an idle keep-alive connection is closed by the sim', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--keep-alive-timeout', 1]);
    const conn = await rawConnect(sim.port);
    const first = await rawGet(conn, '/health', 0);
    assert.equal(first.status, 200);
    assert.equal(first.headers['keep-alive'], 'timeout=1, max=100');
    const answered = performance.now();
    // Still open right after the answer: a second request on it works.
    const second = await rawGet(conn, '/health', first.end);
    assert.equal(second.status, 200);
    const idleFrom = performance.now();
    assert.notEqual(await within(conn.closed, 5000), null, 'the sim closed the idle connection');
    // A timer never fires early: the close came after the idle time, not before.
    assert.ok(performance.now() - idleFrom >= 900, `closed after ${performance.now() - idleFrom} ms idle`);
    assert.ok(idleFrom - answered < 1000);
    assert.equal(conn.text().length, second.end, 'closed without another byte (no 408)');
    await sim.stop();
  });

  test('--keep-alive-max 3: the 3rd response on a connection says Connection: close, then it closes', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--keep-alive-max', 3]);
    const conn = await rawConnect(sim.port);
    let at = 0;
    for (let i = 1; i <= 3; i++) {
      const r = await rawGet(conn, '/health', at);
      assert.equal(r.status, 200);
      assert.equal(r.headers.connection, i < 3 ? undefined : 'close', `response ${i}`);
      assert.equal(r.headers['keep-alive'], i < 3 ? 'timeout=5, max=3' : undefined, `response ${i}`);
      at = r.end;
    }
    assert.notEqual(await within(conn.closed, 5000), null, 'closed after the 3rd response');
    await sim.stop();
  });

  test('vllm dialect: idle connections close after the timeout too, with no Keep-Alive header (uvicorn)', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50, alias: 'm' }, ['--dialect', 'vllm', '--keep-alive-timeout', 0.5]);
    const conn = await rawConnect(sim.port);
    const r = await rawGet(conn, '/v1/models', 0);
    assert.equal(r.status, 200);
    assert.equal(r.headers['keep-alive'], undefined);
    assert.equal(r.headers['x-simulated'], 'switchyard-sim');
    assert.notEqual(await within(conn.closed, 5000), null, 'the sim closed the idle connection');
    await sim.stop();
  });
});

describe('sim: the model name as llama-server reports it', () => {
  after(stopAll);

  test('without --alias, responses, /v1/models and /props name the model file, whatever the request asked', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 });
    const PATH = '/models/sim.gguf';
    const chat = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { model: 'gpt-4o', messages: USER_MESSAGES, max_tokens: 2 } });
    assert.equal(chat.body.model, PATH);
    const res = await postStream(`${sim.url}/v1/completions`, { model: 'x', prompt: 'Once', max_tokens: 2 });
    const { events } = await readSse(res);
    for (const e of events.slice(0, -1)) assert.equal(e.json.model, PATH);
    const models = (await fetchJson(`${sim.url}/v1/models`)).body;
    assert.equal(models.data[0].id, PATH);
    assert.equal(models.models[0].name, PATH);
    const props = (await fetchJson(`${sim.url}/props`)).body;
    assert.equal(props.model_path, PATH);
    assert.equal(props.model_alias, PATH);
    assert.equal(props.ui, true, 'as llama-server without --no-ui');
    await sim.stop();
    const headless = await startSim({ speedFactor: 50 }, ['--no-ui']);
    assert.equal((await fetchJson(`${headless.url}/props`)).body.ui, false);
    await headless.stop();
  });

  // A sim started as llama.cpp's router (and Switchyard) starts a
  // llama-server: LLAMA_SERVER_ROUTER_PORT set, stdin a pipe.
  const routerChild = (extra = []) => {
    const child = spawn(BIN, ['sim', '--host', '127.0.0.1', '--port', '0', '--alias', 'A', '--startup-delay', '0.6', ...extra],
      { env: { ...process.env, LLAMA_SERVER_ROUTER_PORT: '8080' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
    const reports = () => out.split('\n').filter((l) => l.startsWith('cmd_child_to_router:state:'))
      .map((l) => JSON.parse(l.slice('cmd_child_to_router:state:'.length)));
    const ready = () => waitUntil(() => reports().some((r) => r.state === 'ready'), { what: 'the ready report' });
    const url = () => `http://${out.match(/listening on (127\.0\.0\.1:\d+)/)[1]}`;
    return { child, exited, reports, ready, url, output: () => out };
  };

  test('started by a router, it reports its load on stdout and stops when stdin says so, as llama-server does', TIMEOUT, async () => {
    const sim = routerChild();
    try {
      await sim.ready();
      const reports = sim.reports();
      const loading = reports.filter((r) => r.state === 'loading').map((r) => r.payload);
      assert.ok(loading.length >= 2, `a report at once, then every 200 ms of the 0.6 s load: ${sim.output()}`);
      assert.deepEqual(loading[0], { stages: ['text_model'], current: 'text_model', value: 0 });
      assert.equal(loading.at(-1).value, 1);
      assert.deepEqual(loading.map((p) => p.value), loading.map((p) => p.value).sort((a, b) => a - b));
      const ready = reports.at(-1);
      assert.equal(ready.state, 'ready');
      assert.equal(ready.payload.id, 'A');
      assert.equal(ready.payload.owned_by, 'llamacpp');
      // SIGTERM alone does not stop it; the router's word on stdin does.
      sim.child.kill('SIGTERM');
      await waitUntil(() => sim.output().includes('stopping once the router says so'), { what: 'SIGTERM heard' });
      assert.equal(sim.child.exitCode, null, 'still running after SIGTERM alone');
      sim.child.stdin.write('cmd_router_to_child:exit\n');
      assert.equal(await within(sim.exited, 5000), 0, sim.output());
    } finally {
      sim.child.kill('SIGKILL');
    }
  });

  test('started by a router, it exits at once with status 1 when its stdin ends (the router is gone)', TIMEOUT, async () => {
    const sim = routerChild();
    try {
      await sim.ready();
      sim.child.stdin.end();
      assert.equal(await within(sim.exited, 5000), 1, sim.output());
      assert.match(sim.output(), /EOF on stdin detected, forcing shutdown/);
    } finally {
      sim.child.kill('SIGKILL');
    }
  });

  test('--sleep-idle-seconds: idle, it sleeps (and says so); the next completion waits for its weights to load again', TIMEOUT, async () => {
    const sim = routerChild(['--sleep-idle-seconds', '0.5', '--speed-factor', '50']);
    try {
      await sim.ready();
      const props = async () => (await fetchJson(`${sim.url()}/props`)).body;
      assert.equal((await props()).is_sleeping, false);
      await waitUntil(() => sim.reports().some((r) => r.state === 'sleeping'), { what: 'the sleeping report' });
      assert.deepEqual(sim.reports().at(-1), { state: 'sleeping', payload: {} });
      assert.equal((await props()).is_sleeping, true);
      assert.equal((await fetchJson(`${sim.url()}/health`)).status, 200, 'asleep, it is still healthy');
      const before = sim.reports().length;
      const started = Date.now();
      const chat = await fetchJson(`${sim.url()}/v1/chat/completions`, { body: { messages: USER_MESSAGES, max_tokens: 2 } });
      assert.equal(chat.status, 200, chat.text);
      assert.ok(Date.now() - started >= 500, 'it waited for the weights (0.6 s)');
      // The wake is a load, reported as one; its ready says no more.
      const wake = sim.reports().slice(before);
      assert.equal(wake[0].state, 'loading');
      assert.equal(wake[0].payload.value, 0);
      assert.deepEqual(wake.at(-1), { state: 'ready', payload: {} });
      assert.equal((await props()).is_sleeping, false);
      // As llama-server: a GET /metrics wakes it too (what a scraper must not do).
      await waitUntil(async () => (await props()).is_sleeping, { what: 'asleep again' });
      assert.equal((await fetchJson(`${sim.url()}/metrics`)).status, 200);
      assert.equal((await props()).is_sleeping, false);
    } finally {
      sim.child.kill('SIGKILL');
    }
  });

  test('--sleep-idle-seconds is llama-server\'s: refused with --dialect vllm', TIMEOUT, async () => {
    const res = await runSwitchyard(['sim', '--dialect', 'vllm', '--sleep-idle-seconds', '5']);
    assert.equal(res.code, 2);
    assert.match(res.output, /--sleep-idle-seconds is llama-server's/);
  });

  test('--model-path sets the file; --alias the name every response reports', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 }, ['--model-path', '/srv/qwen3-27b-q4.gguf']);
    const chat = await fetchJson(`${sim.url}/v1/chat/completions`, { body: { model: 'qwen', messages: USER_MESSAGES, max_tokens: 2 } });
    assert.equal(chat.body.model, '/srv/qwen3-27b-q4.gguf');
    await sim.stop();
    const named = await startSim({ speedFactor: 50, alias: 'qwen-27b' });
    const reply = await fetchJson(`${named.url}/v1/chat/completions`, { body: { model: 'other', messages: USER_MESSAGES, max_tokens: 2 } });
    assert.equal(reply.body.model, 'qwen-27b');
    const props = (await fetchJson(`${named.url}/props`)).body;
    assert.equal(props.model_alias, 'qwen-27b');
    assert.equal(props.model_path, '/models/sim.gguf');
    await named.stop();
  });
});

// Event names and parsed data of an Anthropic stream, checking its framing.
function anthropicEvents(raw) {
  assert.match(raw, /^(event: [a-z_]+\ndata: [^\n]+\n\n)+$/);
  return raw.split('\n\n').filter(Boolean).map((block) => {
    const [eventLine, dataLine] = block.split('\n');
    return { event: eventLine.slice(7), data: JSON.parse(dataLine.slice(6)) };
  });
}

describe('sim: Anthropic Messages as llama-server serves it', () => {
  let sim;
  before(async () => { sim = await startSim({ speedFactor: 50, seed: 7 }); });
  after(stopAll);

  const MESSAGE = { model: 'claude-sonnet-4', max_tokens: 12, system: 'Be brief.', messages: [{ role: 'user', content: [{ type: 'text', text: 'Say something.' }] }] };

  test('non-streamed: the message object of the capture, key for key', TIMEOUT, async () => {
    const r = await fetchJson(`${sim.url}/v1/messages`, { body: MESSAGE });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), refHeaders('messages_nonstream.headers')['content-type']);
    assert.equal(r.headers.get('keep-alive'), refHeaders('messages_nonstream.headers')['keep-alive']);
    const capture = JSON.parse(ref('messages_nonstream.body'));
    assert.deepEqual(shape(r.body), shape(capture));
    assert.equal(r.body.type, 'message');
    assert.equal(r.body.stop_reason, 'max_tokens');
    assert.equal(r.body.usage.output_tokens, 12);
    assert.equal(r.body.model, '/models/sim.gguf');
    assert.match(r.body.id, /^chatcmpl-/);
  });

  test('streamed: named events in the capture\'s order and shapes, no [DONE]', TIMEOUT, async () => {
    const res = await postStream(`${sim.url}/v1/messages`, { ...MESSAGE, max_tokens: 6 });
    assert.equal(res.status, 200);
    const want = refHeaders('messages_stream.headers');
    assert.equal(res.headers.get('content-type'), want['content-type']);
    assert.equal(res.headers.get('x-accel-buffering'), want['x-accel-buffering']);
    const { raw } = await readSse(res);
    assert.ok(!raw.includes('[DONE]'));
    const got = anthropicEvents(raw);
    const capture = anthropicEvents(ref('messages_stream.sse'));
    assert.deepEqual(got.map((e) => e.event), capture.map((e) => e.event));
    for (const e of got) assert.equal(e.data.type, e.event);
    const byName = (events) => Object.fromEntries(events.map((e) => [e.event, e.data]));
    const mine = byName(got);
    for (const [name, data] of Object.entries(byName(capture)))
      assert.deepEqual(shape(mine[name]), shape(data), `${name} shape`);
    assert.equal(mine.message_delta.usage.output_tokens, 6);
    assert.equal(got.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('').length > 0, true);
  });

  test('count_tokens: {"input_tokens":N}, the prompt the message reports', TIMEOUT, async () => {
    const count = await fetchJson(`${sim.url}/v1/messages/count_tokens`, { body: MESSAGE });
    assert.equal(count.status, 200);
    assert.deepEqual(shape(count.body), shape(JSON.parse(ref('messages_count_tokens.body'))));
    const message = await fetchJson(`${sim.url}/v1/messages`, { body: { ...MESSAGE, max_tokens: 1 } });
    const u = message.body.usage;
    assert.equal(count.body.input_tokens, u.input_tokens + u.cache_read_input_tokens);
  });

  test('without max_tokens it runs to its own end (end_turn); errors are llama-server\'s OpenAI-style ones', TIMEOUT, async () => {
    const free = await fetchJson(`${sim.url}/v1/messages`, { body: { messages: [{ role: 'user', content: 'Hi' }] } });
    assert.equal(free.status, 200);
    assert.equal(free.body.stop_reason, 'end_turn');
    const none = await fetchJson(`${sim.url}/v1/messages`, { body: { max_tokens: 4 } });
    assert.equal(none.status, 500);
    assert.deepEqual(none.body, { error: { code: 500, message: "'messages' is required", type: 'server_error' } });
    const bad = await fetchJson(`${sim.url}/v1/messages`, { body: '{"messages": ' });
    assert.equal(bad.status, 500);
    assert.deepEqual(shape(bad.body), shape(JSON.parse(ref('error_bad_json.body'))));
  });
});

describe('sim: llama-server\'s native routes', () => {
  after(stopAll);

  test('/infill answers as /completion; /tokenize needs no model', TIMEOUT, async () => {
    const sim = await startSim({ speedFactor: 50 });
    const infill = await fetchJson(`${sim.url}/infill`, { body: { input_prefix: 'def f(', input_suffix: '):', n_predict: 4, ignore_eos: true } });
    assert.equal(infill.status, 200);
    assert.deepEqual(shape(infill.body), shape(JSON.parse(ref('completion_ignore_eos.body'))));
    assert.equal(infill.body.tokens_predicted, 4);
    const missing = await fetchJson(`${sim.url}/infill`, { body: { input_prefix: 'x' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.message, '"input_suffix" is required');
    const tok = await fetchJson(`${sim.url}/tokenize`, { body: { content: 'Once upon' } });
    assert.equal(tok.status, 200);
    assert.equal(tok.body.tokens.length, 2);
    await sim.stop();
  });

  test('/v1/rerank: 501 as llama-server without --reranking; with it, llama-server\'s shape', TIMEOUT, async () => {
    const plain = await startSim({ speedFactor: 50 });
    const refused = await fetchJson(`${plain.url}/v1/rerank`, { body: { query: 'q', documents: ['a'] } });
    assert.equal(refused.status, 501);
    assert.equal(refused.body.error.type, 'not_supported_error');
    await plain.stop();
    const sim = await startSim({ speedFactor: 50 }, ['--reranking']);
    for (const path of ['/v1/rerank', '/rerank', '/reranking']) {
      const r = await fetchJson(`${sim.url}${path}`, { body: { query: ' upon time', documents: [' the end', ' upon a time', ' a time'], top_n: 2 } });
      assert.equal(r.status, 200, path);
      assert.deepEqual(Object.keys(r.body), ['model', 'object', 'usage', 'results']);
      assert.deepEqual(r.body.results.map((x) => Object.keys(x)), [['index', 'relevance_score'], ['index', 'relevance_score']]);
      assert.deepEqual(r.body.results.map((x) => x.index), [1, 2]);
    }
    await sim.stop();
  });
});

describe('sim: presets and speed explained', () => {
  after(stopAll);

  test('--list-presets prints one line per preset: name, what it models, its tok/s', TIMEOUT, async () => {
    const run = await runSwitchyard(['sim', '--list-presets']);
    assert.equal(run.code, 0, run.output);
    const lines = run.output.trim().split('\n');
    assert.deepEqual(lines.map((l) => l.split(/\s+/)[0]),
      ['7900xtx-27b-q4', '7900xtx-blower-27b-q4', 'r9700-27b-q4', '2x7900xtx-tp2-vllm', 'fast',
        'r9700-hybrid-q4']);
    assert.match(lines[0], /7900 XTX.*128\.5 tok\/s pure decode per sequence, 59\.4 tok\/s delivered end to end/);
    assert.match(lines[4], /no delays/);
    for (const l of lines) assert.doesNotMatch(l, /inf/);
  });

  test('the start-up line says what its tok/s means; fast says no delays, not inf tok/s', TIMEOUT, async () => {
    const plain = await startSim({ speedFactor: 50 });
    assert.match(plain.output(), /65 tok\/s pure decode per sequence, \S+ tok\/s delivered end to end/);
    const fast = await startSim({}, ['--preset', 'fast']);
    assert.match(fast.output(), /no delays/);
    assert.doesNotMatch(fast.output(), /inf tok\/s/);
    await plain.stop();
    await fast.stop();
  });
});
