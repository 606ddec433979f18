// `switchyard doctor` behind a real Switchyard gateway over simulated engines: --url GATEWAY
// checks the instances its /health lists (with --key when the gateway has api_keys), and
// -c fleet.yaml reaches supervised instances through the gateway at the config's listen.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runSwitchyard, simFleet, startGateway, stopAll, toYaml } from './harness.mjs';

const NO_BOX = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-sysfs-'));
const DOCTOR = ['--interval', '0.2', '--timeout', '2', '--no-nvidia-smi', '--sysfs-root', NO_BOX];

async function instanceUrls(gw) {
  return (await gw.health()).instances.map((i) => i.url);
}

describe('doctor behind a gateway', () => {
  after(async () => {
    await stopAll();
    fs.rmSync(NO_BOX, { recursive: true, force: true });
  });

  test('--url GATEWAY checks every instance behind it', { timeout: 40_000 }, async () => {
    const gw = await startGateway(simFleet({ count: 2 }));
    try {
      const urls = await instanceUrls(gw);
      const r = await runSwitchyard(['doctor', '--url', gw.url, ...DOCTOR], { timeoutMs: 20_000 });
      assert.equal(r.code, 0, r.output);
      assert.match(r.output, new RegExp(`${gw.url} is a Switchyard gateway with 2 instances`));
      for (const url of urls) assert.match(r.output, new RegExp(`${url}  llama\\.cpp`), r.output);
      assert.doesNotMatch(r.output, /not an engine doctor knows/);
    } finally {
      await gw.stop();
    }
  });

  test('a gateway with api_keys needs --key', { timeout: 40_000 }, async () => {
    const gw = await startGateway({ ...simFleet({ count: 1 }), api_keys: ['k1'] });
    try {
      const [url] = await instanceUrls(gw);
      const without = await runSwitchyard(['doctor', '--url', gw.url, ...DOCTOR], { timeoutMs: 20_000 });
      assert.equal(without.code, 1, without.output);
      assert.match(without.output, /pass --key KEY/);
      const withKey = await runSwitchyard(['doctor', '--url', gw.url, '--key', 'k1', ...DOCTOR], { timeoutMs: 20_000 });
      assert.equal(withKey.code, 0, withKey.output);
      assert.match(withKey.output, new RegExp(`${url}  llama\\.cpp`));
    } finally {
      await gw.stop();
    }
  });

  test('-c fleet.yaml reaches supervised instances through the gateway at its listen', { timeout: 40_000 }, async () => {
    const fleet = simFleet({ count: 2 });
    const gw = await startGateway(fleet);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-doctor-'));
    try {
      const urls = await instanceUrls(gw);
      // The same fleet as the operator's file, naming the address the gateway listens on.
      const file = path.join(dir, 'fleet.yaml');
      fs.writeFileSync(file, toYaml({ listen: `127.0.0.1:${gw.port}`, ...fleet }) + '\n');
      const r = await runSwitchyard(['doctor', '-c', file, ...DOCTOR], { timeoutMs: 20_000 });
      assert.equal(r.code, 0, r.output);
      for (const url of urls) assert.match(r.output, new RegExp(`${url}  llama\\.cpp`), r.output);
      assert.doesNotMatch(r.output, /is supervised/);

      // The gateway stopped: the instances are named as unreachable through it, not silently dropped.
      await gw.stop();
      const down = await runSwitchyard(['doctor', '-c', file, ...DOCTOR], { timeoutMs: 20_000 });
      assert.match(down.output, /Instance gpu0 is supervised/);
      assert.match(down.output, new RegExp(`No gateway answered at http://127\\.0\\.0\\.1:${gw.port}`));
    } finally {
      await gw.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
