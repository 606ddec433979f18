// The Switchyard dashboard: one EventSource on /admin/events (a picture of the
// gateway each second), rendered into cards, tables and uPlot charts.
'use strict';

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
    ['restarts', inst.restarts],
    ['admin', inst.admin],
  ];
  const dl = el('dl');
  for (const [k, v] of rows) dl.append(el('dt', {}, k), el('dd', { 'data-field': k }, v));
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
  // A derived session is a long hash: its start tells sessions apart.
  const session = r.session ? el('span', { title: r.session }, r.session.length > 12 ? `${r.session.slice(0, 12)}…` : r.session) : '—';
  return el('tr', { class: running ? 'running' : r.outcome, 'data-id': r.id },
    el('td', {}, r.id), el('td', { class: 'key' }, r.key || '—'), el('td', { class: 'session' }, session),
    el('td', {}, r.model || '—'), el('td', {}, r.instance || '—'),
    el('td', { class: 'outcome' }, outcome), el('td', {}, seconds(r.ttft)), el('td', {}, tokens));
}

function renderRequests(s) {
  const rows = s.running.map((r) => requestRow(r, true));
  const more = (s.running_total ?? 0) - s.running.length;
  if (more > 0) rows.push(el('tr', { class: 'more' }, el('td', { colspan: 8 }, `… and ${more} more running (the oldest ${s.running.length} are listed)`)));
  $('running').replaceChildren(...rows);
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

// ---------------------------------------------------------------------------
// Profiles: which is active, a switch step by step, a button per profile.

const STEPS = ['draining', 'stopping', 'starting', 'warming', 'active'];
let switching = '';      // the profile this page asked for, until the answer comes
let profilesShown = '';  // what the panel shows, so a tick that changes nothing keeps its buttons

function switchSteps(p) {
  if (p.state === 'active') return [];
  const at = p.state === 'rolling-back' ? -1 : STEPS.indexOf(p.state);
  return STEPS.map((step, i) => el('li', { class: i < at ? 'done' : i === at ? 'current' : '', 'data-step': step }, step))
    .concat(p.state === 'rolling-back' ? [el('li', { class: 'current bad', 'data-step': 'rolling-back' }, 'rolling back')] : []);
}

function lastSwitchText(r) {
  if (!r) return 'No switch yet.';
  const steps = [['draining', r.drain_seconds], ['stopping', r.stop_seconds], ['starting', r.start_seconds], ['warming', r.warm_seconds]]
    .map(([k, v]) => `${k} ${seconds(v)}`).join(' · ');
  const how = r.ok ? `${r.from} → ${r.to}` : `${r.from} → ${r.to} failed and rolled back (${r.error})`;
  return `Last switch: ${how}, ${r.reason}, ${seconds(r.seconds)} (${steps})`;
}

async function requestSwitch(name) {
  switching = name;
  profilesShown = '';
  $('switch-error').textContent = '';
  // The login cookie (if any) goes along: same origin.
  const headers = { 'content-type': 'application/json' };
  try {
    const res = await fetch('/admin/profile', { method: 'POST', headers, body: JSON.stringify({ profile: name }) });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      $('switch-error').textContent = `Switch to ${name}: ${body.error?.message ?? res.statusText}`;
    }
  } catch (e) {
    $('switch-error').textContent = `Switch to ${name}: ${e.message}`;
  } finally {
    switching = '';
    profilesShown = '';
  }
}

function profileCard(p, state) {
  // A requested switch holds the buttons until the feed shows it done (the
  // POST answers only then, and may come after the feed's picture).
  const busy = state.state !== 'active' || (switching !== '' && state.active !== switching);
  const button = p.active ? el('span', { class: 'muted' }, 'running now')
    : el('button', { type: 'button', 'data-switch': p.name }, switching === p.name ? 'switching…' : `Switch to ${p.name}`);
  if (!p.active) {
    button.disabled = busy;
    button.addEventListener('click', () => requestSwitch(p.name));
  }
  const target = state.target === p.name;
  return el('div', { class: `card ${p.active ? 'ok' : target ? 'starting' : 'parked'}`, 'data-profile': p.name, 'data-active': String(p.active) },
    el('h3', {}, el('span', {}, p.name), el('span', { class: 'state' }, p.active ? 'active' : target ? state.state : 'off')),
    el('p', { class: 'muted' }, p.instances.join(', ')), button);
}

