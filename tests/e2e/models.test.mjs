// Many models on one box (docs/models.md): on-demand instances load when a
// request needs their model, take turns on a card without cutting a running
// request, unload after their ttl or on the operator's word, and a load that
// fails answers its waiters at once. Two models of 16 GiB on one 24 GiB
// card: only one fits at a time.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  expectError, fetchJson, metricValue, runSwitchyard, startGateway, stopAll, streamChat, waitUntil,
} from './harness.mjs';

function onDemand(name, model, { ttl, extra = '', loadTime = 1 } = {}) {
  const inst = {
    name, model, gpus: [0], memory: '16GiB', load: 'on-demand', slots: 2,
    command: `\${SWITCHYARD} sim --port \${PORT} --slots 2 --tokens-per-second 20 --load-time ${loadTime} --alias ${model}${extra}`,
  };
  if (ttl) inst.ttl = ttl;
  return inst;
}

function box(instances = [onDemand('a', 'A'), onDemand('b', 'B')], extra = {}) {
  const models = [...new Set(instances.map((i) => i.model))].map((name) => ({ name }));
  return {
    gpus: [{ id: 0, memory: '24GiB' }],
    models,
    instances,
    swapping: { policy: 'batch', max_wait: '20s', min_resident: '0s' },
    // A load's expected time until one is measured (the sims load in 1 s).
    switching: { drain_timeout: '20s', switch_cost: '2s' },
    ...extra,
  };
}

async function statuses(gw) {
  const res = await fetchJson(`${gw.url}/v1/models`);
  assert.equal(res.status, 200, res.text);
  return Object.fromEntries(res.body.data.map((m) => [m.id, m.status]));
}

const waitStatus = (gw, model, value, timeoutMs = 15_000) =>
  waitUntil(async () => (await statuses(gw))[model]?.value === value, { timeoutMs, what: `${model} ${value}` });

const chat = (gw, model, timeoutMs = 30_000) => fetchJson(`${gw.url}/v1/chat/completions`, {
  body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }, timeoutMs,
});

// A stream of 40 tokens on `model`, once its second event is in (or it has
// ended otherwise): resolves to { stream }, the stream's own promise, so that
// awaiting this does not wait for its end.
async function streaming(gw, model) {
  let started;
  const seen = new Promise((resolve) => { started = resolve; });
  const stream = streamChat(gw.url, {
    model, maxTokens: 40, onEvent: (e, events) => { if (events.length === 2) started(); },
  });
  await Promise.race([seen, stream]);
  return { stream };
}

