// The engines' /metrics, scraped every health.metrics_interval and served
// again on the gateway's /metrics with a switchyard_instance label; the live
// advisor's findings on those scrapes; and the generation rate measured from
// what streams through the gateway, not from the engine's counters.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { fetchJson, metricSum, metricValue, postStream, readSse, simInstance, startGateway, stopAll, waitUntil } from './harness.mjs';

const TIMEOUT = { timeout: 60_000 };

/** A llama.cpp sim (gpu0) and a vLLM sim (tp2), scraped every 200 ms. */
export function mixedFleet({ tokensPerSecond } = {}) {
  const tp2 = simInstance('tp2', 'qwen-vl', { slots: 2, extraArgs: ['--dialect', 'vllm'] });
  return {
    models: [{ name: 'qwen-27b', aliases: ['default'] }, { name: 'qwen-vl', aliases: [] }],
    instances: [simInstance('gpu0', 'qwen-27b', { slots: 1, speedFactor: tokensPerSecond ? 1 : 20, tokensPerSecond }), tp2],
    health: { metrics_interval: '200ms' },
  };
}

const metrics = async (gw) => (await fetchJson(`${gw.url}/metrics`)).text;

describe('engine metrics and the advisor', () => {
  after(stopAll);

  test('llamacpp:* and vllm:* are re-exported with switchyard_instance; an engine that dies drops out', TIMEOUT, async () => {
    const gw = await startGateway(mixedFleet());
    const text = await waitUntil(async () => {
      const t = await metrics(gw);
      return metricValue(t, 'llamacpp:prompt_tokens_total', { switchyard_instance: 'gpu0' }) !== undefined &&
        metricValue(t, 'vllm:num_requests_running', { switchyard_instance: 'tp2', model_name: 'qwen-vl' }) !== undefined && t;
    }, { timeoutMs: 10_000, what: 'both engines re-exported' });
    // Once each, families whole, nothing but the two engines' namespaces added.
    assert.equal(text.match(/^# TYPE llamacpp:prompt_tokens_total counter$/gm)?.length, 1);
    assert.equal(text.match(/^# TYPE vllm:time_to_first_token_seconds histogram$/gm)?.length, 1);
    assert.ok(metricValue(text, 'vllm:time_to_first_token_seconds_bucket', { switchyard_instance: 'tp2', le: '+Inf' }) !== undefined);
    assert.doesNotMatch(text, /^(?!switchyard_|llamacpp:|vllm:|#)\S+/m, 'only the gateway\'s and the engines\' series');

    // Requests show in the engine's own counters, seen through the gateway.
    const res = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'qwen-27b', max_tokens: 7, messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(res.status, 200);
    await waitUntil(async () => metricValue(await metrics(gw), 'llamacpp:tokens_predicted_total', { switchyard_instance: 'gpu0' }) === 7,
      { timeoutMs: 5000, what: 'tokens_predicted_total of gpu0 at 7' });

    gw.killEngine('gpu0');
    await waitUntil(async () => metricValue(await metrics(gw), 'llamacpp:prompt_tokens_total', { switchyard_instance: 'gpu0' }) === undefined,
      { timeoutMs: 10_000, what: 'gpu0\'s series gone once it is not ready' });
    await gw.stop();
  });

  test('the advisor reports a finding once, in /metrics and the log, and clears it when its instance goes', TIMEOUT, async () => {
    const gw = await startGateway(mixedFleet());
    // The vLLM sim's prefix cache is queried by a first request and has hit nothing.
    const res = await fetchJson(`${gw.url}/v1/chat/completions`, { body: { model: 'qwen-vl', max_tokens: 3, messages: [{ role: 'user', content: 'a prompt of a few words' }] } });
    assert.equal(res.status, 200);
    const labels = { check: 'backend.prefix_cache', instance: 'tp2', severity: 'warning' };
    await waitUntil(async () => metricValue(await metrics(gw), 'switchyard_advisor_finding', labels) === 1,
      { timeoutMs: 10_000, what: 'the prefix-cache finding on tp2' });
    // Still in force over the next scrapes (polls every 50 ms, scrapes every 200 ms), and logged once.
    let polls = 0;
    await waitUntil(async () => metricValue(await metrics(gw), 'switchyard_advisor_finding', labels) === 1 && ++polls >= 20,
      { timeoutMs: 10_000, what: 'the finding in force over several scrapes' });
    assert.equal(gw.output().match(/advisor: instance tp2: backend\.prefix_cache \(warning\)/g).length, 1, gw.output());

    gw.killEngine('tp2');
    await waitUntil(async () => metricValue(await metrics(gw), 'switchyard_advisor_finding', labels) === undefined,
      { timeoutMs: 10_000, what: 'the finding gone with its instance' });
    await gw.proc.waitForOutput(/advisor: instance tp2: backend\.prefix_cache cleared/, 5000);
    await gw.stop();
  });

  test('generation rate: measured from the stream while it runs', TIMEOUT, async () => {
    const gw = await startGateway(mixedFleet({ tokensPerSecond: 50 }));
    const stream = await postStream(`${gw.url}/v1/chat/completions`, { model: 'qwen-27b', max_tokens: 400, messages: [{ role: 'user', content: 'go on' }] });
    assert.equal(stream.status, 200);
    const reading = readSse(stream);
    const text = await waitUntil(async () => {
      const t = await metrics(gw);
      // The engine's own series lag by up to a scrape interval: wait for both.
      return metricValue(t, 'switchyard_generation_tokens_per_second', { instance: 'gpu0' }) > 0 &&
        metricValue(t, 'llamacpp:requests_processing', { switchyard_instance: 'gpu0' }) >= 1 && t;
    }, { timeoutMs: 10_000, what: 'a measured rate for gpu0 and its scrape showing the request' });
    const rate = metricValue(text, 'switchyard_generation_tokens_per_second', { instance: 'gpu0' });
    assert.ok(rate <= 50 * 1.5, `at most about the engine's speed, got ${rate}`);
    const status = (await fetchJson(`${gw.url}/health`)).body;
    assert.equal(status.status, 'ok');
    await reading;
    assert.equal(metricSum(await metrics(gw), 'switchyard_generation_tokens_per_second', { instance: 'tp2' }), 0);
    await gw.stop();
  });
});