function renderProfiles(s) {
  const p = s.profiles;
  $('profiles-section').hidden = !p;
  if (!p) return;
  const shown = JSON.stringify([p.active, p.state, p.target, p.mode, p.last_switch, p.profiles, switching]);
  if (shown === profilesShown) return;
  profilesShown = shown;
  const since = p.since ? new Date(p.since * 1000).toLocaleTimeString() : '';
  $('switch-state').textContent = p.state === 'active'
    ? `Active: ${p.active} since ${since} (switching: ${p.mode})`
    : `Switching ${p.active} → ${p.target}: ${p.state.replace('-', ' ')} since ${since}`;
  $('switch-state').dataset.state = p.state;
  $('switch-steps').replaceChildren(...switchSteps(p));
  $('profiles').replaceChildren(...p.profiles.map((x) => profileCard(x, p)));
  $('last-switch').textContent = lastSwitchText(p.last_switch);
}

// ---------------------------------------------------------------------------
// On-demand models (docs/models.md): each one's state, its memory per card,
// a button to load or unload it; each card's memory in use.

const gib = (b) => (b === null || b === undefined ? '?' : `${(b / 2 ** 30).toFixed(1)} GiB`);
let modelAction = '';    // "load A" while this page's request is out
let residencyShown = ''; // what the panel shows, so a tick that changes nothing keeps its buttons

