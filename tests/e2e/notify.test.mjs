// systemd Type=notify (issue 16): `switchyard serve` sends READY=1 to
// $NOTIFY_SOCKET once it listens and its engines have started, RELOADING=1
// then READY=1 around a SIGHUP reload, STOPPING=1 when it drains; its
// engines do not inherit NOTIFY_SOCKET. Node's dgram has no unix sockets:
// python3 plays systemd's side, printing each datagram as a JSON line.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';

import { fetchJson, simFleet, startGateway, stopAll, waitUntil } from './harness.mjs';

const LISTENER = `
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
name = sys.argv[1]
s.bind("\\0" + name[1:] if name.startswith("@") else name)
print(json.dumps("bound"), flush=True)
while True:
    print(json.dumps(s.recv(4096).decode()), flush=True)
`;

// A datagram socket in the abstract namespace ('@' for the leading NUL) and
// what it has received so far.
async function systemd(name) {
  const child = spawn('python3', ['-c', LISTENER, name], { stdio: ['ignore', 'pipe', 'inherit'] });
  const received = [];
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      received.push(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
  });
  await waitUntil(() => received[0] === 'bound', { timeoutMs: 5000, what: 'python3 bound the socket' });
  received.shift();
  return { received, close: () => child.kill('SIGKILL') };
}

const states = (received) => received.map((m) => m.split('\n')[0]);

describe('systemd notify', { timeout: 60_000 }, () => {
  let listener;
  after(async () => { await stopAll(); listener?.close(); });

  test('READY=1 once listening and the engines are up; RELOADING=1/READY=1 on SIGHUP; STOPPING=1 on SIGTERM', async () => {
    const name = `@switchyard-notify-${process.pid}`;
    listener = await systemd(name);
    const config = simFleet({ count: 2, extraArgs: ['--load-time', '20'] });  // 1 s at 20x
    process.env.NOTIFY_SOCKET = name;
    let gw;
    try {
      gw = await startGateway(config, { waitReady: false });
    } finally {
      delete process.env.NOTIFY_SOCKET;
    }
    await waitUntil(() => listener.received.length > 0, { timeoutMs: 15_000, what: 'READY=1' });
    const ready = listener.received[0];
    assert.match(ready, /^READY=1\nSTATUS=listening on http:\/\/127\.0\.0\.1:\d+, 2\/2 instance\(s\) ready$/);
    const health = (await fetchJson(`${gw.url}/health`)).body;
    assert.deepEqual(health.instances.map((i) => i.state), ['ready', 'ready'], 'not ready before the engines');

    for (const engine of gw.engines()) {
      const environ = fs.readFileSync(`/proc/${engine.pid}/environ`, 'utf8');
      assert.ok(!environ.includes('NOTIFY_SOCKET='), `${engine.name} does not inherit NOTIFY_SOCKET`);
    }

    gw.reload(config);
    await waitUntil(() => listener.received.length >= 3, { what: 'RELOADING=1 and READY=1' });
    assert.deepEqual(states(listener.received.slice(1, 3)), ['RELOADING=1', 'READY=1']);
    assert.match(listener.received[1], /\nMONOTONIC_USEC=\d+\n/);

    const status = await gw.stop();
    assert.equal(status.code, 0);
    assert.deepEqual(states(listener.received.slice(3)), ['STOPPING=1']);
  });

  test('without NOTIFY_SOCKET nothing is sent and serve runs as before', async () => {
    const before = listener.received.length;
    const gw = await startGateway(simFleet({ count: 1 }));
    assert.equal((await fetchJson(`${gw.url}/health`)).status, 200);
    await gw.stop();
    assert.equal(listener.received.length, before);
  });

  test('a NOTIFY_SOCKET that cannot be an address: serve exits 2 naming it', async () => {
    process.env.NOTIFY_SOCKET = 'relative/notify.sock';
    try {
      const gw = startGateway(simFleet({ count: 1 }), { waitReady: false });
      await assert.rejects(gw, /NOTIFY_SOCKET 'relative\/notify\.sock' is neither an absolute path nor '@name'/);
    } finally {
      delete process.env.NOTIFY_SOCKET;
    }
  });
});
