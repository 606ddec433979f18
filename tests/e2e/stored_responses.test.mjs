// Stored responses follow their instance (issue 30): two simulated vLLM
// servers that keep responses (VLLM_ENABLE_RESPONSES_API_STORE=1), each
// knowing only its own. A follow-up naming a response in
// previous_response_id, a retrieve and a cancel all reach the instance that
// made it, every time; another key does not find it; once a reload removes
// that instance, the gateway answers 404 naming the id.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { expectError, fetchJson, simInstance, startGateway, stopAll, waitUntil } from './harness.mjs';

const MODEL = 'qwen-27b';
const TIMEOUT = { timeout: 60_000 };
const keyed = (key) => ({ authorization: `Bearer ${key}` });
const A = keyed('sk-alice');
const B = keyed('sk-bob');

// Seeds of their own: the simulator draws its ids from its seed, and two
// engines never hand out the same id.
const storing = (name, i) => ({
  ...simInstance(name, MODEL, { slots: 2, speedFactor: 50, seed: i + 1, extraArgs: ['--dialect', 'vllm'] }),
  env: { VLLM_ENABLE_RESPONSES_API_STORE: '1' },
});
const config = (names) => ({
  models: [{ name: MODEL, aliases: ['coder'] }],
  instances: names.map(storing),
  api_keys: [{ key: 'sk-alice', name: 'alice' }, { key: 'sk-bob', name: 'bob' }],
});
const where = (res) => res.headers.get('x-switchyard-route')?.match(/instance=(\w+)/)?.[1];
const respond = (gw, body, headers = A) => fetchJson(`${gw.url}/v1/responses`,
  { headers, body: { model: 'coder', max_output_tokens: 4, ...body } });

describe('stored responses follow their instance', () => {
  let gw;
  before(async () => { gw = await startGateway(config(['gpu0', 'gpu1'])); });
  after(stopAll);

  test('each follow-up lands where its previous response is, and continues its conversation', TIMEOUT, async () => {
    // Responses made on both instances (the policy spreads them).
    const made = [];
    for (let i = 0; i < 6; ++i) {
      const r = await respond(gw, { input: `Conversation ${i}: start.` });
      assert.equal(r.status, 200, r.text);
      assert.match(r.body.id, /^resp_/);
      assert.equal(r.body.model, 'coder');
      made.push({ id: r.body.id, home: where(r), prompt: r.body.usage.input_tokens });
    }
    assert.deepEqual([...new Set(made.map((m) => m.home))].sort(), ['gpu0', 'gpu1'], 'both instances made some');
    for (const first of made) {
      let previous = first;
      for (let turn = 0; turn < 3; ++turn) {
        const r = await respond(gw, { input: 'And then?', previous_response_id: previous.id });
        assert.equal(r.status, 200, `a follow-up of ${previous.id}: ${r.text}`);
        assert.equal(where(r), first.home, 'the instance holding the conversation');
        // The engine prepended the stored conversation: the prompt grew.
        assert.ok(r.body.usage.input_tokens > previous.prompt, `prompt ${r.body.usage.input_tokens} after ${previous.prompt}`);
        previous = { id: r.body.id, prompt: r.body.usage.input_tokens };
      }
    }
  });

  test('retrieve, cancel and delete reach the instance; another key and an unknown id get 404', TIMEOUT, async () => {
    const made = await respond(gw, { input: 'Keep this one.' });
    assert.equal(made.status, 200, made.text);
    const url = `${gw.url}/v1/responses/${made.body.id}`;
    // Only the instance that made it has it: the other would answer 404.
    const got = await fetchJson(url, { headers: A });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.id, made.body.id);
    assert.equal(got.body.model, 'coder', 'the name the client asked for');
    // Whoever holds the id can read the response: the access log leaves it out.
    await waitUntil(() => /GET \/v1\/responses\/\* /.test(gw.output()), { what: 'the GET logged' });
    assert.ok(!gw.output().includes(`/v1/responses/${made.body.id}`), 'no response id in the log');
    // vLLM cancels only background responses, and serves no DELETE: its answers pass.
    const cancel = await fetchJson(`${url}/cancel`, { headers: A, body: {} });
    expectError(assert, cancel, 400, { messageIncludes: 'Cannot cancel a synchronous response' });
    assert.equal((await fetchJson(url, { headers: A, method: 'DELETE' })).status, 405);
    // Another key's response is not found: its id is all a stored response has.
    const other = await fetchJson(url, { headers: B });
    expectError(assert, other, 404, { messageIncludes: `Response with id '${made.body.id}' not found.` });
    assert.equal(other.body.error.param, 'response_id');
    expectError(assert, await fetchJson(`${gw.url}/v1/responses/resp_unknown`, { headers: A }), 404,
      { messageIncludes: "Response with id 'resp_unknown' not found." });
    // An id the gateway never relayed is the engine's to judge.
    const unknown = await respond(gw, { input: 'Go on.', previous_response_id: 'resp_never' });
    expectError(assert, unknown, 404, { messageIncludes: "Response with id 'resp_never' not found." });
  });

  test('a response whose instance a reload removed: 404 naming the id, not an answer without its context', TIMEOUT, async () => {
    // Four at once, so that the balancer spreads them over both instances
    // (one at a time, all could land on gpu0: the test then waited for its
    // timeout).
    const tries = await Promise.all([0, 1, 2, 3].map((i) => respond(gw, { input: `Conversation ${i} on gpu1, please.` })));
    const made = tries.find((r) => where(r) === 'gpu1');
    assert.ok(made, `one of four responses made at once on gpu1 (they went to ${tries.map(where)})`);
    gw.reload(config(['gpu0']));
    await waitUntil(async () => !(await fetchJson(`${gw.url}/health`, { headers: A })).body.instances.some((i) => i.name === 'gpu1'),
      { what: 'gpu1 removed' });
    const r = await respond(gw, { input: 'And then?', previous_response_id: made.body.id });
    expectError(assert, r, 404, { messageIncludes: `Response with id '${made.body.id}' not found.` });
    expectError(assert, await fetchJson(`${gw.url}/v1/responses/${made.body.id}`, { headers: A }), 404);
  });
});
