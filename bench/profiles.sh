#!/usr/bin/env bash
# Static vs on-demand profiles measured (issue 15): one compressed day
# (`switchyard bench make-trace`: a chat trickle, a burst of 16 concurrent
# 2K/256 requests, one 130K-token cold prompt) replayed with
# `switchyard bench --workload trace` against the demo box of
# examples/sim-2x7900xtx.yaml in three set-ups, one after the other:
#
#   replicas   static: xtx0 + xtx1 (7900xtx-27b-q4, 7900xtx-blower-27b-q4)
#   tp2        static: one 2x7900xtx-tp2-vllm engine over both cards
#   on-demand  the example as it is: replicas daily, tp2 (sleep mode,
#              prestarted: loaded and put to sleep before the replicas
#              start) when the policy finds that it pays
#
# Everything runs --speed-factor F times faster than the box: the sims, the
# trace's times (make-trace --compress F) and every duration of the gateway
# (switching, queue.max_wait, timeouts) divided by F, the throughput seeds
# multiplied by F. Times in the table are the box's (wall x F). The
# gateway's first_byte and stream_idle timeouts are 30 minutes (of the box)
# in all three, so the 130K prompt's ~10 minutes of prefill on one card is
# measured rather than cut off by the 10-minute default.
#
# "Switch windows" are the on-demand gateway's switches as /admin/status
# showed them (polled about every 0.2-1 s of wall time; a window runs from
# the last sample that saw "active" to the first that sees it again):
# trickle requests whose wait for the first token overlaps one are left out
# of the trickle's TTFT p50.
#
# Writes OUT/profiles.md (the table and the goals, also printed) and
# OUT/profiles.svg (a timeline of every request per set-up).
#
# Usage: bench/profiles.sh [options]
#   --speed-factor F  simulator and day speed-up (default 10)
#   --seed N          the day's seed (default 1)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and JSON in DIR (default: a temp dir)
#   --report DIR      only redo the table and chart from an earlier --out DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

speed=10
seed=1
binary="$repo/build/switchyard"
out=""
report_only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --speed-factor) speed="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --report) report_only="$2"; out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$speed" =~ ^[1-9][0-9]*$ ]] || die "--speed-factor: '$speed' is not a positive whole number"
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed: '$seed' is not a whole number"
[[ -n "$report_only" || -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

open_work
wait_load=0

MODEL=qwen-27b
ms() { echo $(( $1 / speed )); }  # milliseconds of the box -> milliseconds of wall time
tps() { python3 -c "print($1 * $speed)"; }

[[ -n "$report_only" ]] || "$binary" bench make-trace --seed "$seed" --compress "$speed" \
  --out "$work/day.jsonl" || die "make-trace failed"

fleet_head() {  # PORT
  cat <<EOF
listen: 127.0.0.1:$1
models:
  - name: $MODEL
    aliases: [default]
queue:
  max_wait: $(ms 60000)ms
timeouts:
  startup: 10m
  first_byte: $(ms 1800000)ms
  stream_idle: $(ms 1800000)ms
instances:
EOF
}
replica_instances() {
  cat <<EOF
  - name: xtx0
    model: $MODEL
    gpus: [0]
    slots: 1
    command: \${SWITCHYARD} sim --preset 7900xtx-27b-q4 --port \${PORT} --alias $MODEL --load-time 25 --seed 1 --speed-factor $speed
  - name: xtx1
    model: $MODEL
    gpus: [1]
    slots: 1
    command: \${SWITCHYARD} sim --preset 7900xtx-blower-27b-q4 --port \${PORT} --alias $MODEL --load-time 25 --seed 2 --speed-factor $speed
EOF
}
tp2_instance() {  # SLEEP PRESTART (true|false)
  cat <<EOF
  - name: tp2
    model: $MODEL
    gpus: [0, 1]
    slots: 8
    sleep: $1
    prestart: $2
    command: \${SWITCHYARD} sim --preset 2x7900xtx-tp2-vllm --port \${PORT} --alias $MODEL --sleep-mode --load-time 60 --wake-time 4 --seed 3 --speed-factor $speed
EOF
}
write_config() {  # NAME PORT
  local name="$1" port="$2"
  {
    fleet_head "$port"
    case "$name" in
      replicas) replica_instances ;;
      tp2) tp2_instance false false ;;
      on-demand)
        replica_instances
        tp2_instance true true
        cat <<EOF
profiles:
  replicas: [xtx0, xtx1]
  tp2: [tp2]
switching:
  mode: on-demand
  drain_timeout: $(ms 60000)ms
  on_drain_timeout: wait
  min_dwell: $(ms 300000)ms
  max_hold: $(ms 300000)ms
  queue_depth: 8
  sustain: $(ms 10000)ms
  prefill_bound: $(ms 120000)ms
  idle: $(ms 120000)ms
  switch_cost: $(ms 30000)ms
  estimates:
    xtx0: {decode_tps: $(tps 128.5), prefill_tps: $(tps 900), prefill_half_depth: 46500, context: 196608}
    xtx1: {decode_tps: $(tps 93.9), prefill_tps: $(tps 738), prefill_half_depth: 46500, context: 196608}
    tp2: {decode_tps: $(tps 20.5), prefill_tps: $(tps 3377), prefill_half_depth: 65000, context: 163840}
EOF
        ;;
    esac
  } >"$work/$name.yaml"
}

