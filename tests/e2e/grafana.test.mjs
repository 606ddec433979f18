// deploy/grafana/switchyard.json asks only for series a live gateway serves:
// every metric name in every panel query is on /metrics of a gateway in
// front of a llama.cpp and a vLLM engine once it has served some traffic.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { REPO, fetchJson, metricValue, simInstance, startGateway, stopAll, waitUntil } from './harness.mjs';

// PromQL words that are not metric names.
const PROMQL = new Set(['sum', 'avg', 'min', 'max', 'count', 'rate', 'irate', 'increase', 'delta', 'histogram_quantile',
  'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'offset', 'clamp_min', 'clamp_max',
  'topk', 'bottomk', 'abs', 'time', 'vector', 'scalar', 'label_replace', 'max_over_time', 'avg_over_time']);

/** The metric names a PromQL expression selects. */
export function metricNames(expr) {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '')                       // strings
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '')   // label lists
    .replace(/\{[^}]*\}/g, '')                                // matchers
    .replace(/\[[^\]]*\]/g, '');                              // ranges
  return [...bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)].map((m) => m[0]).filter((w) => !PROMQL.has(w));
}

function dashboardQueries() {
  const dash = JSON.parse(fs.readFileSync(path.join(REPO, 'deploy/grafana/switchyard.json'), 'utf8'));
  const queries = [];
  const walk = (panels) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) queries.push({ panel: p.title, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dash.panels);
  return queries;
}

/** The sample names present on a /metrics page. */
function seriesNames(text) {
  return new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.match(/^[^{\s]+/)[0]));
}

describe('Grafana dashboard', () => {
  after(stopAll);

  test('the name extraction reads PromQL as Prometheus does', () => {
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="sum"}[5m]))) / on (i) b:c'), ['a_bucket', 'b:c']);
  });

  test('every metric a panel queries is on a live gateway\'s /metrics', { timeout: 90_000 }, async () => {
    const queries = dashboardQueries();
    assert.ok(queries.length >= 10, 'the dashboard has its panels');
    const gw = await startGateway({
      models: [{ name: 'qwen-27b', aliases: ['default'] }, { name: 'qwen-vl', aliases: [] }],
      instances: [
        simInstance('gpu0', 'qwen-27b', { slots: 1 }),
        // Fails its first request before the first byte: a retry on gpu0.
        simInstance('gpu1', 'qwen-27b', { slots: 1, extraArgs: ['--fail-before-first-byte', 1] }),
        simInstance('tp2', 'qwen-vl', { slots: 2, extraArgs: ['--dialect', 'vllm'] }),
      ],
      health: { metrics_interval: '200ms' },
    });
    const ask = (model, n = 4) => fetchJson(`${gw.url}/v1/chat/completions`,
      { body: { model, max_tokens: n, ignore_eos: true, messages: [{ role: 'user', content: 'a few words' }] } });
    // Traffic that makes every family have samples: requests, retries, a
    // queue (three at once on two slots), usage tokens, an advisor finding
    // (the vLLM sim's prefix cache queried with no hits).
    await waitUntil(async () => {
      assert.equal((await ask('qwen-27b')).status, 200);
      return metricValue((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_retries_total', { instance: 'gpu1' }) >= 1;
    }, { timeoutMs: 20_000, what: 'a retry off gpu1' });
    await gw.waitForState('gpu1', 'ready', 20_000);
    assert.equal((await ask('qwen-vl')).status, 200);
    // More requests at once than qwen-27b has slots, until one has waited.
    await waitUntil(async () => {
      const burst = await Promise.all([1, 2, 3, 4].map(() => ask('qwen-27b', 60)));
      for (const r of burst) assert.equal(r.status, 200, r.text);
      return metricValue((await fetchJson(`${gw.url}/metrics`)).text, 'switchyard_queue_wait_seconds_count', { model: 'qwen-27b' }) > 0;
    }, { timeoutMs: 20_000, what: 'a request that queued' });

    const missing = await waitUntil(async () => {
      const names = seriesNames((await fetchJson(`${gw.url}/metrics`)).text);
      const absent = queries.flatMap((q) => metricNames(q.expr).filter((n) => !names.has(n)).map((n) => `${n} (${q.panel})`));
      return absent.length === 0 ? [] : null;
    }, { timeoutMs: 10_000, what: 'every dashboard metric on /metrics' }).catch(async (e) => {
      const names = seriesNames((await fetchJson(`${gw.url}/metrics`)).text);
      return queries.flatMap((q) => metricNames(q.expr).filter((n) => !names.has(n)).map((n) => `${n} (${q.panel})`)).concat([e.message]);
    });
    assert.deepEqual(missing, []);
    await gw.stop();
  });
});
