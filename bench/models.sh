#!/usr/bin/env bash
# Many models on one box measured (issue 29, "Measure"): an agent framework's
# day, after llama-swap PR #611's case. Each agent runs TURNS turns; a turn is
# one request to the orchestrator model A, then two explorer requests on B and
# one coder request on C in parallel, waited for together. AGENTS agents run at
# once, out of step as real ones are: each starts 5 s of the box after the one
# before, and every answer's length is drawn (64-160 tokens on A, 24-96 on B
# and C; seeded per agent, the same in every run). Every model loads in 20 s of the box (sim --model-size 20GiB
# --load-rate 1GiB/s) and is on-demand (`load: on-demand`: nothing loads at
# start). Two boxes:
#
#   one-card   one 24 GiB card, each model 20 GiB on it: one fits at a time
#   two-cards  two 24 GiB cards, each model 12 GiB on both: two of three fit
#
# each under `swapping.policy: fifo` (what llama-swap and llama.cpp's router
# do) and `batch`, one after the other in the same run.
#
# Everything runs --speed-factor F times faster than the box: the sims, and
# every duration of the gateway (swapping, queue, timeouts) divided by F.
# Times in the table are the box's (wall x F). Per set-up it reports loads
# (switchyard_model_loads_total), the makespan (first request to last answer),
# the wait per model (request sent to first token: queueing and loads)
# p50/p99, requests failed (an error status or no answer) and requests cut
# mid-stream (a stream that ended without [DONE] after its first token).
#
# With --rounds R the four set-ups run R times, one round after the other
# (fifo and batch side by side in each); the table gives the median loads
# and makespan with their range, waits over all rounds' requests, and the
# goals are judged on the medians.
#
# Writes OUT/models.md (the table and the goals, also printed).
#
# Usage: bench/models.sh [options]
#   --speed-factor F  simulator and gateway speed-up (default 10)
#   --agents N        agents at once (default 8)
#   --turns T         turns per agent (default 4)
#   --rounds R        runs of every set-up (default 1)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and JSON in DIR (default: a temp dir)
#   --report DIR      only redo the table from an earlier --out DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

speed=10
agents=8
turns=4
rounds=1
binary="$repo/build/switchyard"
out=""
report_only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --speed-factor) speed="$2"; shift 2 ;;
    --agents) agents="$2"; shift 2 ;;
    --turns) turns="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --report) report_only="$2"; out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in speed agents turns rounds; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v/speed/speed-factor}: '${!v}' is not a positive whole number"
