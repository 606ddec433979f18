// `switchyard config schema`: a JSON Schema that every example config
// validates against, checked with a real validator (python3-jsonschema,
// draft 2020-12, on the YAML as an editor's language server reads it).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO, runSwitchyard } from './harness.mjs';

const VALIDATE = `
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
for name in sys.argv[2:]:
    for error in validator.iter_errors(yaml.safe_load(open(name))):
        print(f"{name}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-schema-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function validate(schemaFile, files) {
  const r = spawnSync('python3', ['-c', VALIDATE, schemaFile, ...files], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, `python3 (with jsonschema and yaml) failed:\n${r.stderr}`);
  return r.stdout.trim();
}

test('every example validates against the schema, and a misspelt field does not', { timeout: 30_000 }, async () => {
  const printed = await runSwitchyard(['config', 'schema']);
  assert.equal(printed.code, 0, printed.output);
  const schemaFile = path.join(dir, 'fleet.schema.json');
  fs.writeFileSync(schemaFile, printed.output);
  const schema = JSON.parse(printed.output);
  assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');

  const examples = fs.readdirSync(path.join(REPO, 'examples')).filter((f) => f.endsWith('.yaml'))
    .map((f) => path.join(REPO, 'examples', f));
  assert.ok(examples.length >= 4);
  assert.equal(validate(schemaFile, examples), '');

  const bad = path.join(dir, 'bad.yaml');
  fs.writeFileSync(bad, [
    'models: [{name: m}]',
    'instances:',
    '  - {model: m, url: "http://127.0.0.1:8081", slot: 4}',
    'tracing: {endpoint: "http://127.0.0.1:4318", sample: 2}',
    'log: {format: xml}',
    '',
  ].join('\n'));
  const errors = validate(schemaFile, [bad]);
  assert.match(errors, /instances\/0: .*'slot' was unexpected/);
  assert.match(errors, /tracing\/sample: 2 is greater than the maximum of 1/);
  assert.match(errors, /log\/format: 'xml' is not one of/);
});
