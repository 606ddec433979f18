// The bench's HTML report in a real browser (headless Chromium driven by
// puppeteer-core, as dashboard.test.mjs): two labelled runs against the sim
// and a needle check overlaid by `bench report`. The page loads with no
// console errors and no request leaves the file; it has a chart per metric
// over the sweep, each step's latency CDFs, the needle heat map, and a long
// --label wraps inside its chart instead of being clipped.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

import { REPO, runSwitchyard, startSim, stopAll } from './harness.mjs';

const require = createRequire(path.join(REPO, 'tests/client/package.json'));
const puppeteer = require('puppeteer-core');

const TIMEOUT = { timeout: 120_000 };
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-report-'));
const tmp = (name) => path.join(TMP, name);
const bench = (args) => runSwitchyard(['bench', ...args.map(String)], { timeoutMs: 60_000 });

const LONG_LABEL = 'vllm-0.11 tp2 fp8-kv on two R9700 behind the switchyard gateway, '
  + 'max-num-seqs 8, chunked prefill 2048, run of 2026-12-01';

describe('bench report in a browser', () => {
  let browser;
  let profile;
  before(async () => {
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-chromium-'));
    browser = await puppeteer.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`],
    });
  });
  after(async () => {
    await browser?.close();
    await stopAll();
    fs.rmSync(profile, { recursive: true, force: true });
    fs.rmSync(TMP, { recursive: true, force: true });
  });

  test('two labelled runs and a needle grid: charts, CDFs, heat map, unclipped legends', TIMEOUT, async () => {
    const sim = await startSim({ slots: 2, ctxSize: 16384, speedFactor: 50, alias: 'm' });
    const runs = [[tmp('short.json'), 'replicas', '1,2'], [tmp('long.json'), LONG_LABEL, '1,2,4']];
    for (const [file, label, steps] of runs) {
      const r = await bench(['--url', sim.url, '--model', 'm', '--input-len', 64, '--output-len', 16,
        '--concurrency', steps, '--requests-per-step', 4, '--label', label, '--json', file]);
      assert.equal(r.code, 0, r.output);
      const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
      assert.equal(doc.label, label);
      assert.equal(doc.steps[0].ttft_ms.percentiles.length, 101);
    }
    const needle = tmp('needle.json');
    const needleHtml = tmp('needle.html');
    let r = await bench(['needle', '--url', sim.url, '--model', 'm', '--contexts', '2048,4096',
      '--needles', 2, '--depths', '10,90', '--json', needle, '--html', needleHtml]);
    assert.equal(r.code, 0, r.output);
    assert.match(fs.readFileSync(needleHtml, 'utf8'), /class="chart heatmap"/);

    const html = tmp('report.html');
    r = await bench(['report', runs[0][0], runs[1][0], needle, '--html', html]);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /2 runs, 1 needle grid/);
    const text = fs.readFileSync(html, 'utf8');
    assert.doesNotMatch(text, /<script|<link|\ssrc=|\shref=/, 'self-contained: no script, nothing to fetch');

    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const errors = [];
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (req) => { if (!req.url().startsWith('file:')) errors.push(`fetched ${req.url()}`); });
    await page.goto(pathToFileURL(html).href, { waitUntil: 'load' });

    const shape = await page.evaluate(() => ({
      sweep: [...document.querySelectorAll('.charts > svg.chart')].map((svg) => ({
        title: svg.querySelector('.title').textContent,
        series: svg.querySelectorAll('g.series').length,
      })),
      cdfs: [...document.querySelectorAll('.distributions')].map((d) => [...d.querySelectorAll('svg.chart')].map(
        (svg) => [...svg.querySelectorAll('g.series')].map((g) => g.dataset.name))),
      heatCells: [...document.querySelectorAll('svg.heatmap g.cell')].map((g) => Number(g.dataset.score)),
      banner: document.querySelector('.banner')?.textContent ?? '',
    }));
    assert.deepEqual(shape.sweep.map((c) => c.title),
      ['Output tokens/s', 'Time to first token', 'Inter-token latency', 'Time per output token',
        'End-to-end latency', 'Requests/s']);
    assert.equal(shape.sweep[0].series, 2, 'one throughput series per run');
    assert.equal(shape.sweep[1].series, 4, 'p50 and p99 per run');
    // Per run: TTFT, ITL, TPOT and E2E CDFs, one series per step.
    assert.deepEqual(shape.cdfs, [
      Array(4).fill(['N=1', 'N=2']),
      Array(4).fill(['N=1', 'N=2', 'N=4']),
    ]);
    assert.equal(shape.heatCells.length, 4, '2 contexts × 2 depths');
    for (const s of shape.heatCells) assert.ok(s >= 0 && s <= 1, String(s));
    assert.match(shape.banner, /Simulated engines/, 'the sim says so without --simulated');

    // Every legend entry and every text of every chart lies inside its svg.
    const outside = await page.evaluate(() => {
      const bad = [];
      for (const svg of document.querySelectorAll('svg.chart')) {
        const box = svg.getBoundingClientRect();
        for (const t of svg.querySelectorAll('text')) {
          const r = t.getBoundingClientRect();
          if (r.width === 0) continue;
          if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
            bad.push(`${svg.querySelector('.title')?.textContent}: "${t.textContent}" ${r.left},${r.right} vs ${box.left},${box.right}`);
        }
      }
      return bad;
    });
    assert.deepEqual(outside, []);
    const longLegend = await page.evaluate((label) => {
      const svg = document.querySelector('.charts > svg.chart');
      const entry = [...svg.querySelectorAll('text.legend')].find((t) => t.textContent.replace(/\s/g, '') === label.replace(/\s/g, ''));
      if (!entry) return null;
      const r = entry.getBoundingClientRect();
      const box = svg.getBoundingClientRect();
      return { lines: entry.querySelectorAll('tspan').length, inside: r.right <= box.right && r.left >= box.left && r.bottom <= box.bottom };
    }, LONG_LABEL);
    assert.ok(longLegend, 'the long label is in the throughput legend, whole');
    assert.ok(longLegend.lines >= 2, 'wrapped over several lines');
    assert.ok(longLegend.inside, 'inside its chart');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('report --label renames a run; more labels than files is refused naming the flag', TIMEOUT, async () => {
    const sim = await startSim({ slots: 1, speedFactor: 50, alias: 'm' });
    const json = tmp('one.json');
    let r = await bench(['--url', sim.url, '--model', 'm', '--input-len', 32, '--output-len', 8,
      '--concurrency', 1, '--requests-per-step', 2, '--json', json]);
    assert.equal(r.code, 0, r.output);
    const html = tmp('renamed.html');
    r = await bench(['report', json, '--label', 'baseline', '--html', html]);
    assert.equal(r.code, 0, r.output);
    assert.match(fs.readFileSync(html, 'utf8'), /data-name="baseline"/);
    r = await bench(['report', json, '--label', 'a', '--label', 'b', '--html', html]);
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /--label given 2 times for 1 file/);
  });
});
