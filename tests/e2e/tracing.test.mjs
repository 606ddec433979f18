// Traces over OTLP/HTTP (docs/tracing.md): a small OTLP receiver on loopback
// decodes what the gateway exports; JSON logs carry the same trace ids; the
// simulator (vLLM dialect) logs the traceparent the gateway sent it; with the
// receiver gone requests are unaffected and the spans are counted as dropped.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import {
  USER_MESSAGES, fetchJson, metricValue, postStream, readSse, startGateway, startSim, stopAll, waitUntil,
} from './harness.mjs';

const TIMEOUT = { timeout: 30_000 };
const MODEL = 'qwen-27b';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

/** An OTLP/HTTP JSON receiver: POST /v1/traces; `spans()` lists every span with its resource. */
async function startReceiver() {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.startsWith('application/json')) {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body);
      for (const rs of request.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const ss of rs.scopeSpans) for (const span of ss.spans) received.push({ service, ...span });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    spans: () => received,
    close: () => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); }),
  };
}

const attr = (span, key) => {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue);
};

async function fleet(sim, tracing) {
  return startGateway({
    models: [{ name: MODEL }],
    instances: [{ name: 'v0', model: MODEL, url: sim.url, slots: 2 }],
    tracing,
    log: { format: 'json' },
  });
}

describe('tracing', () => {
  let receiver;
  after(stopAll);
  afterEach(async () => { await stopAll(); await receiver?.close(); receiver = undefined; });

  test('one trace per request, with its spans, the client\'s trace id, and the engine as a child', TIMEOUT, async () => {
    receiver = await startReceiver();
    const sim = await startSim({ speedFactor: 100, alias: MODEL }, ['--dialect', 'vllm']);
    const gw = await fleet(sim, { endpoint: receiver.url, service_name: 'e2e-gateway' });

    const res = await postStream(`${gw.url}/v1/chat/completions`,
      { model: MODEL, messages: USER_MESSAGES, max_tokens: 4, ignore_eos: true },
      { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } });
    assert.equal(res.status, 200);
    await readSse(res);
    const plain = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 4 } });
    assert.equal(plain.status, 200, plain.text);

    const roots = () => receiver.spans().filter((s) => s.kind === 2);
    await waitUntil(() => roots().length >= 2, { timeoutMs: 10_000, what: 'two root spans exported' });
    assert.equal(roots().length, 2, 'one trace per request');
    const traces = new Set(roots().map((s) => s.traceId));
    assert.equal(traces.size, 2);
    assert.ok(traces.has(CLIENT_TRACE), 'the client\'s trace is continued');

    const spans = receiver.spans().filter((s) => s.traceId === CLIENT_TRACE);
    const root = spans.find((s) => s.kind === 2);
    assert.equal(root.parentSpanId, CLIENT_SPAN);
    assert.equal(root.service, 'e2e-gateway');
    assert.equal(root.name, `chat ${MODEL}`);
    assert.equal(attr(root, 'gen_ai.operation.name'), 'chat');
    assert.equal(attr(root, 'gen_ai.request.model'), MODEL);
    assert.equal(attr(root, 'gen_ai.request.max_tokens'), '4');
    assert.equal(attr(root, 'gen_ai.usage.output_tokens'), '4');
    assert.ok(Number(attr(root, 'gen_ai.usage.input_tokens')) > 0);
    assert.equal(attr(root, 'switchyard.instance'), 'v0');
    assert.equal(attr(root, 'switchyard.retries'), '0');
    assert.deepEqual(root.events.map((e) => e.name), ['first_token']);
    const attempts = spans.filter((s) => s.name === 'switchyard.attempt');
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0].parentSpanId, root.spanId);
    assert.equal(attempts[0].kind, 3);
    assert.equal(attr(attempts[0], 'server.address'), '127.0.0.1');

    // The engine was handed the attempt as its parent.
    await sim.proc.waitForOutput(new RegExp(`traceparent=00-${CLIENT_TRACE}-${attempts[0].spanId}-01`));

    // The JSON access lines name the same traces.
    const access = () => gw.output().split('\n').filter((l) => l.includes('"event":"access"'))
      .map((l) => JSON.parse(l)).filter((a) => a.target === '/v1/chat/completions');
    await waitUntil(() => access().length >= 2, { what: 'two access lines' });
    const lines = access();
    assert.deepEqual(new Set(lines.map((a) => a.trace_id)), traces);
    assert.equal(lines[0].status, 200);
    assert.equal(lines[0].model, MODEL);
    assert.ok(lines[0].time && lines[0].level === 'info');
  });

  test('with the receiver down requests are unaffected; the spans are dropped and counted', TIMEOUT, async () => {
    receiver = await startReceiver();
    const down = receiver.url;
    await receiver.close();  // nothing listens there now
    receiver = undefined;
    const sim = await startSim({ speedFactor: 100, alias: MODEL }, ['--dialect', 'vllm']);
    const gw = await fleet(sim, { endpoint: down });
    for (let i = 0; i < 5; i++) {
      const r = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 2 }, timeoutMs: 5000 });
      assert.equal(r.status, 200, r.text);
    }
    const dropped = async () => metricValue((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_trace_spans_dropped_total');
    await waitUntil(async () => (await dropped()) >= 10, { timeoutMs: 10_000, what: 'spans counted as dropped' });
    const warned = gw.output().split('\n').filter((l) => l.includes('tracing: export to'));
    assert.equal(warned.length, 1, `logged once:\n${warned.join('\n')}`);
    assert.equal(JSON.parse(warned[0]).level, 'warning');
  });
});
