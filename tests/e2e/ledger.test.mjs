// The ledger charges what was delivered (issue 31): a stream the client
// closes part-way is charged the content events it was sent (one token
// each), marked client_closed, in the ledger, today's totals and the
// metrics; a gateway restarted on the same state_db reads the same back.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  USER_MESSAGES, fetchJson, metricValue, postStream, readSse, runSwitchyard, simInstance, startGateway, stopAll,
  streamContent, waitUntil,
} from './harness.mjs';

const MODEL = 'qwen-27b';
const KEY = 'sk-reader';

describe('aborted streams against the ledger', () => {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-ledger-')); });
  after(async () => {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const config = () => ({
    state_db: path.join(dir, 'state.db'),
    models: [{ name: MODEL, aliases: [] }],
    instances: [simInstance('gpu0', MODEL, { slots: 2, speedFactor: 1, tokensPerSecond: 50 })],
    // The first (a plain key) is the one the harness shows /health to.
    api_keys: ['sk-ledger-static', { key: KEY, name: 'reader' }],
  });
  const today = async (gw) => (await fetchJson(`${gw.url}/admin/keys`)).body.keys.find((k) => k.name === 'reader').today;

  /** Streams `api`'s 400-token answer, reads `read` content events, closes. */
  async function readPartly(gw, api, read) {
    const abort = new AbortController();
    const headers = { authorization: `Bearer ${KEY}`, 'anthropic-version': '2023-06-01' };
    const res = await postStream(`${gw.url}${api}`,
      { model: MODEL, messages: USER_MESSAGES, max_tokens: 400, ignore_eos: true }, { headers, signal: abort.signal });
    assert.equal(res.status, 200);
    let seen = 0;
    await readSse(res, {
      onEvent: (e) => {
        const text = e.json?.choices?.[0]?.delta?.content ?? e.json?.delta?.text;
        if (typeof text === 'string' && text.length > 0) seen += 1;
        return seen < read;
      },
    });
    abort.abort();
    return seen;
  }

  test('a client that reads part of a stream and closes is charged about what it read, also after a restart',
    { timeout: 120_000 }, async () => {  // two sim start-ups at speed x1 under ASan
      let gw = await startGateway(config());
      const read = await readPartly(gw, '/v1/chat/completions', 40) + await readPartly(gw, '/v1/messages', 30);
      assert.equal(read, 70);
      // Both ended as client_closed with their relayed tokens (400 asked each).
      const closed = await waitUntil(() => {
        const lines = gw.output().split('\n').filter((l) => /access id=.* client_closed key=reader .*tokens=\d+\+\d+/.test(l));
        return lines.length === 2 && lines;
      }, { what: `two client_closed access lines:\n${gw.output()}` });
      const charged = closed.map((l) => Number(l.match(/tokens=\d+\+(\d+)/)[1]));
      // At 50 tok/s the gateway may have relayed a few more before it saw the close.
      for (const [i, n] of charged.entries()) assert.ok(n >= [40, 30][i] && n <= [40, 30][i] + 15, `charged ${n} output tokens`);
      const completion = charged[0] + charged[1];

      const live = await waitUntil(async () => { const t = await today(gw); return t.requests === 2 && t; }, { what: 'today counted' });
      assert.equal(live.completion_tokens, completion);
      // The per-key series are for a scrape that presents a key.
      const metrics = (await fetchJson(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text;
      assert.equal(metricValue(metrics, 'switchyard_key_requests_total', { key: 'reader', outcome: 'client_closed' }), 2);
      assert.equal(metricValue(metrics, 'switchyard_key_tokens_total', { key: 'reader', kind: 'completion' }), completion);
      const ledger = await waitUntil(async () => {
        const r = await runSwitchyard(['usage', '-c', gw.configFile, '--by', 'key', '--json']);
        const row = JSON.parse(r.output).find((k) => k.key === 'reader');
        return row?.requests === 2 && row;
      }, { what: 'the ledger rows' });
      assert.equal(ledger.completion_tokens, completion);
      await gw.stop();

      // A day budget starts from these rows: the restarted gateway reads them back.
      gw = await startGateway(config());
      const rebuilt = await today(gw);
      assert.equal(rebuilt.completion_tokens, completion);
      assert.equal(rebuilt.tokens, live.tokens);
    });
});