done
[[ -n "$report_only" || -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

open_work
ms() { echo $(( $1 / speed )); }  # milliseconds of the box -> milliseconds of wall time
MAX_WAIT_MS=120000                # swapping.max_wait, of the box
LOAD_S=20                         # one model's load, of the box
STAGGER_S=5                       # between the agents' starts, of the box

write_config() {  # BOX POLICY PORT FILE
  local box="$1" policy="$2" port="$3" file="$4" gpus memory m
  if [[ "$box" == one-card ]]; then
    gpus="[0]"; memory=20GiB
  else
    gpus="[0, 1]"; memory=12GiB
  fi
  {
    cat <<EOF
listen: 127.0.0.1:$port
models:
  - name: A
  - name: B
  - name: C
queue:
  max_wait: $(ms 600000)ms
timeouts:
  startup: 10m
  first_byte: $(ms 1800000)ms
  stream_idle: $(ms 1800000)ms
switching:
  drain_timeout: $(ms 120000)ms
  switch_cost: $(ms $((LOAD_S * 1000)))ms  # a load's expected time until one is measured
swapping:
  policy: $policy
  max_wait: $(ms $MAX_WAIT_MS)ms
  min_resident: $(ms 30000)ms
gpus:
EOF
    echo "  - {id: 0, memory: 24GiB}"
    [[ "$box" == one-card ]] || echo "  - {id: 1, memory: 24GiB}"
    echo "instances:"
    for m in A B C; do
      cat <<EOF
  - name: $m-sim
    model: $m
    gpus: $gpus
    load: on-demand
    memory: $memory
    slots: 4
    command: \${SWITCHYARD} sim --port \${PORT} --alias $m --slots 4 --tokens-per-second 65 --model-size 20GiB --load-rate 1GiB/s --seed 1 --speed-factor $speed
EOF
    done
  } >"$file"
}

# The agents: prints one JSON line per request.
run_agents() {  # URL
  python3 - "$1" "$agents" "$turns" "$(awk -v s="$STAGGER_S" -v f="$speed" 'BEGIN{print s / f}')" <<'PY'
import http.client, json, random, sys, threading, time, urllib.parse
url, agents, turns, stagger = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
u = urllib.parse.urlparse(url)
lock = threading.Lock()

def call(agent, turn, model, tokens):
    r = {"agent": agent, "turn": turn, "model": model, "sent": time.time(),
         "first": None, "end": None, "status": None, "done": False}
    body = json.dumps({"model": model, "stream": True, "max_tokens": tokens, "ignore_eos": True,
                       "messages": [{"role": "user", "content": f"agent {agent} turn {turn}"}]})
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        res = conn.getresponse()
        r["status"] = res.status
        for raw in res:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue  # SSE comments (": loading ...") and blank lines
            if r["first"] is None:
                r["first"] = time.time()
            if line == "data: [DONE]":
                r["done"] = True
        conn.close()
    except (OSError, http.client.HTTPException) as e:
        r["error"] = str(e)
    r["end"] = time.time()
    with lock:
        print(json.dumps(r), flush=True)

def agent(i):
    # Agents are out of step, as real ones are: each starts STAGGER box
    # seconds after the one before, and its answers' lengths vary (seeded).
    rng = random.Random(i)
    time.sleep(i * stagger)
    for t in range(turns):
        call(i, t, "A", rng.randint(64, 160))
        fan = [threading.Thread(target=call, args=(i, t, m, rng.randint(24, 96)))
               for m in ("B", "B", "C")]
        for th in fan:
            th.start()
        for th in fan:
            th.join()

threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
for th in threads:
    th.start()
for th in threads:
    th.join()
PY
}

[[ -n "$report_only" ]] || echo "$rounds" >"$work/rounds"
for ((round = 1; round <= rounds; round++)); do
for box in one-card two-cards; do
  for policy in fifo batch; do
    [[ -z "$report_only" ]] || break 3
    name="$box.$policy.r$round"
    echo "== $name" >&2
    port="$(free_ports 1)"
    write_config "$box" "$policy" "$port" "$work/$name.yaml"
    start_gateway "$work/$name.yaml" "$port" "$work/$name.gateway.log"
    gateway_pid="${pids[-1]}"
    uptime >"$work/$name.uptime"
    run_agents "$gateway" >"$work/$name.requests.jsonl"
    uptime >>"$work/$name.uptime"
    curl -s "$gateway/metrics" >"$work/$name.metrics"
    stop_pid "$gateway_pid"
  done
done
done

python3 - "$work" "$speed" "$agents" "$turns" "$MAX_WAIT_MS" "$LOAD_S" >"$work/models.md" <<'PY'
import json, os, re, statistics, sys
work, speed, agents, turns = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
max_wait_s, load_s = float(sys.argv[5]) / 1000, float(sys.argv[6])
rounds_file = f"{work}/rounds"
rounds = int(open(rounds_file).read()) if os.path.exists(rounds_file) else 1

def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

def loads(name):
    n = 0
    for line in open(f"{work}/{name}.metrics"):
        m = re.match(r'^switchyard_model_loads_total\{.*\} (\S+)$', line)
        if m:
            n += int(float(m.group(1)))
    return n

def fmt(x):
    return "-" if x is None else f"{x:.0f}"

def spread(xs):  # the median, and the range when there are several
    m = statistics.median(xs)
    return f"{m:.0f}" if len(xs) == 1 else f"{m:.0f} ({min(xs):.0f}–{max(xs):.0f})"

def one_run(name):
    reqs = [json.loads(l) for l in open(f"{work}/{name}.requests.jsonl")]
    up = [l.split("load average:")[1].split(",")[0].strip() for l in open(f"{work}/{name}.uptime")]
    return {
        "reqs": reqs,
        "loads": loads(name),
        "makespan": (max(r["end"] for r in reqs) - min(r["sent"] for r in reqs)) * speed,
        "failed": sum(1 for r in reqs if r.get("status") != 200 or r["first"] is None),
        "cut": sum(1 for r in reqs
                   if r.get("status") == 200 and r["first"] is not None and not r["done"]),
        "up": up,
    }

rows = {}
print(f"{agents} agents x {turns} turns (A, then B, B, C in parallel); load {load_s:.0f} s; "
      f"times in box seconds (speed factor {speed:.0f})"
      + (f"; {rounds} rounds: median (range)" if rounds > 1 else "") + "\n")
print("| box | policy | loads | makespan s | wait A p50/p99 | wait B p50/p99 | wait C p50/p99 "
      "| failed | cut | load avg (before → after) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for box in ("one-card", "two-cards"):
    for policy in ("fifo", "batch"):
        runs = [one_run(f"{box}.{policy}.r{k}") for k in range(1, rounds + 1)]
        waits = {m: [(r["first"] - r["sent"]) * speed for run in runs for r in run["reqs"]
                     if r["model"] == m and r["first"] is not None] for m in "ABC"}
        row = {
            "loads": [run["loads"] for run in runs],
            "makespan": [run["makespan"] for run in runs],
            "failed": sum(run["failed"] for run in runs),
            "cut": sum(run["cut"] for run in runs),
            "max_wait": max(max(w, default=0) for w in waits.values()),
        }
        rows[f"{box}.{policy}"] = row
        cells = " | ".join(f"{fmt(pct(waits[m], .5))} / {fmt(pct(waits[m], .99))}" for m in "ABC")
        print(f"| {box} | {policy} | {spread(row['loads'])} | {spread(row['makespan'])} | {cells} "
              f"| {row['failed']} | {row['cut']} | {runs[0]['up'][0]} → {runs[-1]['up'][-1]} |")
print()
ok_all = True
for box in ("one-card", "two-cards"):
    f, b = rows[f"{box}.fifo"], rows[f"{box}.batch"]
    fl, bl = statistics.median(f["loads"]), statistics.median(b["loads"])
    fm, bm = statistics.median(f["makespan"]), statistics.median(b["makespan"])
    checks = [
        (f"{box}: 0 failed and 0 cut in both", f["failed"] + f["cut"] + b["failed"] + b["cut"] == 0),
        (f"{box}: batch loads {bl:.0f} <= 0.4 x fifo's {fl:.0f}", bl <= 0.4 * fl),
        (f"{box}: batch makespan {bm:.0f} s <= 0.7 x fifo's {fm:.0f} s", bm <= 0.7 * fm),
        (f"{box}: batch's longest wait {b['max_wait']:.0f} s <= max_wait {max_wait_s:.0f} s + "
         f"one load {load_s:.0f} s", b["max_wait"] <= max_wait_s + load_s),
    ]
    for text, ok in checks:
        ok_all &= ok
        print(f"* {'met' if ok else 'MISSED'}: {text}")
    if rounds > 1:
        ratio = lambda key: ", ".join(f"{x / y:.2f}" for x, y in zip(b[key], f[key]))
        print(f"* rounds: {box}: batch / fifo loads {ratio('loads')}; makespan {ratio('makespan')}")
    if box == "one-card":
        # Every turn of every agent needs A, then B and C, on a card that
        # holds one model: no order loads fewer than three a turn.
        least = 3 * int(turns)
        print(f"* bound: one-card: no policy loads fewer than {least} (3 x {turns} turns), "
              f"{least / fl:.2f} x fifo's; batch's {bl:.0f} is {bl / least:.2f} x that")
print(f"\nAll goals {'met' if ok_all else 'NOT met'}. The machine was shared with other work; "
      "the load average is beside each row.")
PY
cat "$work/models.md"
