// The official `openai` npm client against the gateway: what real users and
// agent frameworks run. If the client parses it, types it and raises the
// right error classes, the gateway is OpenAI-compatible where it matters.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';

import { USER_MESSAGES, simFleet, simInstance, startGateway, stopAll, streamChat, waitUntil } from '../e2e/harness.mjs';

const MODEL = 'qwen-27b';
const KEY = 'sk-client-test';
const TIMEOUT = { timeout: 20_000 };

describe('openai client', () => {
  let gw;
  let client;
  before(async () => {
    gw = await startGateway({ ...simFleet({ count: 1, model: MODEL, aliases: ['default'], slots: 2, speedFactor: 20 }), api_keys: [KEY] });
    // No retries: a 503 or 5xx must show up as a failure, not be hidden.
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 15_000 });
  });
  after(stopAll);

  test('models.list() has the model and its alias', TIMEOUT, async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes(MODEL), `${MODEL} in ${ids}`);
    assert.ok(ids.includes('default'), `default in ${ids}`);
  });

  test('chat.completions.create, not streamed', TIMEOUT, async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'default', messages: USER_MESSAGES, max_tokens: 10 }).withResponse();
    assert.ok(response.headers.get('x-request-id'));
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, 'default', 'the name asked for');
    assert.equal(data.choices[0].message.role, 'assistant');
    assert.equal(typeof data.choices[0].message.content, 'string');
    assert.equal(data.choices[0].finish_reason, 'length');
    assert.equal(data.usage.completion_tokens, 10);
  });

  test('chat.completions.create streamed with include_usage', TIMEOUT, async () => {
    const stream = await client.chat.completions.create({
      model: MODEL, messages: USER_MESSAGES, stream: true, stream_options: { include_usage: true },
    });
    let contentChunks = 0;
    let text = '';
    let last;
    let finish;
    for await (const chunk of stream) {
      last = chunk;
      const choice = chunk.choices[0];
      if (choice?.delta?.content) {
        contentChunks += 1;
        text += choice.delta.content;
      }
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, 'stop');
    assert.ok(last.usage, 'the last chunk carries usage');
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, contentChunks);
    assert.ok(text.length > 0);
  });

  test('completions.create, not streamed', TIMEOUT, async () => {
    const res = await client.completions.create({ model: 'default', prompt: 'Once upon a time', max_tokens: 6 });
    assert.equal(res.object, 'text_completion');
    assert.equal(res.usage.completion_tokens, 6);
    assert.equal(typeof res.choices[0].text, 'string');
  });

  test('an unknown model raises NotFoundError', TIMEOUT, async () => {
    await assert.rejects(client.chat.completions.create({ model: 'gpt-17', messages: USER_MESSAGES }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `NotFoundError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      return true;
    });
  });

  test('bad messages raise BadRequestError', TIMEOUT, async () => {
    await assert.rejects(client.chat.completions.create({ model: MODEL, messages: 'x' }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 400);
      assert.match(e.message, /messages/);
      return true;
    });
  });

  // OpenAI's Responses API (what the Codex CLI and the Agents SDK speak), as
  // llama-server serves it behind the gateway.
  test('responses.create, not streamed', TIMEOUT, async () => {
    const res = await client.responses.create({
      model: 'default', instructions: 'Be brief.', input: 'Say something.', max_output_tokens: 7,
    });
    assert.equal(res.object, 'response');
    assert.equal(res.status, 'completed');
    assert.equal(res.model, 'default', 'the name asked for');
    assert.equal(res.usage.output_tokens, 7);
    assert.ok(res.usage.input_tokens > 0);
    assert.equal(typeof res.output_text, 'string');
    assert.ok(res.output_text.length > 0);
  });

  test('responses.create streamed: named events, the model and usage in response.completed', TIMEOUT, async () => {
    const stream = await client.responses.create({
      model: 'default', input: [{ role: 'user', content: 'Say something.' }], max_output_tokens: 5, stream: true,
    });
    const types = [];
    let text = '';
    let completed;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(types.filter((t) => t === 'response.output_text.delta').length, 5);
    assert.equal(completed.model, 'default');
    assert.equal(completed.usage.output_tokens, 5);
    assert.equal(completed.output[0].content[0].text, text);
  });

  test('responses.create: a bad input raises BadRequestError naming it', TIMEOUT, async () => {
    await assert.rejects(client.responses.create({ model: MODEL, input: 5 }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.param, 'input');
      assert.match(e.message, /'input'/);
      return true;
    });
    // llama-server keeps no responses: its own 400 passes through.
    await assert.rejects(client.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_1' }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.match(e.message, /previous_response_id/);
      return true;
    });
  });

  test('audio.transcriptions.create with the alias: the same audio, the same text; no file is 400', TIMEOUT, async () => {
    const audio = Buffer.alloc(64 * 1024, 7);
    const heard = await client.audio.transcriptions.create({ model: 'default', file: await toFile(audio, 'a.wav') });
    assert.ok(heard.text.length > 0);
    const again = await client.audio.translations.create({ model: 'default', file: await toFile(audio, 'b.wav') });
    assert.equal(again.text, heard.text);
    const plain = await client.audio.transcriptions.create({
      model: MODEL, file: await toFile(audio, 'a.wav'), response_format: 'text',
    });
    assert.equal(String(plain).trim(), heard.text);
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: (() => {
        const f = new FormData();
        f.append('model', 'default');
        return f;
      })(),
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'file');
  });

  test('a wrong API key raises AuthenticationError', TIMEOUT, async () => {
    const wrong = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0, timeout: 5_000 });
    await assert.rejects(wrong.models.list(), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `AuthenticationError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 401);
      return true;
    });
    await assert.rejects(wrong.chat.completions.create({ model: MODEL, messages: USER_MESSAGES }), OpenAI.AuthenticationError);
  });
});

