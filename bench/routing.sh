#!/usr/bin/env bash
# Cache-aware routing measured (issue 13): the agent workload against four
# simulated R9700s (2 slots each) behind the gateway, under each policy in
# one run, plus a skewed variant, a run with one instance killed mid-way,
# and one-at-a-time requests on a mixed 7900 XTX fleet.
#
#   agent    switchyard bench --workload agent --sessions 8 --turns 4
#            --start-context 8192 --turn-growth 1024-2048 --think-time 1s
#   skewed   two heavy sessions (32K-token openings) beside twelve light ones
#            (2K), two bench processes at once
#   killed   the agent workload; once 12 requests have been routed, the
#            first instance is killed (SIGKILL) and stays down
#   mixed    7900xtx-27b-q4 + 7900xtx-blower-27b-q4, least-outstanding,
#            concurrency 1, 2048-token prompts, 256 tokens
#
# TTFT is as `switchyard bench` prints it: wall time of the sped-up
# simulator, as issue 13 quotes it (ratios between policies are what
# count); the mixed fleet's tok/s is the card's own (wall rate / speed
# factor). Prints a Markdown table (also written to OUT/routing.md) for
# docs/routing.md.
#
# Usage: bench/routing.sh [options]
#   --policies LIST   comma-separated (default round-robin,least-outstanding,session,prefix-affinity)
#   --speed-factor F  simulator speed-up (default 10)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and bench JSON in DIR (default: a temp dir)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

policies="round-robin,least-outstanding,session,prefix-affinity"
speed=10
binary="$repo/build/switchyard"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --policies) policies="$2"; shift 2 ;;
    --speed-factor) speed="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$speed" =~ ^[1-9][0-9]*$ ]] || die "--speed-factor: '$speed' is not a positive whole number"
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

work="${out:-$(mktemp -d)}"
mkdir -p "$work"
pids=()
wait_load=0
cleanup() { local p; for p in "${pids[@]}"; do stop_pid "$p"; done; [[ -n "$out" ]] || rm -rf "$work"; }
trap cleanup EXIT

MODEL=qwen-27b
AGENT=(--workload agent --sessions 8 --turns 4 --start-context 8192 --turn-growth 1024-2048 --think-time 1s)

sims=()   # URLs of the sims of the current fleet
sim_pids=()
gateway=""
start_fleet() {  # NAME POLICY PRESET...
  local name="$1" policy="$2"; shift 2
  local presets=("$@") ports i
  read -r -a ports <<<"$(free_ports $((${#presets[@]} + 1)))"
  sims=(); sim_pids=()
  for i in "${!presets[@]}"; do
    "$binary" sim --host 127.0.0.1 --port "${ports[$i]}" --preset "${presets[$i]}" --slots 2 \
      --speed-factor "$speed" --alias "$MODEL" --seed $((i + 1)) >"$work/$name.sim$i.log" 2>&1 &
    pids+=($!); sim_pids+=($!)
    sims+=("http://127.0.0.1:${ports[$i]}")
  done
  {
    echo "routing: $policy"
    echo "instances:"
    for i in "${!sims[@]}"; do echo "  - {name: gpu$i, model: $MODEL, url: '${sims[$i]}', slots: 2}"; done
  } >"$work/$name.yaml"
  for i in "${!sims[@]}"; do wait_http "${sims[$i]}/health" 30 || die "sim $i of $name did not start"; done
  gateway="http://127.0.0.1:${ports[-1]}"
  "$binary" serve -c "$work/$name.yaml" --listen "127.0.0.1:${ports[-1]}" >"$work/$name.gateway.log" 2>&1 &
  pids+=($!)
  wait_http "$gateway/health" 30 || die "gateway of $name did not start (see $work/$name.gateway.log)"
}
stop_fleet() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pids=()
}
bench() {  # NAME ARGS...: one bench run writing NAME.json
  local name="$1"; shift
  "$binary" bench --url "$gateway" -m "$MODEL" --simulated --json "$work/$name.json" "$@" \
    >"$work/$name.bench.log" 2>&1 || die "bench $name failed (see $work/$name.bench.log)"
}
answered() {  # requests routed to a slot (not the bench's /tokenize and /v1/models calls)
  curl -s "$gateway/metrics" | awk '/^switchyard_route_decisions_total\{/ {n += $NF} END {print n + 0}'
}

