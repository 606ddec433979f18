// The Switchyard dashboard: one EventSource on /admin/events (a picture of the
// gateway each second), rendered into cards, tables and uPlot charts.
'use strict';

const KEY_STORE = 'switchyard-admin-key';
const HISTORY = 900; // points kept, one a second: 15 minutes
const BAD_STATES = new Set(['ejected', 'restarting', 'crash-looping', 'down', 'removed', 'stopped']);

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
};
const seconds = (s) => (s === undefined || s === null || s < 0 ? '—' : s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`);
const rate = (r) => (r > 0 ? r.toFixed(1) : '0');

// ---------------------------------------------------------------------------
// Charts

const history = { t: [], tokens: [], queued: [], p50: [], p99: [], ok: [], error: [], failed: [], closed: [] };
const charts = {};

function addPoint(p) {
  if (history.t.length && p.t <= history.t[history.t.length - 1]) return;
  const nullable = (v) => (v < 0 ? null : v);
  history.t.push(p.t);
  history.tokens.push(p.tokens_per_second);
  history.queued.push(p.queued);
  history.p50.push(nullable(p.ttft_p50));
  history.p99.push(nullable(p.ttft_p99));
  history.ok.push(p.ok);
  history.error.push(p.error);
  history.failed.push(p.upstream_failed);
  history.closed.push(p.client_closed);
  for (const k of Object.keys(history)) if (history[k].length > HISTORY) history[k].shift();
}

function chartWidth(id) {
  return Math.max(260, $(id).parentElement.clientWidth - 16);
}

function makeChart(id, series) {
  const opts = {
    width: chartWidth(id),
    height: 170,
    legend: { show: series.length > 1 },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    // Seconds without a value (no first byte that second) stay gaps; a lone
    // value shows as a point.
    series: [{}, ...series.map(([label, stroke]) => ({ label, stroke, width: 2, spanGaps: false, points: { size: 5 } }))],
    axes: [{}, { size: 46 }],
  };
  charts[id] = new uPlot(opts, [[]].concat(series.map(() => [])), $(id));
}

function drawCharts() {
  const h = history;
  charts['chart-tokens'].setData([h.t, h.tokens]);
  charts['chart-queue'].setData([h.t, h.queued]);
  charts['chart-ttft'].setData([h.t, h.p50, h.p99]);
  charts['chart-outcomes'].setData([h.t, h.ok, h.error, h.failed, h.closed]);
}

function setupCharts() {
  makeChart('chart-tokens', [['tokens/s', '#1f8a4c']]);
  makeChart('chart-queue', [['queued', '#b7791f']]);
  makeChart('chart-ttft', [['p50', '#2b6cb0'], ['p99', '#c53030']]);
  makeChart('chart-outcomes', [['ok', '#1f8a4c'], ['error', '#c53030'], ['upstream failed', '#9b2c2c'], ['client closed', '#b7791f']]);
  window.addEventListener('resize', () => {
    for (const [id, chart] of Object.entries(charts)) chart.setSize({ width: chartWidth(id), height: 170 });
  });
}

// ---------------------------------------------------------------------------
// Views

function card(inst) {
  const bad = BAD_STATES.has(inst.state);
  const classes = ['card', bad ? 'bad' : inst.state === 'ready' ? 'ok' : inst.state, inst.admin !== 'active' ? inst.admin : ''];
  const slots = el('div', { class: 'slots', title: `${inst.in_flight} of ${inst.slots} slots busy` });
  for (let i = 0; i < Math.max(inst.slots, inst.in_flight); i++) slots.append(el('span', { class: i < inst.in_flight ? 'busy' : '' }));
  const rows = [
    ['model', inst.model],
    ['GPUs', inst.gpus || '—'],
    ['slots busy', `${inst.in_flight} / ${inst.slots}`],
    ['tokens/s', rate(inst.tokens_per_second)],
    ['prefix cache hits', inst.prefix_cache_hit_ratio >= 0 ? `${Math.round(inst.prefix_cache_hit_ratio * 100)} %` : '—'],
    ['admin', inst.admin],
  ];
  const dl = el('dl');
  for (const [k, v] of rows) dl.append(el('dt', {}, k), el('dd', {}, v));
  return el('div', { class: classes.filter(Boolean).join(' '), 'data-instance': inst.name, 'data-state': inst.state },
    el('h3', {}, el('span', {}, inst.name), el('span', { class: 'state' }, inst.state)), slots, dl);
}

function renderFleet(s) {
  $('fleet').replaceChildren(...s.instances.map(card));
  const ready = s.instances.filter((i) => i.routable).length;
  const busy = s.instances.reduce((n, i) => n + i.in_flight, 0);
  const slots = s.instances.reduce((n, i) => n + i.slots, 0);
  const queued = s.models.reduce((n, m) => n + m.queued, 0);
  const tps = s.instances.reduce((n, i) => n + i.tokens_per_second, 0);
  $('summary').textContent = `${ready}/${s.instances.length} ready · ${busy}/${slots} slots busy · ${queued} queued · ${rate(tps)} tok/s${s.draining ? ' · draining' : ''}`;
}

function requestRow(r, running) {
  const outcome = running ? 'running' : `${r.outcome} ${r.status}`;
  const tokens = running ? `${seconds(r.elapsed)}…` : r.completion_tokens >= 0 ? r.completion_tokens : '—';
  return el('tr', { class: running ? 'running' : r.outcome, 'data-id': r.id },
    el('td', {}, r.id), el('td', {}, r.key || '—'), el('td', {}, r.model || '—'), el('td', {}, r.instance || '—'),
    el('td', { class: 'outcome' }, outcome), el('td', {}, seconds(r.ttft)), el('td', {}, tokens));
}

function renderRequests(s) {
  $('running').replaceChildren(...s.running.map((r) => requestRow(r, true)));
  $('recent').replaceChildren(...s.recent.map((r) => requestRow(r, false)));
}

function renderFindings(s) {
  if (s.findings.length === 0) {
    $('findings').replaceChildren(el('li', { class: 'empty' }, 'Nothing to report: the engines\' metrics look healthy.'));
    return;
  }
  $('findings').replaceChildren(...s.findings.map((f) =>
    el('li', { class: f.severity, 'data-check': f.check }, el('strong', {}, `${f.instance} · ${f.check} (${f.severity}) `), f.message)));
}

function renderModels(s) {
  $('models').replaceChildren(...s.models.map((m) =>
    el('li', {}, el('strong', {}, m.name), m.aliases.length ? ` — aliases: ${m.aliases.join(', ')}` : '', m.queued ? ` — ${m.queued} queued` : '')));
}

// Profiles appear once the gateway's picture carries them (the profiles admin API).
function renderProfiles(s) {
  if (!Array.isArray(s.profiles)) return;
  $('profiles-section').hidden = false;
  $('profiles').replaceChildren(...s.profiles.map((p) =>
    el('div', { class: p.active ? 'card ok' : 'card parked' }, el('h3', {}, el('span', {}, p.name), el('span', { class: 'state' }, p.active ? 'active' : '')))));
}

function render(s) {
  if (Array.isArray(s.history)) {
    for (const k of Object.keys(history)) history[k] = [];
    for (const p of s.history) addPoint(p);
  } else if (s.point) {
    addPoint(s.point);
  }
  renderFleet(s);
  renderRequests(s);
  renderFindings(s);
  renderModels(s);
  renderProfiles(s);
  drawCharts();
}

// ---------------------------------------------------------------------------
// Connection

function askForKey(message) {
  $('key-prompt').hidden = false;
  $('key-error').textContent = message || '';
  $('key-input').focus();
}

// Whether the events answer: 200, or why not (401 asks for the key).
async function probe(key) {
  const controller = new AbortController();
  const headers = key ? { authorization: `Bearer ${key}` } : {};
  try {
    const res = await fetch('/admin/events', { headers, signal: controller.signal });
    if (res.ok) return { ok: true };
    const body = await res.json().catch(() => ({}));
    return { ok: false, status: res.status, message: body.error?.message ?? res.statusText };
  } finally {
    controller.abort();
  }
}

async function connect() {
  const key = sessionStorage.getItem(KEY_STORE) || '';
  const answer = await probe(key).catch((e) => ({ ok: false, message: e.message }));
  if (!answer.ok) {
    if (answer.status === 401) {
      sessionStorage.removeItem(KEY_STORE);
      return askForKey(key ? 'That key is not valid.' : '');
    }
    $('connection').textContent = answer.message || 'unreachable';
    $('connection').className = 'pill lost';
    return setTimeout(connect, 3000);
  }
  $('key-prompt').hidden = true;
  const source = new EventSource(`/admin/events${key ? `?key=${encodeURIComponent(key)}` : ''}`);
  source.onopen = () => {
    $('connection').textContent = 'live';
    $('connection').className = 'pill live';
  };
  source.onmessage = (event) => render(JSON.parse(event.data));
  source.onerror = () => {
    $('connection').textContent = 'reconnecting…';
    $('connection').className = 'pill lost';
  };
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY_STORE, $('key-input').value);
  connect();
});

setupCharts();
connect();