ready() {  # URL: every instance the gateway routes to is ready
  curl -s --max-time 2 "$1/admin/status" | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
active = [i for i in s.get("instances", []) if i.get("admin") == "active"]
sys.exit(0 if active and all(i.get("state") == "ready" for i in active) else 1)'
}

poll_states() {  # URL FILE: "unix_seconds state active" every 0.2 s, until killed
  while :; do
    curl -s --max-time 1 "$1/admin/status" | python3 -c '
import json, sys, time
try:
    s = json.load(sys.stdin)
    print("%.3f %s %s" % (time.time(), s.get("state") or "-", s.get("active") or "-"))
except ValueError:
    pass' >>"$2" || true
    sleep 0.2
  done
}

for name in replicas tp2 on-demand; do
  [[ -z "$report_only" ]] || break
  echo "== $name" >&2
  port="$(free_ports 1)"
  gateway="http://127.0.0.1:$port"
  write_config "$name" "$port"
  "$binary" serve -c "$work/$name.yaml" >"$work/$name.gateway.log" 2>&1 &
  gateway_pid=$!
  pids+=("$gateway_pid")
  for _ in $(seq 600); do ready "$gateway" && break; sleep 0.2; done
  ready "$gateway" || die "the $name fleet did not get ready (see $work/$name.gateway.log)"
  : >"$work/$name.states"
  poll_states "$gateway" "$work/$name.states" &
  poller=$!
  pids+=("$poller")
  "$binary" bench --workload trace --trace "$work/day.jsonl" --url "$gateway" -m "$MODEL" \
    --simulated --stream-idle 600 --json "$work/$name.json" >"$work/$name.bench.log" 2>&1 \
    || echo "(bench $name exited $?: failed requests are counted below; see $work/$name.bench.log)" >&2
  curl -s "$gateway/metrics" >"$work/$name.metrics"
  curl -s "$gateway/admin/status" >"$work/$name.status.json"
  stop_pid "$poller"
  stop_pid "$gateway_pid"
done

python3 - "$work" "$speed" "$seed" >"$work/profiles.md" <<'PY'
import json, re, sys
work, speed, seed = sys.argv[1], float(sys.argv[2]), sys.argv[3]
names = ["replicas", "tp2", "on-demand"]

def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)

def windows(name):
    """Wall-clock (unix) intervals in which a switch was running, widened to
    the samples either side (the last one that saw "active" before it)."""
    out, start, last = [], None, None
    for line in open(f"{work}/{name}.states"):
        t, state, _ = line.split()
        t = float(t)
        if state != "active" and start is None:
            start = last if last is not None else t
        elif state == "active" and start is not None:
            out.append((start, t))
            start = None
        last = t
    if start is not None:
        out.append((start, last))
    return out

