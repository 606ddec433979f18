// `switchyard bench` on a terminal: the progress line is repainted a few
// times a second, never in a loop. Runs the bench under a pseudo-terminal
// (util-linux `script`) and bounds the bytes it writes by the run's length.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { BIN, startSim, stopAll } from './harness.mjs';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-tty-'));
after(async () => {
  await stopAll();
  fs.rmSync(TMP, { recursive: true, force: true });
});

const quote = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;

/** Runs `cmd` on a pseudo-terminal; resolves {code, bytes, text, wallS}. */
function underPty(args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const command = [BIN, ...args].map(quote).join(' ');
    const started = Date.now();
    const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bench under a pty did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const out = Buffer.concat(chunks);
      resolve({ code, bytes: out.length, text: out.toString('utf8'), wallS: (Date.now() - started) / 1000 });
    });
  });
}

test('a 3-step run on a terminal writes a few lines per second, not a busy loop', { timeout: 120_000 }, async () => {
  // Slow enough that each step lasts several progress ticks (250 ms).
  const sim = await startSim({ slots: 4, tokensPerSecond: 100, speedFactor: 1, alias: 'm' });
  const json = path.join(TMP, 'tty.json');
  const r = await underPty(['bench', '--url', sim.url, '--model', 'm', '--input-len', 32, '--output-len', 64,
    '--concurrency', '1,2,4', '--requests-per-step', 4, '--warmup', 0, '--json', json], 110_000);
  assert.equal(r.code, 0, r.text.slice(-2000));
  assert.match(r.text, /\[N=4\] done/);
  // Four repaints a second of a line under 200 bytes, twice over, plus the table.
  const bound = 8_000 + r.wallS * 4 * 200 * 2;
  assert.ok(r.bytes < bound, `wrote ${r.bytes} bytes in ${r.wallS.toFixed(1)} s (bound ${bound.toFixed(0)})`);
  // The painter of a finished step is gone: no line of step 1 after step 2 began.
  const afterSecond = r.text.slice(r.text.indexOf('[N=2]'));
  assert.doesNotMatch(afterSecond, /\[N=1\] \d/, 'an old step label was repainted');
});
