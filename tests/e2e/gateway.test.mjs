// The gateway's straight path over supervised sims: OpenAI endpoints streamed
// and not, aliases, the tokenizer, /v1/models, /health, /metrics, and every
// way a request can be malformed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  USER_MESSAGES, expectError, fetchJson, metricValue, parseRawResponse, postStream, rawConnect, readSse,
  simFleet, startGateway, stopAll, streamContent, within,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 20_000 };

describe('gateway over two sims', () => {
  let gw;
  const api = (p) => `${gw.url}${p}`;
  // Tokens counted by the engine, via the gateway: the check that the relay
  // neither drops nor duplicates content.
  const tokenCount = async (text) => (await fetchJson(api('/tokenize'), { body: { model: MODEL, content: text } })).body.tokens.length;

  before(async () => {
    gw = await startGateway({ ...simFleet({ count: 2, model: MODEL, aliases: ['default'], speedFactor: 20 }), body_limit: '64KiB' });
  });
  after(stopAll);

  test('non-streamed chat through an alias answers with the name the client asked for', TIMEOUT, async () => {
    const res = await fetchJson(api('/v1/chat/completions'), { body: { model: 'default', messages: USER_MESSAGES, max_tokens: 12 } });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    assert.ok(res.headers.get('x-request-id'), 'X-Request-Id');
    assert.equal(res.body.object, 'chat.completion');
    assert.equal(res.body.model, 'default');
    const { message, finish_reason: finish } = res.body.choices[0];
    assert.equal(message.role, 'assistant');
    assert.equal(typeof message.content, 'string');
    assert.equal(finish, 'length');
    assert.equal(res.body.usage.completion_tokens, 12);
    assert.equal(await tokenCount(message.content), 12);
  });

  test('streamed chat: SSE framing, role first, finish, usage, [DONE]; token counts agree', TIMEOUT, async () => {
    const res = await postStream(api('/v1/chat/completions'),
      { model: 'default', messages: USER_MESSAGES, stream_options: { include_usage: true } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    assert.ok(res.headers.get('x-request-id'), 'X-Request-Id');

    const { raw, events } = await readSse(res);
    assert.match(raw, /^(data: [^\n]+\n\n)+$/, 'every event is one `data: ` line and a blank line');
    assert.equal(events.at(-1).data, '[DONE]');
    const chunks = events.slice(0, -1).map((e) => e.json);
    for (const c of chunks) {
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.model, 'default', 'the name asked for in every chunk');
    }
    assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'role chunk first');
    const usageChunk = chunks.at(-1);
    assert.deepEqual(usageChunk.choices, [], 'usage chunk has no choices');
    const finishChunk = chunks.at(-2);
    assert.equal(finishChunk.choices[0].finish_reason, 'stop', 'no max_tokens: the engine stops on its own');
    assert.deepEqual(finishChunk.choices[0].delta, {});

    const content = streamContent(events);
    const { completion_tokens: completion } = usageChunk.usage;
    assert.ok(completion >= 16 && completion <= 128, `16..128 tokens, got ${completion}`);
    assert.equal(content.count, completion, 'one content chunk per token');
    assert.equal(await tokenCount(content.text), completion, '/tokenize of the streamed text');
  });

  test('streamed chat without include_usage has no usage chunk', TIMEOUT, async () => {
    const res = await postStream(api('/v1/chat/completions'), { model: MODEL, messages: USER_MESSAGES, max_tokens: 5 });
    const { events } = await readSse(res);
    assert.equal(events.at(-1).data, '[DONE]');
    assert.ok(events.slice(0, -1).every((e) => e.json.choices.length === 1), 'no choices:[] usage chunk');
    assert.equal(streamContent(events).count, 5);
  });

  test('completions, streamed and not', TIMEOUT, async () => {
    const plain = await fetchJson(api('/v1/completions'), { body: { model: 'default', prompt: 'Once upon a time', max_tokens: 9 } });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.body.object, 'text_completion');
    assert.equal(plain.body.model, 'default');
    assert.equal(plain.body.usage.completion_tokens, 9);
    assert.equal(await tokenCount(plain.body.choices[0].text), 9);

    const res = await postStream(api('/v1/completions'), { model: 'default', prompt: 'Once upon a time', max_tokens: 11 });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const { raw, events } = await readSse(res);
    assert.match(raw, /^(data: [^\n]+\n\n)+$/);
    assert.equal(events.at(-1).data, '[DONE]');
    const last = events.at(-2).json;
    assert.equal(last.choices[0].finish_reason, 'length');
    const content = streamContent(events);
    assert.equal(content.count, last.usage.completion_tokens);
    assert.equal(content.count, 11);
    assert.equal(await tokenCount(content.text), 11);
  });

  test('/v1/models lists the model and its alias', TIMEOUT, async () => {
    const res = await fetchJson(api('/v1/models'));
    assert.equal(res.status, 200);
    assert.equal(res.body.object, 'list');
    const byId = Object.fromEntries(res.body.data.map((m) => [m.id, m]));
    assert.equal(byId[MODEL]?.object, 'model');
    assert.deepEqual(byId[MODEL].aliases, ['default']);
    assert.equal(byId.default?.alias_of, MODEL);
    assert.equal(res.body.data.length, 2);
    // llama.cpp router mode's status, with always-on instances too.
    assert.deepEqual(byId[MODEL].status, { value: 'loaded', args: [] });
    assert.deepEqual(byId.default.status, { value: 'loaded', args: [] });
  });

  test('/tokenize and /detokenize round-trip through the gateway', TIMEOUT, async () => {
    const tok = await fetchJson(api('/tokenize'), { body: { model: 'default', content: 'Once upon a time' } });
    assert.equal(tok.status, 200, tok.text);
    assert.ok(tok.body.tokens.length >= 4 && tok.body.tokens.every(Number.isInteger), tok.text);
    const detok = await fetchJson(api('/detokenize'), { body: { model: 'default', tokens: tok.body.tokens } });
    assert.equal(detok.status, 200, detok.text);
    assert.equal(detok.body.content.trim(), 'Once upon a time');
  });

  test('/health reports the instances', TIMEOUT, async () => {
    const res = await fetchJson(api('/health'));
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'ok');
    assert.equal(res.body.instances.length, 2);
    for (const i of res.body.instances) {
      assert.deepEqual(Object.keys(i).sort(), ['admin', 'gpus', 'in_flight', 'model', 'name', 'slots', 'state', 'url']);
      assert.equal(i.model, MODEL);
      assert.equal(i.state, 'ready');
      assert.equal(i.slots, 1);
      assert.equal(i.in_flight, 0);
      assert.match(i.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    }
  });

  test('/metrics: the families are there and requests are counted', TIMEOUT, async () => {
    const before = (await fetchJson(api('/metrics'))).text;
    const count = (text) => ['gpu0', 'gpu1'].reduce((n, instance) =>
      n + (metricValue(text, 'switchyard_requests_total', { model: MODEL, instance, status: 200 }) ?? 0), 0);
    const chat = await fetchJson(api('/v1/chat/completions'), { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 3 } });
    assert.equal(chat.status, 200);
    const res = await fetchJson(api('/metrics'));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain/);
    assert.equal(count(res.text), count(before) + 1, 'the chat request is counted once');
    for (const family of ['switchyard_requests_total', 'switchyard_instance_in_flight', 'switchyard_instance_up',
      'switchyard_time_to_first_byte_seconds', 'switchyard_request_duration_seconds'])
      assert.match(res.text, new RegExp(`^# TYPE ${family} `, 'm'), `${family} declared`);
    assert.equal(metricValue(res.text, 'switchyard_instance_up', { instance: 'gpu0' }), 1);
    assert.equal(metricValue(res.text, 'switchyard_instance_in_flight', { instance: 'gpu0' }), 0);
    assert.ok(metricValue(res.text, 'switchyard_request_duration_seconds_count') >= 1);
    assert.ok(metricValue(res.text, 'switchyard_time_to_first_byte_seconds_count') >= 1);
  });

  describe('bad requests', () => {
    const chat = (body, headers) => fetchJson(api('/v1/chat/completions'), { body, headers });

    test('malformed JSON is a 400', TIMEOUT, async () => {
      expectError(assert, await chat('{"model": "qwen-27b", "messages": ['), 400, { type: 'invalid_request_error' });
      expectError(assert, await chat(''), 400);
      expectError(assert, await chat('[1, 2]'), 400, { messageIncludes: 'object' });
    });

    test('wrong-typed and missing fields are 400s that name the field', TIMEOUT, async () => {
      expectError(assert, await chat({ model: MODEL, messages: 'x' }), 400, { messageIncludes: 'messages' });
      expectError(assert, await chat({ model: 5, messages: USER_MESSAGES }), 400, { messageIncludes: 'model' });
      expectError(assert, await chat({ model: MODEL, messages: USER_MESSAGES, stream: 'yes' }), 400, { messageIncludes: 'stream' });
      expectError(assert, await chat({ model: MODEL, messages: USER_MESSAGES, max_tokens: '10' }), 400, { messageIncludes: 'max_tokens' });
      expectError(assert, await chat({ model: MODEL }), 400, { messageIncludes: 'messages' });
      expectError(assert, await chat({ model: MODEL, messages: [] }), 400, { messageIncludes: 'messages' });
      // Without a model: the one behind the 'default' alias, as llama-server serves its one model.
      assert.equal((await chat({ messages: USER_MESSAGES, max_tokens: 2 })).status, 200);
      expectError(assert, await fetchJson(api('/v1/completions'), { body: { model: MODEL } }), 400, { messageIncludes: 'prompt' });
      expectError(assert, await fetchJson(api('/tokenize'), { body: { model: MODEL, content: 7 } }), 400, { messageIncludes: 'content' });
    });

    test('an unknown model is a 404 listing the served models', TIMEOUT, async () => {
      expectError(assert, await chat({ model: 'gpt-17', messages: USER_MESSAGES }), 404,
        { code: 'model_not_found', messageIncludes: ['gpt-17', MODEL, 'default'] });
    });

    test('an unknown path is a 404; a wrong method a 405 with Allow', TIMEOUT, async () => {
      expectError(assert, await fetchJson(api('/v1/nope'), { body: {} }), 404);
      const wrong = await fetchJson(api('/v1/chat/completions'));
      expectError(assert, wrong, 405);
      assert.equal(wrong.headers.get('allow'), 'POST');
      const wrong2 = await fetchJson(api('/v1/models'), { body: {} });
      expectError(assert, wrong2, 405);
      assert.equal(wrong2.headers.get('allow'), 'GET');
    });

    test('invalid UTF-8 is a 400', TIMEOUT, async () => {
      const body = Buffer.concat([Buffer.from('{"model":"qwen-27b","messages":[{"role":"user","content":"'),
        Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]);
      expectError(assert, await chat(body), 400, { messageIncludes: 'UTF-8' });
    });

    test('a Content-Length over body_limit is a 413 before any body is sent', TIMEOUT, async () => {
      const conn = await rawConnect(gw.port);
      await conn.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100000000000\r\n\r\n');
      await conn.waitFor(/\r\n\r\n[\s\S]*\}\}/);
      const res = parseRawResponse(conn.text());
      assert.equal(res.status, 413, conn.text());
      assert.equal(res.json?.error?.code, 'request_too_large', conn.text());
      await conn.closed;  // the gateway does not wait for the body it refused
    });

    test('Expect: 100-continue gets a 100 before the body, then the answer', TIMEOUT, async () => {
      const body = JSON.stringify({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 });
      const conn = await rawConnect(gw.port);
      await conn.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Expect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
      await conn.waitFor(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
      await conn.write(body);
      await conn.closed;
      const res = parseRawResponse(conn.text().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''));
      assert.equal(res.status, 200, conn.text());
      assert.equal(res.json.usage.completion_tokens, 2);

      // Over the limit: a 413, and no 100 to invite the body.
      const big = await rawConnect(gw.port);
      await big.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n');
      await big.closed;
      assert.match(big.text(), /^HTTP\/1\.1 413 /);
    });

    test('HTTP/1.0 clients: keep-alive when asked, and a stream ends with the connection, not chunked', TIMEOUT, async () => {
      const body = JSON.stringify({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 });
      const request = (extra) => `POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n${extra}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      const kept = await rawConnect(gw.port);
      await kept.write(request('Connection: keep-alive\r\n'));
      await kept.waitFor(/"completion_tokens":2/);
      assert.match(kept.text(), /^HTTP\/1\.0 200 OK\r\n/);
      assert.match(kept.text(), /\r\nConnection: keep-alive\r\n/i);
      kept.destroy();

      const streamBody = JSON.stringify({ model: MODEL, messages: USER_MESSAGES, max_tokens: 3, stream: true });
      const conn = await rawConnect(gw.port);
      await conn.write(`POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(streamBody)}\r\n\r\n${streamBody}`);
      await conn.closed;
      const text = conn.text();
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      assert.match(head, /^HTTP\/1\.0 200 OK/);
      assert.doesNotMatch(head, /transfer-encoding/i);
      const events = text.slice(head.length + 4).split('\n\n').filter((e) => e.startsWith('data: '));
      assert.equal(events.at(-1), 'data: [DONE]');
      assert.ok(events.length >= 4, text);  // role, 3 tokens at least, [DONE]
    });

    test('every response carries X-Request-Id, errors included', TIMEOUT, async () => {
      const cases = {
        ok: await fetchJson(api('/v1/models')),
        health: await fetchJson(api('/health')),
        bad_json: await chat('{'),
        unknown_model: await chat({ model: 'gpt-17', messages: USER_MESSAGES }),
        unknown_path: await fetchJson(api('/v1/nope')),
        wrong_method: await fetchJson(api('/v1/chat/completions')),
      };
      const conn = await rawConnect(gw.port);
      await conn.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000\r\n\r\n');
      await conn.closed;
      const tooLarge = parseRawResponse(conn.text());
      cases.too_large = { status: tooLarge.status, headers: new Headers(tooLarge.headers) };
      const missing = Object.entries(cases).filter(([, r]) => !r.headers.get('x-request-id')).map(([k, r]) => `${k} (${r.status})`);
      assert.deepEqual(missing, [], 'responses without X-Request-Id');
      // A sane client-chosen id is kept, for tracing across services.
      const echoed = await fetchJson(api('/v1/chat/completions'),
        { body: { model: MODEL, messages: USER_MESSAGES, max_tokens: 1 }, headers: { 'x-request-id': 'trace-abc.123' } });
      assert.equal(echoed.headers.get('x-request-id'), 'trace-abc.123');
    });
  });
});

describe('gateway client timeouts', () => {
  let gw;
  before(async () => {
    gw = await startGateway({ ...simFleet({ count: 1 }), timeouts: { client_header: '500ms', client_body: '500ms' } });
  });
  after(stopAll);

  test('a client that stalls mid-headers gets a 408 and is disconnected', TIMEOUT, async () => {
    const conn = await rawConnect(gw.port);
    const t0 = Date.now();
    await conn.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Ty');
    assert.ok(await within(conn.closed.then(() => true), 5000), `still connected after 5 s; received ${JSON.stringify(conn.text())}`);
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 400, `not before the timeout (${elapsed} ms)`);
    assert.match(conn.text(), /^HTTP\/1\.1 408 /);
  });

  test('a client that stalls mid-body gets a 408 and is disconnected', TIMEOUT, async () => {
    const conn = await rawConnect(gw.port);
    await conn.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"model":');
    assert.ok(await within(conn.closed.then(() => true), 5000), `still connected after 5 s; received ${JSON.stringify(conn.text())}`);
    assert.match(conn.text(), /^HTTP\/1\.1 408 /);
  });

  test('an idle keep-alive connection is closed quietly', TIMEOUT, async () => {
    const conn = await rawConnect(gw.port);
    assert.ok(await within(conn.closed.then(() => true), 5000), 'still connected after 5 s');
    assert.equal(conn.text(), '', 'nothing is owed to a client that sent nothing');
  });
});
