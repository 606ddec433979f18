// What a box owner installs and runs: `--version`, `serve --check` (the
// config and its commands' programs, nothing started), the real-box example
// configs, `make install`'s tree (binary, man pages, systemd unit, examples)
// and the first lines `make run` shows.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { BIN, REPO, fetchJson, runSwitchyard, startGateway, simFleet, stopAll } from './harness.mjs';

const TIMEOUT = { timeout: 30_000 };

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-packaging-'));
}

// A directory of stand-ins for the engines the real-box examples run, so the
// check finds them as it would on the box.
function fakeEngines(names) {
  const dir = tempDir();
  for (const name of names) {
    fs.writeFileSync(path.join(dir, name), '#!/bin/sh\nexit 0\n');
    fs.chmodSync(path.join(dir, name), 0o755);
  }
  return dir;
}

function check(file, env = {}) {
  return spawnSync(BIN, ['serve', '--check', '-c', file], {
    encoding: 'utf8', timeout: 10_000, env: { ...process.env, ...env },
  });
}

describe('packaging', () => {
  after(stopAll);

  test('--version prints the project version', TIMEOUT, async () => {
    const run = await runSwitchyard(['--version']);
    assert.equal(run.code, 0);
    const version = fs.readFileSync(path.join(REPO, 'CMakeLists.txt'), 'utf8').match(/project\(switchyard VERSION (\S+)/)[1];
    assert.equal(run.output.trim(), `switchyard ${version}`);
  });

  test('the real-box examples pass serve --check where their engines are installed', TIMEOUT, () => {
    const bin = fakeEngines(['llama-server', 'vllm']);
    try {
      for (const example of ['2x7900xtx.yaml', '4xr9700.yaml', 'sim-demo.yaml']) {
        const run = check(path.join(REPO, 'examples', example), { PATH: `${bin}:${process.env.PATH}` });
        assert.equal(run.status, 0, `${example}: ${run.stdout}${run.stderr}`);
        assert.match(run.stdout, /: ok \(\d+ instance\(s\), \d+ model\(s\)\)/);
      }
      const tp2 = fs.readFileSync(path.join(REPO, 'examples/2x7900xtx.yaml'), 'utf8');
      for (const text of ['--tensor-parallel-size 2', '--disable-custom-all-reduce', '--dtype bfloat16',
        'NCCL_P2P_DISABLE: "1"', 'HSA_ENABLE_SDMA: "0"', 'NCCL_PROTO: Simple', 'HIP_HOSTCALL_ALLOW_MISSING: "1"',
        'HIP_VISIBLE_DEVICES: "0"', 'HIP_VISIBLE_DEVICES: "1"'])
        assert.ok(tp2.includes(text), `2x7900xtx.yaml has ${text}`);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  test('serve --check: exit 2 naming each instance whose program is missing; nothing starts', TIMEOUT, () => {
    const empty = fakeEngines([]);
    try {
      const run = check(path.join(REPO, 'examples', '4xr9700.yaml'), { PATH: `${empty}:/usr/bin:/bin` });
      assert.equal(run.status, 2, run.stderr);
      for (const name of ['gpu0', 'gpu1', 'gpu2', 'gpu3'])
        assert.match(run.stderr, new RegExp(`instances\\[\\d\\] \\(${name}\\): command: 'llama-server' is not found on PATH`));
      assert.doesNotMatch(run.stdout + run.stderr, /started pid|listening/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  test('serve --check: a config error is exit 2 with the file and line', TIMEOUT, () => {
    const dir = tempDir();
    try {
      const file = path.join(dir, 'fleet.yaml');
      fs.writeFileSync(file, 'instances:\n  - model: m\n    url: http://127.0.0.1:9\nhealth:\n  metrics_interval: soon\n');
      const run = check(file);
      assert.equal(run.status, 2);
      assert.match(run.stderr, /fleet\.yaml:5: health\.metrics_interval: /);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('cmake --install: binary, a man page per verb, the systemd unit under the prefix, examples', { timeout: 60_000 }, () => {
    const prefix = tempDir();
    try {
      const run = spawnSync('cmake', ['--install', path.dirname(BIN), '--prefix', prefix], { encoding: 'utf8', timeout: 50_000 });
      assert.equal(run.status, 0, run.stdout + run.stderr);
      const installed = spawnSync(path.join(prefix, 'bin/switchyard'), ['--version'], { encoding: 'utf8' });
      assert.match(installed.stdout, /^switchyard \d+\.\d+\.\d+/);
      for (const verb of ['', '-serve', '-sim', '-plan', '-doctor', '-bench']) {
        const page = fs.readFileSync(path.join(prefix, `share/man/man1/switchyard${verb}.1`), 'utf8');
        assert.match(page, new RegExp(`^\\.TH SWITCHYARD${verb.toUpperCase()} 1 `));
        assert.ok(page.includes('--help'), `switchyard${verb}.1 lists the options`);
      }
      assert.ok(fs.readFileSync(path.join(prefix, 'share/man/man1/switchyard-serve.1'), 'utf8').includes('--check'));
      const unit = fs.readFileSync(path.join(prefix, 'lib/systemd/system/switchyard.service'), 'utf8');
      assert.match(unit, new RegExp(`^ExecStart=${prefix}/bin/switchyard serve -c `, 'm'));
      assert.match(unit, /^Type=(notify|simple)$/m);
      assert.match(unit, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
      assert.match(unit, /^KillMode=mixed$/m);
      for (const example of ['sim-demo.yaml', '2x7900xtx.yaml', '4xr9700.yaml'])
        assert.ok(fs.existsSync(path.join(prefix, 'share/switchyard/examples', example)), example);
    } finally {
      fs.rmSync(prefix, { recursive: true, force: true });
    }
  });

  test('the first screen of serve says what to do next, and that line works', TIMEOUT, async () => {
    const gw = await startGateway(simFleet({ count: 1 }));
    const line = gw.output().match(/try: curl -s (\S+) -H '([^']+)' -d '([^']+)'/);
    assert.ok(line, gw.output());
    assert.equal(line[1], `${gw.url}/v1/chat/completions`);
    const dashboard = gw.output().match(/dashboard: (\S+)/);
    assert.equal(dashboard?.[1], `${gw.url}/ui`);
    assert.equal((await fetchJson(dashboard[1])).status, 200);
    const res = await fetchJson(line[1], { body: line[3], headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'chat.completion');
    await gw.stop();
  });
});