IFS=, read -r -a policy_list <<<"$policies"
for policy in "${policy_list[@]}"; do
  echo "== $policy" >&2
  start_fleet "$policy.agent" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
  bench "$policy.agent" "${AGENT[@]}"
  curl -s "$gateway/metrics" >"$work/$policy.agent.metrics"
  stop_fleet

  start_fleet "$policy.skewed" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
  bench "$policy.skewed-heavy" --workload agent --sessions 2 --turns 4 --start-context 32768 \
    --turn-growth 1024-2048 --think-time 1s --seed 7 &
  heavy=$!
  bench "$policy.skewed-light" --workload agent --sessions 12 --turns 4 --start-context 2048 \
    --turn-growth 256-512 --think-time 1s --seed 8
  wait "$heavy" || die "bench $policy.skewed-heavy failed"
  curl -s "$gateway/metrics" >"$work/$policy.skewed.metrics"
  stop_fleet

  start_fleet "$policy.killed" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
  bench "$policy.killed" "${AGENT[@]}" &
  run=$!
  for _ in $(seq 600); do (( $(answered) >= 12 )) && break; sleep 0.1; done
  kill -KILL "${sim_pids[0]}"
  wait "$run" || true  # requests cut off by the kill count as errors, not as a failed run
  curl -s "$gateway/metrics" >"$work/$policy.killed.metrics"
  stop_fleet
done

echo "== mixed fleet" >&2
start_fleet mixed least-outstanding 7900xtx-27b-q4 7900xtx-blower-27b-q4
bench mixed --input-len 2048 --output-len 256 -c 1 --requests-per-step 12 --warmup 4
curl -s "$gateway/metrics" >"$work/mixed.metrics"
stop_fleet

python3 - "$work" "$speed" "$policies" >"$work/routing.md" <<'PY'
import json, re, sys
work, speed, policies = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(",")

def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)

def metrics(name):
    series = {}
    for line in open(f"{work}/{name}.metrics"):
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return series

def per_instance(name):
    counts = {}
    for labels, v in metrics(name).get("switchyard_requests_total", []):
        counts[labels["instance"]] = counts.get(labels["instance"], 0) + v
    return counts

def balance(counts):
    if not counts:
        return "–"
    mean = sum(counts.values()) / len(counts)
    return f"{max(counts.values()) / mean:.2f}"

def moves(name):
    return int(sum(v for labels, v in metrics(name).get("switchyard_route_decisions_total", [])
                   if labels.get("reason") == "session-moved"))

def turns(runs):
    """turn -> (cached share, ttft p50 s, ttft p99 s), requests of all runs pooled by turn."""
    rows = {}
    for run in runs:
        for r in run.get("requests", []):
            if r.get("turn") is None or r.get("ttft_ms") is None:
                continue
            rows.setdefault(r["turn"], []).append(r)
    out = {}
    for t, rs in sorted(rows.items()):
        prompt = sum(r.get("prompt_tokens") or 0 for r in rs)
        cached = sum(r.get("cached_tokens") or 0 for r in rs)
        ttft = sorted(r["ttft_ms"] / 1000 for r in rs)
        pick = lambda q: ttft[min(len(ttft) - 1, int(q * len(ttft)))]
        out[t] = (cached / prompt if prompt else 0, pick(0.5), pick(0.99))
    return out

def cell(ts, t, i, fmt):
    return fmt.format(ts[t][i]) if t in ts else "–"

print("| policy | variant | cached share t1 / t2 / t3 / t4 | TTFT p50 s t2 / t3 / t4 | TTFT p99 s t2 / t3 / t4 | max/mean load | session moves |")
print("|---|---|---|---|---|---|---|")
for p in policies:
    for variant, runs in (("agent", [f"{p}.agent"]), ("skewed", [f"{p}.skewed-heavy", f"{p}.skewed-light"]),
                          ("killed", [f"{p}.killed"])):
        ts = turns([load(r) for r in runs])
        metric_name = f"{p}.{variant}"
        cached = " / ".join(cell(ts, t, 0, "{:.0%}") for t in (1, 2, 3, 4))
        p50 = " / ".join(cell(ts, t, 1, "{:.2f}") for t in (2, 3, 4))
        p99 = " / ".join(cell(ts, t, 2, "{:.2f}") for t in (2, 3, 4))
        print(f"| {p} | {variant} | {cached} | {p50} | {p99} | {balance(per_instance(metric_name))} | {moves(metric_name)} |")

mixed = load("mixed")
step = mixed["steps"][0]
per = per_instance("mixed")
print()
print(f"Mixed fleet (7900xtx-27b-q4 + 7900xtx-blower-27b-q4), least-outstanding, one request at a time: "
      f"{step['output_tokens_per_s'] / speed:.1f} tok/s delivered (the card's own rate); "
      f"requests per instance: {', '.join(f'{k} {int(v)}' for k, v in sorted(per.items()))}.")
PY
cat "$work/routing.md"
echo "(configs, logs and JSON in $work)" >&2