// GET /models/sse's events (each `data:` line parsed) until `enough(events)`:
// resolves once the stream is open to { events, reading }, where `reading`
// ends when enough have come or the stream ends (bounded by `timeoutMs`).
async function modelEvents(gw, enough, timeoutMs = 30_000) {
  const res = await fetch(`${gw.url}/models/sse`, { signal: AbortSignal.timeout(timeoutMs) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const events = [];
  const reading = (async () => {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!enough(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      let end;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        if (block.startsWith('data: ')) events.push(JSON.parse(block.slice(6)));
      }
    }
    await reader.cancel();
  })();
  return { events, reading };
}

async function metric(gw, name, labels) {
  return metricValue(await (await fetch(`${gw.url}/metrics`)).text(), name, labels) ?? 0;
}

describe('on-demand models on one card', { timeout: 120_000 }, () => {
  after(stopAll);

  test('nothing loads at start; /v1/models and GET /models list every model unloaded', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    assert.deepEqual(await statuses(gw), {
      A: { value: 'unloaded', args: [] }, B: { value: 'unloaded', args: [] },
    });
    const router = await fetchJson(`${gw.url}/models`);
    assert.deepEqual(router.body.data.map((m) => [m.id, m.status.value]), [['A', 'unloaded'], ['B', 'unloaded']]);
    assert.deepEqual(gw.engines(), [], 'no engine was started');
    assert.equal((await fetchJson(`${gw.url}/health`)).status, 200, 'serving: a request loads its model');
    assert.match(gw.output(), /instance a: memory per GPU 16\.00 GiB \(its 'memory'\)/);
    await gw.stop();
  });

  test('prestart: true loads an on-demand model at start, and it is evicted like any other', async () => {
    const a = { ...onDemand('a', 'A'), prestart: true };
    const gw = await startGateway(box([a, onDemand('b', 'B')]), { waitReady: false });
    await waitStatus(gw, 'A', 'loaded');
    assert.equal((await statuses(gw)).B.value, 'unloaded');
    assert.equal(await metric(gw, 'switchyard_model_loads_total', { model: 'A', reason: 'prestart' }), 1);
    assert.equal((await chat(gw, 'B')).status, 200);
    assert.equal((await statuses(gw)).A.value, 'unloaded');
    await gw.stop();
  });

  test('a stream on A is not cut when B is requested; B loads after it ends', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    const streamA = await streaming(gw, 'A');  // A is loaded and streaming
    assert.equal((await statuses(gw)).A.value, 'loaded');
    const answerB = chat(gw, 'B').then((r) => ({ ...r, at: Date.now() }));
    const a = await streamA.stream;
    const aEnded = Date.now();
    assert.equal(a.status, 200);
    assert.ok(a.done && a.cleanEnd && !a.errorEvent, 'A streamed to its end');
    const b = await answerB;
    assert.equal(b.status, 200, b.text);
    assert.ok(b.at >= aEnded, 'B was served after A finished');
    const s = await statuses(gw);
    assert.equal(s.A.value, 'unloaded');
    assert.equal(s.B.value, 'loaded');
    assert.equal(await metric(gw, 'switchyard_model_loads_total', { model: 'B', reason: 'request' }), 1);
    assert.equal(await metric(gw, 'switchyard_model_unloads_total', { model: 'A', reason: 'evicted' }), 1);
    assert.equal(await metric(gw, 'switchyard_model_resident', { model: 'B' }), 1);
    assert.equal(await metric(gw, 'switchyard_model_resident', { model: 'A' }), 0);
    assert.equal(await metric(gw, 'switchyard_gpu_memory_estimated_bytes', { gpu: '0' }), 16 * 2 ** 30);
    await gw.stop();
  });

  test('POST /models/load and /models/unload with the admin key; the CLI; unknown models', async () => {
    const gw = await startGateway(box(undefined, { admin_key: 'sk-admin' }), { waitReady: false });
    const admin = { authorization: 'Bearer sk-admin' };
    expectError(assert, await fetchJson(`${gw.url}/models/load`, { body: { model: 'A' } }), 401);
    const loaded = await fetchJson(`${gw.url}/models/load`, { body: { model: 'A' }, headers: admin });
    assert.equal(loaded.status, 200, loaded.text);
    assert.deepEqual(loaded.body, { success: true });
    await waitStatus(gw, 'A', 'loaded');
    expectError(assert, await fetchJson(`${gw.url}/models/load`, { body: { model: 'A' }, headers: admin }), 400,
      { messageIncludes: 'already running' });
    expectError(assert, await fetchJson(`${gw.url}/models/load`, { body: { model: 'Z' }, headers: admin }), 404,
      { messageIncludes: ["'Z' is not found", 'on-demand models: A, B'] });
    expectError(assert, await fetchJson(`${gw.url}/models/load`, { body: { name: 'A' }, headers: admin }), 400,
      { messageIncludes: "'model'" });
    const unloaded = await fetchJson(`${gw.url}/models/unload`, { body: { model: 'A' }, headers: admin });
    assert.equal(unloaded.status, 200, unloaded.text);
    await waitStatus(gw, 'A', 'unloaded');
    // Told on stdin to stop, as llama.cpp's router tells its children: a
    // llama-server that knows it has a router does not stop on SIGTERM alone
    // (the sim does the same) and would be killed after timeouts.stop.
    await waitUntil(() => /instance a: engine stopped/.test(gw.output()), { what: 'a stopped' });
    assert.match(gw.output(), /instance a: engine stopped$/m);
    expectError(assert, await fetchJson(`${gw.url}/models/unload`, { body: { model: 'A' }, headers: admin }), 400,
      { messageIncludes: 'not running' });
    const cli = await runSwitchyard(['admin', '--url', gw.url, '--key', 'sk-admin', 'load', 'B']);
    assert.equal(cli.code, 0, cli.output);
    assert.match(cli.output, /model B: loading started/);
    await waitStatus(gw, 'B', 'loaded');
    assert.equal(await metric(gw, 'switchyard_model_loads_total', { model: 'B', reason: 'admin' }), 1);
    assert.equal(await metric(gw, 'switchyard_model_unloads_total', { model: 'A', reason: 'admin' }), 1);
    await gw.stop();
  });

  test('GET /models/sse streams status changes as llama.cpp router mode does, with the engine\'s load progress', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    const { events, reading } = await modelEvents(gw, (seen) => seen.some((e) => e.data?.status === 'loaded'));
    assert.equal((await chat(gw, 'A')).status, 200);
    await reading;
    assert.deepEqual(events.map((e) => [e.event, e.model, e.data.status]).filter((e, i, all) =>
      i === 0 || e[2] !== all[i - 1][2]), [['model_status', 'A', 'loading'], ['status_change', 'A', 'loaded']]);
    // The engine (a llama-server told it has a router: the sim does as it
    // does) reports its load every 200 ms; the gateway passes it on as
    // llama.cpp's router does, and the web UI draws it.
    const progress = events.filter((e) => e.data.progress).map((e) => e.data.progress);
    assert.ok(progress.length >= 2, `progress while A loads (1 s): ${JSON.stringify(events)}`);
    for (const p of progress) {
      assert.deepEqual(p.stages, ['text_model']);
      assert.equal(p.current, 'text_model');
      assert.ok(p.value >= 0 && p.value <= 1, JSON.stringify(p));
    }
    assert.deepEqual(progress.map((p) => p.value), [...progress.map((p) => p.value)].sort((a, b) => a - b));
    assert.equal(events[0].data.progress, undefined, 'the load starts before the engine reports');
    await gw.stop();
  });

  // The raw body of a streamed chat completion (comment lines included).
  const rawStream = async (gw, model) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, text: await res.text() };
  };

  test('a streamed request held for its model\'s load gets SSE comment lines, then its answer', async () => {
    const gw = await startGateway(box(undefined, { swapping: { max_wait: '20s', min_resident: '0s', progress: '200ms' } }),
      { waitReady: false });
    const { status, text } = await rawStream(gw, 'A');
    assert.equal(status, 200, text);
    const comments = text.split('\n').filter((l) => /^: loading A \d+ s$/.test(l));
    assert.ok(comments.length >= 2, `comment lines while A loads (1 s): ${text}`);
    assert.ok(text.indexOf(': loading A') < text.indexOf('data: '), 'before the first event');
    assert.ok(!text.includes('"error"'), text);
    assert.match(text, /data: \[DONE\]\s*$/);
    // Loaded, the next stream starts at once with its first event.
    const again = await rawStream(gw, 'A');
    assert.ok(again.text.startsWith('data: '), again.text);
    await gw.stop();
  });

  test('a held stream whose wait runs out ends with an error event and [DONE], not a cut', async () => {
    const slow = onDemand('a', 'A', { loadTime: 30 });
    const gw = await startGateway(box([slow, onDemand('b', 'B')],
      { swapping: { max_wait: '1500ms', min_resident: '0s', progress: '200ms' } }), { waitReady: false });
    const { status, text } = await rawStream(gw, 'A');
    assert.equal(status, 200, 'the stream had started');
    assert.match(text, /^: loading A \d+ s$/m);
    const error = text.split('\n').find((l) => l.startsWith('data: {') && l.includes('"error"'));
    assert.ok(error, `an error event: ${text}`);
    assert.match(JSON.parse(error.slice(6)).error.message, /'A'/);
    assert.match(text, /data: \[DONE\]\s*$/);
    await gw.stop();
  });

  // What llama.cpp's web UI asks of a router: /props to learn it is one,
  // then /props?model=NAME (with autoload=false) for a loaded model's own.
  test('GET /props is the router\'s; /props?model= and /slots?model= reach the model\'s engine, loading it unless autoload=false', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    const router = await fetchJson(`${gw.url}/props`);
    assert.equal(router.status, 200, router.text);
    assert.equal(router.body.role, 'router');
    assert.equal(router.body.models_autoload, true);
    assert.equal(router.body.max_instances, 2);
    assert.match(router.body.build_info, /^switchyard \d+\.\d+\.\d+$/);
    expectError(assert, await fetchJson(`${gw.url}/props?model=A&autoload=false`), 400,
      { messageIncludes: ["model 'A' is not loaded", 'autoload=false'] });
    assert.deepEqual(gw.engines(), [], 'autoload=false started nothing');
    expectError(assert, await fetchJson(`${gw.url}/props?model=Nope`), 404, { code: 'model_not_found' });

    const props = await fetchJson(`${gw.url}/props?model=A`, { timeoutMs: 30_000 });
    assert.equal(props.status, 200, props.text);
    assert.equal(props.body.total_slots, 2, 'the engine\'s own props');
    assert.ok(props.body.default_generation_settings.n_ctx > 0, props.text);
    await waitStatus(gw, 'A', 'loaded');  // its load's end is noted a turn after it serves
    assert.equal((await fetchJson(`${gw.url}/props?model=A&autoload=false`)).status, 200, 'loaded now');
    const slots = await fetchJson(`${gw.url}/slots?model=A`);
    assert.equal(slots.status, 200, slots.text);
    assert.equal(slots.body.length, 2);
    expectError(assert, await fetchJson(`${gw.url}/slots`), 400, { messageIncludes: ["'model' is required", 'A, B'] });

    // A call beside generation (no slot) loads its model as a chat does.
    const tokens = await fetchJson(`${gw.url}/tokenize`, { body: { model: 'B', content: 'hello world' }, timeoutMs: 30_000 });
    assert.equal(tokens.status, 200, tokens.text);
    assert.ok(tokens.body.tokens.length > 0, tokens.text);
    await waitStatus(gw, 'B', 'loaded');
    await gw.stop();
  });

  test('a model whose engine sleeps when idle (llama-server --sleep-idle-seconds) shows sleeping, and its next request wakes it', async () => {
    // Scraped every 200 ms, an engine would never be idle for 1 s: the
    // gateway scrapes only an engine that works.
    const gw = await startGateway(box([onDemand('a', 'A', { extra: ' --sleep-idle-seconds 1' }), onDemand('b', 'B')],
      { health: { metrics_interval: '200ms' } }), { waitReady: false });
    assert.equal((await chat(gw, 'A')).status, 200);
    const { events, reading } = await modelEvents(gw, (seen) =>
      seen.some((e, i) => e.data.status === 'loaded' && seen.slice(0, i).some((s) => s.data.status === 'sleeping')));
    await waitStatus(gw, 'A', 'sleeping');
    assert.equal((await fetchJson(`${gw.url}/props?model=A&autoload=false`)).body.is_sleeping, true);
    assert.equal((await chat(gw, 'A')).status, 200);
    await reading;
    assert.deepEqual(events.map((e) => e.data.status).filter((s, i, all) => i === 0 || s !== all[i - 1]),
      ['sleeping', 'loading', 'loaded']);
    assert.ok(events.some((e) => e.data.progress), `the wake's progress: ${JSON.stringify(events)}`);
    assert.equal((await statuses(gw)).A.value, 'loaded');
    // Its own wake: not a load by the gateway, and the same engine.
    assert.equal(await metric(gw, 'switchyard_model_loads_total', { model: 'A', reason: 'request' }), 1);
    assert.deepEqual(gw.engines().map((e) => e.name), ['a']);
    await gw.stop();
  });

  test('without on-demand instances /v1/models still shows each model\'s status: an always-on engine asleep is sleeping', async () => {
    const { load, ttl, ...alwaysOn } = onDemand('a', 'A', { extra: ' --sleep-idle-seconds 1' });
    const gw = await startGateway(box([alwaysOn]), { waitReady: false });
    await waitStatus(gw, 'A', 'loaded');
    assert.equal((await chat(gw, 'A')).status, 200);
    await waitStatus(gw, 'A', 'sleeping');
    assert.equal((await chat(gw, 'A')).status, 200);
    await waitStatus(gw, 'A', 'loaded');
    await gw.stop();
  });

  test('ttl unloads a model with nothing to do', async () => {
    const gw = await startGateway(box([onDemand('a', 'A', { ttl: '1s' }), onDemand('b', 'B')]), { waitReady: false });
    assert.equal((await chat(gw, 'A')).status, 200);
    assert.equal((await statuses(gw)).A.value, 'loaded');
    await waitStatus(gw, 'A', 'unloaded', 10_000);
    assert.equal(await metric(gw, 'switchyard_model_unloads_total', { model: 'A', reason: 'ttl' }), 1);
    assert.deepEqual(gw.engines().map((e) => e.name), ['a']);
    await gw.stop();
  });

  test('a load that fails answers its waiters 503 at once and /v1/models says failed', async () => {
    const gw = await startGateway(box([onDemand('a', 'A'), onDemand('b', 'B', { extra: ' --no-such-flag' })]),
      { waitReady: false });
    const started = Date.now();
    const answers = await Promise.all([chat(gw, 'B'), chat(gw, 'B')]);
    for (const res of answers)
      expectError(assert, res, 503, { code: 'model_load_failed', messageIncludes: ["model 'B' failed to load", 'exited with status'] });
    assert.ok(Date.now() - started < 10_000, 'answered well before swapping.max_wait');
    const s = await statuses(gw);
    assert.equal(s.B.value, 'unloaded');
    assert.equal(s.B.failed, true);
    assert.equal(typeof s.B.exit_code, 'number');
    assert.notEqual(s.B.exit_code, 0);
    // The other model still loads.
    assert.equal((await chat(gw, 'A')).status, 200);
    await gw.stop();
  });
});