describe('openai client against vLLM servers that keep responses', () => {
  let client;
  before(async () => {
    const storing = (name, seed) => ({
      ...simInstance(name, MODEL, { slots: 2, speedFactor: 20, seed, extraArgs: ['--dialect', 'vllm'] }),
      env: { VLLM_ENABLE_RESPONSES_API_STORE: '1' },
    });
    const gw = await startGateway({ models: [{ name: MODEL, aliases: [] }], instances: [storing('v0', 1), storing('v1', 2)], api_keys: [KEY] });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 15_000 });
  });
  after(stopAll);

  test('responses.retrieve and follow-ups by previous_response_id, whichever instance made it', TIMEOUT, async () => {
    for (let i = 0; i < 4; ++i) {
      const first = await client.responses.create({ model: MODEL, input: `Topic ${i}.`, max_output_tokens: 4 });
      const next = await client.responses.create({ model: MODEL, input: 'More.', previous_response_id: first.id, max_output_tokens: 4 });
      assert.ok(next.usage.input_tokens > first.usage.input_tokens, 'the stored conversation came first');
      const got = await client.responses.retrieve(next.id);
      assert.equal(got.id, next.id);
      assert.equal(got.output_text, next.output_text);
    }
    await assert.rejects(client.responses.retrieve('resp_nowhere'), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `NotFoundError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.match(e.message, /resp_nowhere/);
      return true;
    });
  });
});

describe('openai client against a full queue', () => {
  let gw;
  let client;
  before(async () => {
    // One slow one-slot engine and no waiting at all (max_length 0): while a
    // stream holds the slot, any other request is refused with 429.
    gw = await startGateway({
      ...simFleet({ count: 1, model: MODEL, speedFactor: 1, tokensPerSecond: 20 }),
      queue: { max_length: 0 },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 15_000 });
  });
  after(stopAll);

  test('a full queue raises RateLimitError with Retry-After', TIMEOUT, async () => {
    const holder = new AbortController();
    // Read two events, then leave the stream open: it holds the slot for ~100 s.
    const held = await streamChat(gw.url, { model: MODEL, maxTokens: 2000, signal: holder.signal, onEvent: (_, seen) => seen.length < 2 });
    assert.equal(held.status, 200);
    try {
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 }), (e) => {
        assert.ok(e instanceof OpenAI.RateLimitError, `RateLimitError, got ${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.status, 429);
        assert.equal(e.code, 'queue_full');
        assert.equal(e.type, 'rate_limit_error');
        assert.ok(Number(e.headers.get('retry-after')) > 0, 'Retry-After');
        return true;
      });
    } finally {
      holder.abort();
    }
    // With the slot free again (no queue to wait in: wait for it) the same client is served.
    await waitUntil(async () => (await gw.health()).instances[0].in_flight === 0, { what: 'the slot freed' });
    const ok = await client.chat.completions.create({ model: MODEL, messages: USER_MESSAGES, max_tokens: 2 });
    assert.equal(ok.usage.completion_tokens, 2);
  });
});
