// The official `@anthropic-ai/sdk` client against the gateway's /v1/messages:
// what Claude Code and Anthropic-based agents run. A body Anthropic's API
// refuses is refused here too, before an engine runs, with the error the
// client raises for it (BadRequestError, ContentTooLargeError) and the
// field named.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

import { simFleet, startGateway, stopAll } from '../e2e/harness.mjs';

const MODEL = 'qwen-27b';
const KEY = 'sk-anthropic-client-test';
const TIMEOUT = { timeout: 20_000 };
const USER = [{ role: 'user', content: 'Say something.' }];

describe('anthropic client', () => {
  let client;
  before(async () => {
    const gw = await startGateway({
      ...simFleet({ count: 1, model: MODEL, slots: 2, speedFactor: 20 }), api_keys: [KEY], body_limit: '64KiB',
    });
    client = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0, timeout: 15_000 });
  });
  after(stopAll);

  /** The error a create() rejects with; fails the test when it resolves. */
  async function refusal(params) {
    try {
      await client.messages.create(params);
    } catch (e) {
      return e;
    }
    assert.fail(`accepted: ${JSON.stringify(params).slice(0, 200)}`);
  }

  /** A 400 invalid_request_error in Anthropic's shape whose message names `field`. */
  function assertInvalid(e, field) {
    assert.ok(e instanceof Anthropic.BadRequestError, `${e}`);
    assert.equal(e.status, 400);
    assert.equal(e.error?.type, 'error');
    assert.equal(e.error?.error?.type, 'invalid_request_error');
    assert.ok(e.error?.error?.message.includes(`'${field}'`), e.error?.error?.message);
  }

  test('messages.create with max_tokens runs', TIMEOUT, async () => {
    const msg = await client.messages.create({ model: MODEL, max_tokens: 8, messages: USER });
    assert.equal(msg.type, 'message');
    assert.equal(msg.role, 'assistant');
    assert.equal(msg.stop_reason, 'max_tokens');
    assert.equal(msg.usage.output_tokens, 8);
  });

  test('messages.stream with a system prompt as blocks and a tool turn runs', TIMEOUT, async () => {
    const stream = client.messages.stream({
      model: MODEL, max_tokens: 6,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'List the files.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { cmd: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.c' }] },
      ],
    });
    const msg = await stream.finalMessage();
    assert.equal(msg.usage.output_tokens, 6);
  });

  // Claude Code (2.1.154 on) puts its context in a system message after the
  // user's turn, on every request: the gateway must let it through.
  test('a mid-conversation system message, as Claude Code sends one, runs', TIMEOUT, async () => {
    const msg = await client.messages.create({
      model: MODEL, max_tokens: 4, system: 'You are a coding agent.',
      messages: [
        { role: 'user', content: 'Say hi.' },
        { role: 'system', content: [{ type: 'text', text: 'Available agents: none.' }] },
      ],
    });
    assert.equal(msg.usage.output_tokens, 4);
    const counted = await client.messages.countTokens({
      model: MODEL, messages: [{ role: 'user', content: 'Say hi.' }, { role: 'system', content: 'Skills: none.' }],
    });
    assert.ok(counted.input_tokens > 0);
  });

  test('without max_tokens: 400 naming it, as Anthropic answers', TIMEOUT, async () => {
    assertInvalid(await refusal({ model: MODEL, messages: USER }), 'max_tokens');
  });

  test('max_tokens 0, -1 or a string: 400 naming it', TIMEOUT, async () => {
    for (const max_tokens of [0, -1, '8']) {
      assertInvalid(await refusal({ model: MODEL, max_tokens, messages: USER }), 'max_tokens');
    }
  });

  test('an unknown role, a message without content, an unknown block type: 400 naming the field', TIMEOUT, async () => {
    assertInvalid(await refusal({ model: MODEL, max_tokens: 8, messages: [{ role: 'tool', content: 'x' }] }),
      'messages.0.role');
    assertInvalid(await refusal({ model: MODEL, max_tokens: 8, messages: [{ role: 'user' }] }), 'messages.0.content');
    assertInvalid(await refusal({
      model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'txt', text: 'x' }] }],
    }), 'messages.0.content.0.type');
  });

  test('a body over body_limit: the gateway\'s own 413 in Anthropic\'s shape', TIMEOUT, async () => {
    const e = await refusal({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(80_000) }] });
    assert.equal(e.status, 413, `${e}`);
    assert.equal(e.error?.type, 'error');
    assert.equal(e.error?.error?.type, 'request_too_large');
  });
});