describe('a reload of the models config', { timeout: 90_000 }, () => {
  after(stopAll);

  test('an on-demand instance a reload adds to a box that had none loads on its first request', async () => {
    const always = {
      name: 'x', model: 'X', gpus: [1], slots: 1,
      command: '${SWITCHYARD} sim --port ${PORT} --slots 1 --alias X',
    };
    const config = box([always]);
    config.gpus.push({ id: 1, memory: '24GiB' });
    const gw = await startGateway(config);
    const mark = gw.reload(box([always, onDemand('a', 'A')], { gpus: config.gpus }));
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    assert.equal((await statuses(gw)).A.value, 'unloaded');
    const res = await chat(gw, 'A');
    assert.equal(res.status, 200, res.text);
    assert.equal((await statuses(gw)).A.value, 'loaded');
    assert.equal(await metric(gw, 'switchyard_model_loads_total', { model: 'A', reason: 'request' }), 1);
    await gw.stop();
  });

  test('a reload tells /models/sse listeners that the list changed (models_reload), as llama.cpp\'s router does', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    const { events, reading } = await modelEvents(gw, (seen) => seen.some((e) => e.event === 'models_reload'));
    const withC = box([onDemand('a', 'A'), onDemand('b', 'B'), onDemand('c', 'C')]);
    const mark = gw.reload(withC);
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    await reading;
    assert.deepEqual(events.at(-1), { event: 'models_reload', model: '*' });
    assert.equal((await statuses(gw)).C.value, 'unloaded', 'the list it would fetch again has C');
    await gw.stop();
  });

  test('a reload that gives the card more memory lets two models stay loaded together', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    assert.equal((await chat(gw, 'A')).status, 200);
    const mark = gw.reload(box(undefined, { gpus: [{ id: 0, memory: '48GiB' }] }));
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    assert.doesNotMatch(gw.output().slice(mark), /not applied until restart/);
    assert.equal((await chat(gw, 'B')).status, 200);
    const s = await statuses(gw);
    assert.equal(s.A.value, 'loaded', 'A stayed: both fit in 48 GiB');
    assert.equal(s.B.value, 'loaded');
    assert.equal(await metric(gw, 'switchyard_model_unloads_total', { model: 'A', reason: 'evicted' }), 0);
    // Taken back: B's next load has to make room again.
    const back = gw.reload(box());
    await gw.proc.waitForOutput(/config reloaded/, 10_000, back);
    assert.equal((await fetchJson(`${gw.url}/models/unload`, { body: { model: 'B' } })).status, 200);
    await waitStatus(gw, 'B', 'unloaded');
    assert.equal((await chat(gw, 'B')).status, 200);
    await waitStatus(gw, 'A', 'unloaded');
    assert.equal(await metric(gw, 'switchyard_model_unloads_total', { model: 'A', reason: 'evicted' }), 1);
    await gw.stop();
  });

  test('a copy of a loaded model a reload makes waits for the old copy to finish its stream', async () => {
    const gw = await startGateway(box(), { waitReady: false });
    const old = await streaming(gw, 'A');
    // A changed command: a new copy; the old one (16 of the 24 GiB) finishes its stream.
    const mark = gw.reload(box([onDemand('a', 'A', { extra: ' --seed 7' }), onDemand('b', 'B')]));
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    const next = chat(gw, 'A').then((r) => ({ ...r, at: Date.now() }));
    const first = await old.stream;
    const logAtEnd = gw.output().length;
    assert.ok(first.done && first.cleanEnd && !first.errorEvent, 'the old copy\'s stream ran to its end');
    const second = await next;
    assert.equal(second.status, 200, second.text);
    const starts = gw.engines().filter((e) => e.name === 'a');
    assert.equal(starts.length, 2);
    assert.ok(gw.output().indexOf(`started pid ${starts[1].pid}`) > logAtEnd,
      'the new copy started after the old one\'s stream ended');
    await gw.stop();
  });

  test('a reload that shortens swapping.max_wait applies to the next request held', async () => {
    const slow = [onDemand('a', 'A', { loadTime: 8 }), onDemand('b', 'B')];
    const gw = await startGateway(box(slow), { waitReady: false });
    const config = box(slow);
    config.swapping.max_wait = '1s';
    const mark = gw.reload(config);
    await gw.proc.waitForOutput(/config reloaded/, 10_000, mark);
    const started = Date.now();
    expectError(assert, await chat(gw, 'A'), 503, { messageIncludes: "'A'" });
    assert.ok(Date.now() - started < 6_000, 'refused after the new max_wait, not the old 20 s');
    await gw.stop();
  });
});

describe('models config errors', { timeout: 30_000 }, () => {
  test('an on-demand instance at a url is refused with file, line and field (exit 2)', async () => {
    const { runServe } = await import('./harness.mjs');
    const res = await runServe({
      instances: [{ name: 'a', model: 'A', url: 'http://127.0.0.1:9', load: 'on-demand' }],
    });
    assert.equal(res.code, 2, res.output);
    assert.match(res.output, /fleet\.yaml:\d+: instances\[0\]\.load: on-demand needs a 'command'/);
  });
});