async function modelRequest(verb, model) {
  modelAction = `${verb} ${model}`;
  residencyShown = '';
  $('model-error').textContent = '';
  // The login cookie (if any) goes along: same origin.
  try {
    const res = await fetch(`/models/${verb}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }),
    });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      $('model-error').textContent = `${verb} ${model}: ${body.error?.message ?? res.statusText}`;
    }
  } catch (e) {
    $('model-error').textContent = `${verb} ${model}: ${e.message}`;
  } finally {
    modelAction = '';
    residencyShown = '';
  }
}

function memoryText(instances) {
  const parts = instances.map((i) => `${i.name}: ${i.gpus.map((g) => `GPU ${g} ${gib(i.memory)}`).join(', ')}`);
  return parts.join('; ') || '—';
}

function residencyRow(m) {
  const st = m.status;
  const value = st.failed ? `failed (exit ${st.exit_code})` : st.value;
  const verb = st.value === 'unloaded' ? 'load' : 'unload';
  const button = el('button', { type: 'button', 'data-model-action': verb }, modelAction === `${verb} ${m.model}` ? `${verb}ing…` : verb);
  button.disabled = modelAction !== '' || st.value === 'loading';
  button.addEventListener('click', () => modelRequest(verb, m.model));
  return el('tr', { 'data-model': m.model, 'data-state': st.value, class: st.failed ? 'failed' : st.value },
    el('td', { class: 'name' }, m.model),
    el('td', { class: 'state', title: st.error ?? '' }, value),
    el('td', { class: 'memory', title: m.instances.map((i) => i.source).join('; ') }, memoryText(m.instances)),
    el('td', {}, button));
}

function renderResidency(s) {
  const r = s.residency;
  $('residency-section').hidden = !r;
  if (!r) return;
  const shown = JSON.stringify([r, modelAction]);
  if (shown === residencyShown) return;
  residencyShown = shown;
  $('gpu-use').textContent = r.gpus.length
    ? r.gpus.map((g) => `GPU ${g.id}: ${gib(g.in_use)} of ${gib(g.memory)} in use`).join(' · ')
    : "No 'gpus' known: instances that share a GPU are never loaded together.";
  $('residency-rows').replaceChildren(...r.models.map(residencyRow));
}

// ---------------------------------------------------------------------------
// Keys: limits, today's usage, what each holds now.

const count = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : String(n));
const ofCap = (n, cap) => (cap === null || cap === undefined ? String(n) : `${n} / ${cap}`);

function limitsText(l) {
  const parts = [];
  if (l.rpm !== null) parts.push(`${l.rpm} rpm`);
  if (l.tpm !== null) parts.push(`${count(l.tpm)} tpm`);
  if (l.tokens_per_day !== null) parts.push(`${count(l.tokens_per_day)} tokens/day`);
  if (l.models.length) parts.push(`models ${l.models.join(', ')}`);
  if (l.priority) parts.push(`priority ${l.priority}`);
  if (l.weight !== 1) parts.push(`weight ${l.weight}`);
  return parts.length ? parts.join(' · ') : 'none';
}

function renderKeys(s) {
  const keys = s.keys || [];
  if (keys.length === 0) {
    $('key-rows').replaceChildren(el('tr', {}, el('td', { class: 'muted', colspan: '8' }, 'No API keys: anyone who reaches the gateway may use it (docs/keys.md).')));
    return;
  }
  $('key-rows').replaceChildren(...keys.map((k) => {
    const tokens = k.today.tokens;
    const budget = k.limits.tokens_per_day;
    return el('tr', { 'data-key': k.name, class: k.revoked ? 'revoked' : '' },
      el('td', { class: 'name' }, k.name, k.revoked ? ' (revoked)' : ''),
      el('td', { class: 'prefix' }, k.prefix ? `${k.prefix}…` : k.source),
      el('td', { class: 'limits' }, limitsText(k.limits)),
      el('td', { class: 'requests' }, count(k.today.requests)),
      el('td', { class: 'tokens', title: `${k.today.prompt_tokens} prompt + ${k.today.completion_tokens} completion` },
        budget ? `${count(tokens)} / ${count(budget)}` : count(tokens)),
      el('td', { class: 'sessions' }, k.sessions === null ? '—' : ofCap(k.sessions, k.limits.max_sessions)),
      el('td', { class: 'running' }, ofCap(k.running, k.limits.max_concurrency)),
      el('td', { class: 'waiting' }, String(k.waiting)));
  }));
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
  renderResidency(s);
  renderKeys(s);
  drawCharts();
}

// ---------------------------------------------------------------------------
// Connection

function askForKey(message) {
  $('key-prompt').hidden = false;
  $('key-error').textContent = message || '';
  $('key-input').focus();
}

// The admin key, once: the gateway answers with an HttpOnly cookie that the
// page's requests carry from then on (the key is kept nowhere, nor put in a URL).
async function login(key) {
  const res = await fetch('/admin/login', {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: '{}',
  });
  if (res.ok) return { ok: true };
  const body = await res.json().catch(() => ({}));
  return { ok: false, status: res.status, message: body.error?.message ?? res.statusText };
}

// Whether the events answer: 200, or why not (401 asks for the key).
async function probe() {
  const controller = new AbortController();
  try {
    const res = await fetch('/admin/events', { signal: controller.signal });
    if (res.ok) return { ok: true };
    const body = await res.json().catch(() => ({}));
    return { ok: false, status: res.status, message: body.error?.message ?? res.statusText };
  } finally {
    controller.abort();
  }
}

async function connect() {
  const answer = await probe().catch((e) => ({ ok: false, message: e.message }));
  if (!answer.ok) {
    if (answer.status === 401) return askForKey('');
    $('connection').textContent = answer.message || 'unreachable';
    $('connection').className = 'pill lost';
    return setTimeout(connect, 3000);
  }
  $('key-prompt').hidden = true;
  const source = new EventSource('/admin/events');
  source.onopen = () => {
    $('connection').textContent = 'live';
    $('connection').className = 'pill live';
  };
  source.onmessage = (event) => render(JSON.parse(event.data));
  source.onerror = () => {
    $('connection').textContent = 'reconnecting…';
    $('connection').className = 'pill lost';
    // Refused (the login expired, the gateway restarted): ask again.
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, 1000);
  };
}

$('key-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const answer = await login($('key-input').value).catch((e) => ({ ok: false, message: e.message }));
  $('key-input').value = '';
  if (!answer.ok) return askForKey(answer.status === 401 ? 'That key is not valid.' : answer.message);
  connect();
});

setupCharts();
connect();