def switches(name):
    n = 0
    for line in open(f"{work}/{name}.metrics"):
        m = re.match(r'^switchyard_profile_switches_total\{(.*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("from") != labels.get("to"):
                n += int(float(m.group(2)))
    return n

def p50(xs):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * 0.5
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

rows = {}
for name in names:
    doc = load(name)
    trace = doc["trace"]
    t0 = trace["started_unix_s"]
    wins = windows(name)
    reqs = doc["requests"]
    failed = sum(1 for r in reqs if r.get("error") or r.get("short_output"))
    cold = [r["e2e_ms"] / 1000 * speed for r in reqs if r.get("label") == "cold" and not r.get("error")]
    def outside(r):
        a = t0 + r["start_s"]
        b = a + (r["ttft_ms"] or 0) / 1000
        return all(b < s or a > e for s, e in wins)
    trickle = [r for r in reqs if r.get("label") == "trickle" and not r.get("error") and r.get("ttft_ms") is not None]
    ttft_out = p50([r["ttft_ms"] / 1000 * speed for r in trickle if outside(r)])
    ttft_all = p50([r["ttft_ms"] / 1000 * speed for r in trickle])
    burst = [r["e2e_ms"] / 1000 * speed for r in reqs if r.get("label") == "burst" and not r.get("error")]
    rows[name] = dict(
        requests=len(reqs), failed=failed + (trace["requests"] - len(reqs)),
        cold=max(cold) if cold else None, ttft_out=ttft_out, ttft_all=ttft_all,
        trickle_out=sum(1 for r in trickle if outside(r)), trickle=len(trickle),
        burst_last=max(burst) if burst else None, makespan=trace["makespan_s"] * speed,
        switches=switches(name), windows=[((s - t0) * speed, (e - t0) * speed) for s, e in wins],
        reqs=reqs, late=trace["worst_late_ms"])

fmt = lambda v, d=1: "–" if v is None else f"{v:.{d}f}"
print(f"Day: `switchyard bench make-trace --seed {seed} --compress {speed:g}` "
      f"({rows['replicas']['requests']} requests), speed factor {speed:g}; times in seconds of the box (wall x {speed:g}).")
print()
print("| set-up | requests | failed | 130K prompt e2e s | trickle TTFT p50 s outside switches (all) | burst: last e2e s | makespan s | switches |")
print("|---|---|---|---|---|---|---|---|")
for name in names:
    r = rows[name]
    print(f"| {name} | {r['requests']} | {r['failed']} | {fmt(r['cold'])} | "
          f"{fmt(r['ttft_out'], 2)} ({fmt(r['ttft_all'], 2)}; {r['trickle_out']}/{r['trickle']} outside) | "
          f"{fmt(r['burst_last'])} | {fmt(r['makespan'])} | {r['switches']} |")
print()
rep, tp2, od = rows["replicas"], rows["tp2"], rows["on-demand"]
def goal(text, ok):
    print(f"* {text}: **{'met' if ok else 'not met'}**")
goal(f"zero failed requests on demand ({od['failed']} failed, {od['switches']} switches)", od["failed"] == 0)
if od["cold"] and rep["cold"]:
    goal(f"130K prompt e2e ≤ 0.35x static replicas' ({od['cold']:.1f} s vs {rep['cold']:.1f} s: "
         f"{od['cold'] / rep['cold']:.2f}x)", od["cold"] <= 0.35 * rep["cold"])
if od["ttft_out"] is not None and rep["ttft_out"]:
    goal(f"trickle TTFT p50 outside switch windows ≤ 1.1x static replicas' ({od['ttft_out']:.2f} s vs "
         f"{rep['ttft_out']:.2f} s: {od['ttft_out'] / rep['ttft_out']:.2f}x)", od["ttft_out"] <= 1.1 * rep["ttft_out"])
better = min(rep["makespan"], tp2["makespan"])
goal(f"makespan ≤ the better static profile's ({od['makespan']:.1f} s vs {better:.1f} s)", od["makespan"] <= better + 1e-9)
print()
print("On-demand switch windows (s of the day): " +
      (", ".join(f"{s:.0f}–{e:.0f}" for s, e in od["windows"]) or "none"))

# The chart: every request as a bar from its send to its end, one lane per
# set-up (overlapping requests stacked), switch windows shaded.
W, left, right, top = 760, 90, 20, 34
span = max(r["makespan"] for r in rows.values()) * 1.02
xs = lambda t: left + (W - left - right) * t / span
colours = {"trickle": "#7f7f7f", "burst": "#1f77b4", "cold": "#d62728"}
svg, y = [], top
for name in names:
    r = rows[name]
    ends = []  # per stacked row, where its last bar ends
    bars = []
    for q in sorted(r["reqs"], key=lambda q: q["start_s"]):
        a = q["start_s"] * speed
        b = a + q["e2e_ms"] / 1000 * speed
        row = next((i for i, e in enumerate(ends) if e <= a), None)
        if row is None:
            ends.append(b)
            row = len(ends) - 1
        ends[row] = b
        bars.append((a, b, row, q))
    h = max(1, len(ends)) * 4 + 8
    svg.append(f'<text x="{left - 8}" y="{y + h / 2 + 4:.1f}" class="lane">{name}</text>')
    svg.append(f'<rect x="{left}" y="{y}" width="{W - left - right}" height="{h}" class="lanebg"/>')
    for s, e in r["windows"]:
        svg.append(f'<rect x="{xs(max(0, s)):.1f}" y="{y}" width="{max(1, xs(e) - xs(max(0, s))):.1f}" height="{h}" class="switch"><title>switch {s:.0f}–{e:.0f} s</title></rect>')
    for a, b, row, q in bars:
        c = "#000" if q.get("error") else colours.get(q.get("label"), "#9467bd")
        svg.append(f'<rect x="{xs(a):.1f}" y="{y + 4 + row * 4}" width="{max(1.0, xs(b) - xs(a)):.1f}" height="3" fill="{c}">'
                   f'<title>{q.get("label") or "-"}: sent {a:.0f} s, e2e {b - a:.1f} s{" (" + q["error"] + ")" if q.get("error") else ""}</title></rect>')
    y += h + 10
axis_y = y
ticks = []
step = 300 if span > 1500 else 120
t = 0
while t <= span:
    ticks.append(f'<line x1="{xs(t):.1f}" y1="{top}" x2="{xs(t):.1f}" y2="{axis_y}" class="grid"/><text x="{xs(t):.1f}" y="{axis_y + 14}" class="xtick">{t}</text>')
    t += step
H = axis_y + 60
legend = " ".join(f'<rect x="{left + i * 120}" y="{H - 22}" width="14" height="6" fill="{c}"/><text x="{left + i * 120 + 18}" y="{H - 16}" class="legend">{k}</text>'
                  for i, (k, c) in enumerate(colours.items()))
legend += f'<rect x="{left + 3 * 120}" y="{H - 24}" width="14" height="10" class="switch"/><text x="{left + 3 * 120 + 18}" y="{H - 16}" class="legend">switch window</text>'
doc = f'''<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">
<title>One compressed day on the 2x 7900 XTX box: every request from send to end (simulated engines)</title>
<style>text{{font:11px sans-serif;fill:#333}} .title{{font-size:13px}} .lane{{text-anchor:end}} .xtick{{text-anchor:middle}}
.legend{{font-size:11px}} .grid{{stroke:#ddd}} .lanebg{{fill:#fafafa;stroke:#ccc}} .switch{{fill:#f5d76e;opacity:.55}}</style>
<text x="{left}" y="20" class="title">One compressed day, each request from send to end (simulated engines, seconds of the box)</text>
{"".join(ticks)}
{chr(10).join(svg)}
{legend}
</svg>
'''
open(f"{work}/profiles.svg", "w").write(doc)
PY
cat "$work/profiles.md"
echo "(configs, logs, JSON and profiles.svg in $work)" >&2
