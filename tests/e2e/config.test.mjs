// Start-up failures: a config mistake must stop the gateway with status 2 and
// a message that points at the file, the line and the field; a taken port
// with status 1. Nothing may be left running.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { runServe, stopAll } from './harness.mjs';

const TIMEOUT = { timeout: 15_000 };

// A valid fleet whose only instance is an external URL: nothing gets started.
const VALID = `models:
  - name: qwen
    aliases: [default]
instances:
  - name: a
    model: qwen
    url: http://127.0.0.1:9
`;

/** Asserts a config error: exit 2, and `<file>:<line>: <text>` in the output. */
function expectConfigError(run, line, text) {
  assert.equal(run.code, 2, `exit status 2; output:\n${run.output}`);
  const escaped = run.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = run.output.match(new RegExp(`${escaped}:(\\d+): (.*)`));
  assert.ok(m, `the message names ${run.file}:<line>; output:\n${run.output}`);
  if (line !== undefined) assert.equal(Number(m[1]), line, `line number in: ${m[0]}`);
  for (const t of [text].flat()) assert.ok(m[2].includes(t), `message mentions '${t}': ${m[0]}`);
}

describe('serve: configuration errors', () => {
  after(stopAll);

  test('YAML syntax error: exit 2, file and line', TIMEOUT, async () => {
    const run = await runServe('models:\n  - name: qwen\n    aliases: [default\ninstances:\n  - name: a\n');
    expectConfigError(run, undefined, 'invalid YAML');
    const line = Number(run.output.match(/fleet\.yaml:(\d+):/)[1]);
    assert.ok(line >= 3 && line <= 5, `the line is near the unclosed list (line 3), got ${line}`);
  });

  test('a bad value: exit 2, file, line and field', TIMEOUT, async () => {
    expectConfigError(await runServe(`${VALID}    slots: many\n`), 8, ['instances[0].slots', 'positive integer']);
    expectConfigError(await runServe(`${VALID}timeouts:\n  drain: 5 parsecs\n`), 9, ['timeouts.drain', 'duration']);
    expectConfigError(await runServe(`${VALID}routing: random\n`), 8, ['routing', 'least-outstanding']);
    expectConfigError(await runServe(`${VALID}body_limit: lots\n`), 8, ['body_limit']);
  });

  test('an unknown field: exit 2, and the field is named', TIMEOUT, async () => {
    expectConfigError(await runServe(`${VALID}    sltos: 2\n`), 8, ['instances[0].sltos', 'unknown field']);
    expectConfigError(await runServe(`${VALID}instance:\n  - name: b\n`), 8, ['instance', 'unknown field']);
    expectConfigError(await runServe(`${VALID}timeouts:\n  dran: 5s\n`), 9, ['timeouts.dran', 'unknown field']);
  });

  test('an instance with both url and command, or neither', TIMEOUT, async () => {
    expectConfigError(await runServe(`${VALID}    command: \${SWITCHYARD} sim --port \${PORT}\n`), 5, ['instances[0]', "'url'", "'command'"]);
    expectConfigError(await runServe('models:\n  - name: qwen\ninstances:\n  - name: a\n    model: qwen\n'), 4, ['instances[0]', "'url'", "'command'"]);
  });

  test('cross-field rules: unknown model, duplicate names, alias collisions', TIMEOUT, async () => {
    expectConfigError(await runServe(VALID.replace('model: qwen', 'model: llama')), 5, ['instances[0].model', "'llama'", 'qwen']);
    expectConfigError(await runServe(`${VALID}  - name: a\n    model: qwen\n    url: http://127.0.0.1:10\n`), 8, ['instances[1].name', 'twice']);
    expectConfigError(await runServe(VALID.replace('[default]', '[qwen]')), undefined, ['models[0].aliases', "'qwen'"]);
  });

  test('a bad instance url: exit 2 with file:line:field, credentials never printed', TIMEOUT, async () => {
    const withUrl = (url) => VALID.replace('http://127.0.0.1:9', url);
    expectConfigError(await runServe(withUrl('http://127.0.0.1:notaport')), 7, ['instances[0].url', 'port']);
    expectConfigError(await runServe(withUrl('ftp://127.0.0.1:9/')), 7, ['instances[0].url', 'http://']);
    const secret = await runServe(withUrl('http://bob:hunter2@127.0.0.1:9'));
    expectConfigError(secret, 7, ['instances[0].url', 'http://***@127.0.0.1:9']);
    assert.ok(!secret.output.includes('hunter2'), `the password is not printed:\n${secret.output}`);
  });

  test('a zero duration that would fail every time: exit 2, the field named', TIMEOUT, async () => {
    expectConfigError(await runServe(`${VALID}timeouts:\n  connect: 0\n`), 9, ['timeouts.connect', 'above 0']);
    expectConfigError(await runServe(`${VALID}timeouts:\n  client_header: 0ms\n`), 9, ['timeouts.client_header', 'above 0']);
  });

  test('a missing instances list', TIMEOUT, async () => {
    expectConfigError(await runServe('models:\n  - name: qwen\n'), undefined, 'instances');
  });

  test('a listen port in use: exit 1, "already in use"', TIMEOUT, async () => {
    const squatter = net.createServer();
    await new Promise((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = squatter.address();
      const run = await runServe(VALID, { listen: `127.0.0.1:${port}` });
      assert.equal(run.code, 1, run.output);
      assert.match(run.output, new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
