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
#   skewed-late   the same with the heavy sessions 0.25 s after the light ones
#   skewed-early  the same with the light sessions 0.25 s after the heavy ones
#            (where each session lands depends on what runs when it comes:
#            the offsets move every arrival against the others)
#   killed   the agent workload; once 12 requests have been routed (every
#            session has a home) and the first instance has none in flight,
#            it is killed (SIGKILL) and stays down: its sessions must move
#            (a request cut off mid-answer would end its session instead)
#   no-ram   the agent workload against sims without the host-memory prompt
#            cache (`--cache-ram 0`: llama-server before PR 16391, or
#            started so), where only a slot's own last prompt is reused
#   mixed    7900xtx-27b-q4 + 7900xtx-blower-27b-q4, least-outstanding,
#            concurrency 1, 2048-token prompts, 256 tokens
#
# Elsewhere the sims keep evicted prompts in RAM as llama-server does by
# default (`--cache-ram 8192`); the affinity policies' routing.home_wait is its 5 s
# default divided by the speed factor, as the sims' time runs that much
# faster.
#
# TTFT is as `switchyard bench` prints it: wall time of the sped-up
# simulator, as issue 13 quotes it (ratios between policies are what
# count); the mixed fleet's tok/s is the card's own (wall rate / speed
# factor). Load per instance: chat completions it answered (the gateway's
# access log; not the bench's /tokenize calls), and its engine's busy time
# (prompt + generation seconds from each sim's /metrics). Session moves:
# the decisions metric, and how often each session's turns changed
# instance (turns 2+ matched to the access log by their prompt's tokens).
# Below the table, each policy's TTFT p50 over least-outstanding's in the
# same variant. Prints a Markdown table (also written to OUT/routing.md) for
# docs/routing.md.
#
# Usage: bench/routing.sh [options]
#   --policies LIST   comma-separated (default round-robin,least-outstanding,session,prefix-affinity)
#   --variants LIST   comma-separated, of agent,skewed,skewed-late,skewed-early,killed,no-ram,
#                     mixed (default all)
#   --speed-factor F  simulator speed-up (default 10)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and bench JSON in DIR (default: a temp dir)
#   --wait-load L     first wait (at most 600 s) for the 1-min load average to drop below L
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

policies="round-robin,least-outstanding,session,prefix-affinity"
variants="agent,skewed,skewed-late,skewed-early,killed,no-ram,mixed"
wait_load=0
speed=10
binary="$repo/build/switchyard"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --policies) policies="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    --speed-factor) speed="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --wait-load) wait_load="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in ${variants//,/ }; do
  [[ ",agent,skewed,skewed-late,skewed-early,killed,no-ram,mixed," == *",$v,"* ]] ||
    die "--variants: unknown variant '$v'"
done
wants() { [[ ",$variants," == *",$1,"* ]]; }
[[ "$speed" =~ ^[1-9][0-9]*$ ]] || die "--speed-factor: '$speed' is not a positive whole number"
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

open_work

MODEL=qwen-27b
home_wait_ms=$((5000 / speed))
AGENT=(--workload agent --sessions 8 --turns 4 --start-context 8192 --turn-growth 1024-2048 --think-time 1s)

sims=()   # URLs of the sims of the current fleet
sim_pids=()
gateway=""
sim_args=()  # more arguments for every sim of the next fleet
start_fleet() {  # NAME POLICY PRESET...
  local name="$1" policy="$2"; shift 2
  local presets=("$@") ports i
  read -r -a ports <<<"$(free_ports $((${#presets[@]} + 1)))"
  sims=(); sim_pids=()
  for i in "${!presets[@]}"; do
    "$binary" sim --host 127.0.0.1 --port "${ports[$i]}" --preset "${presets[$i]}" --slots 2 \
      --speed-factor "$speed" --alias "$MODEL" --seed $((i + 1)) "${sim_args[@]}" >"$work/$name.sim$i.log" 2>&1 &
    pids+=($!); sim_pids+=($!)
    sims+=("http://127.0.0.1:${ports[$i]}")
  done
  {
    echo "routing: {policy: $policy, home_wait: ${home_wait_ms}ms}"
    echo "instances:"
    for i in "${!sims[@]}"; do echo "  - {name: gpu$i, model: $MODEL, url: '${sims[$i]}', slots: 2}"; done
  } >"$work/$name.yaml"
  for i in "${!sims[@]}"; do wait_http "${sims[$i]}/health" 30 || die "sim $i of $name did not start"; done
  start_gateway "$work/$name.yaml" "${ports[-1]}" "$work/$name.gateway.log"
}
bench() {  # NAME ARGS...: one bench run writing NAME.json
  local name="$1"; shift
  "$binary" bench --url "$gateway" -m "$MODEL" --simulated --json "$work/$name.json" "$@" \
    >"$work/$name.bench.log" 2>&1 || die "bench $name failed (see $work/$name.bench.log)"
}
answered() {  # requests routed to a slot (not the bench's /tokenize and /v1/models calls)
  curl -s "$gateway/metrics" | awk '/^switchyard_route_decisions_total\{/ {n += $NF} END {print n + 0}'
}
in_flight() {  # INSTANCE: the gateway's requests on it now
  curl -s "$gateway/metrics" |
    awk -v i="instance=\"$1\"" '/^switchyard_instance_in_flight\{/ && index($0, i) {n = $NF} END {print n + 0}'
}
scrape_sims() {  # NAME: each live sim's /metrics, for its busy time
  local i
  for i in "${!sims[@]}"; do curl -s --max-time 2 "${sims[$i]}/metrics" >"$work/$1.sim$i.metrics" || true; done
}

wait_for_quiet
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >"$work/load.note"
IFS=, read -r -a policy_list <<<"$policies"
for policy in "${policy_list[@]}"; do
  echo "== $policy" >&2
  if wants agent; then
    start_fleet "$policy.agent" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
    bench "$policy.agent" "${AGENT[@]}"
    curl -s "$gateway/metrics" >"$work/$policy.agent.metrics"
    scrape_sims "$policy.agent"
    stop_all
  fi

  for variant in skewed:0:0 skewed-late:0.25:0 skewed-early:0:0.25; do
    IFS=: read -r name heavy_after light_after <<<"$variant"
    wants "$name" || continue
    start_fleet "$policy.$name" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
    (sleep "$heavy_after"
     bench "$policy.$name-heavy" --workload agent --sessions 2 --turns 4 --start-context 32768 \
       --turn-growth 1024-2048 --think-time 1s --seed 7) &
    heavy=$!
    sleep "$light_after"
    bench "$policy.$name-light" --workload agent --sessions 12 --turns 4 --start-context 2048 \
      --turn-growth 256-512 --think-time 1s --seed 8
    wait "$heavy" || die "bench $policy.$name-heavy failed"
    curl -s "$gateway/metrics" >"$work/$policy.$name.metrics"
    scrape_sims "$policy.$name"
    stop_all
  done

  if wants killed; then
    start_fleet "$policy.killed" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
    bench "$policy.killed" "${AGENT[@]}" &
    run=$!
    for _ in $(seq 600); do (( $(answered) >= 12 )) && (( $(in_flight gpu0) == 0 )) && break; sleep 0.05; done
    kill -KILL "${sim_pids[0]}"
    wait "${sim_pids[0]}" 2>/dev/null || true  # reaped here, without the shell's "Killed" line
    echo "killed gpu0 after $(answered) routed requests" >"$work/$policy.killed.note"
    wait "$run" || true  # requests cut off by the kill count as errors, not as a failed run
    curl -s "$gateway/metrics" >"$work/$policy.killed.metrics"
    sims[0]=""  # dead: nothing to scrape
    scrape_sims "$policy.killed"
    stop_all
  fi

  if wants no-ram; then
    sim_args=(--cache-ram 0)
    start_fleet "$policy.no-ram" "$policy" r9700-27b-q4 r9700-27b-q4 r9700-27b-q4 r9700-27b-q4
    sim_args=()
    bench "$policy.no-ram" "${AGENT[@]}"
    curl -s "$gateway/metrics" >"$work/$policy.no-ram.metrics"
    scrape_sims "$policy.no-ram"
    stop_all
  fi
done

if wants mixed; then
  echo "== mixed fleet" >&2
  start_fleet mixed least-outstanding 7900xtx-27b-q4 7900xtx-blower-27b-q4
  bench mixed --input-len 2048 --output-len 256 -c 1 --requests-per-step 12 --warmup 4
  curl -s "$gateway/metrics" >"$work/mixed.metrics"
  stop_all
fi

python3 - "$work" "$speed" "$policies" "$variants" >"$work/routing.md" <<'PY'
import json, os, re, sys
work, speed, policies, wanted = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(",")

def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)

def metrics(path):
    series = {}
    if not os.path.exists(path):
        return series
    for line in open(path):
        m = re.match(r'^([\w:]+)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return series

ACCESS = re.compile(r'POST /v1/(?:chat/)?completions .*instance=(\S+) status=200 .*tokens=(\d+)\+(\d+)')

def answers(name):
    """(instance, prompt tokens) of each completion the gateway answered, in order."""
    out = []
    for line in open(f"{work}/{name}.gateway.log"):
        m = ACCESS.search(line)
        if m and m.group(1) != "-":
            out.append((m.group(1), int(m.group(2))))
    return out

def per_instance(name):
    counts = {}
    for inst, _ in answers(name):
        counts[inst] = counts.get(inst, 0) + 1
    return counts

def busy(name):
    """Seconds each sim spent on prompts and generation (its own counters)."""
    out = {}
    for i in range(8):
        path = f"{work}/{name}.sim{i}.metrics"
        if not os.path.exists(path):
            continue
        s = metrics(path)
        total = sum(v for key in ("llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total")
                    for _, v in s.get(key, []))
        if s:
            out[f"gpu{i}"] = total
    return out

def balance(counts):
    if not counts or not sum(counts.values()):
        return "–"
    mean = sum(counts.values()) / len(counts)
    return f"{max(counts.values()) / mean:.2f}"

def moves(name):
    return int(sum(v for labels, v in metrics(f"{work}/{name}.metrics").get("switchyard_route_decisions_total", [])
                   if labels.get("reason") == "session-moved"))

def changes(name, runs):
    """Sessions by how often consecutive turns (2+) changed instance, e.g. {0: 10, 1: 2}.
    A turn is matched to the access log by its prompt's tokens when that count is unique."""
    by_tokens = {}
    for inst, prompt in answers(name):
        by_tokens.setdefault(prompt, []).append(inst)
    out = {}
    for run_index, run in enumerate(runs):
        sessions = {}
        for r in run.get("requests", []):
            if r.get("turn", 0) >= 2 and r.get("prompt_tokens"):
                seen = by_tokens.get(r["prompt_tokens"], [])
                if len(seen) == 1:
                    sessions.setdefault((run_index, r["session"]), []).append((r["turn"], seen[0]))
        for turns in sessions.values():
            insts = [i for _, i in sorted(turns)]
            n = sum(1 for a, b in zip(insts, insts[1:]) if a != b)
            out[n] = out.get(n, 0) + 1
    return out

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

print(open(f"{work}/load.note").read().strip())
print()
print("| policy | variant | cached share t1 / t2 / t3 / t4 | TTFT p50 s t2 / t3 / t4 | TTFT p99 s t2 / t3 / t4 | max/mean answers | max/mean busy | session moves | sessions changing instance 0× / 1× / 2+× |")
print("|---|---|---|---|---|---|---|---|---|")
VARIANTS = [v for v in ("agent", "skewed", "skewed-late", "skewed-early", "killed", "no-ram") if v in wanted]
def runs_of(p, variant):
    return [f"{p}.{variant}-heavy", f"{p}.{variant}-light"] if variant.startswith("skewed") else [f"{p}.{variant}"]
p50_by = {}
for p in policies:
    for variant in VARIANTS:
        loaded = [load(r) for r in runs_of(p, variant)]
        ts = turns(loaded)
        p50_by[(p, variant)] = ts
        name = f"{p}.{variant}"
        cached = " / ".join(cell(ts, t, 0, "{:.0%}") for t in (1, 2, 3, 4))
        p50 = " / ".join(cell(ts, t, 1, "{:.2f}") for t in (2, 3, 4))
        p99 = " / ".join(cell(ts, t, 2, "{:.2f}") for t in (2, 3, 4))
        ch = changes(name, loaded)
        ch_text = f"{ch.get(0, 0)} / {ch.get(1, 0)} / {sum(v for k, v in ch.items() if k >= 2)}"
        busy_text = balance(busy(name)) if variant != "killed" else "–"
        print(f"| {p} | {variant} | {cached} | {p50} | {p99} | {balance(per_instance(name))} | {busy_text} | {moves(name)} | {ch_text} |")

if "least-outstanding" in policies:
    print()
    print("TTFT p50 over least-outstanding's in the same variant, turns 2 / 3 / 4:")
    print()
    for p in policies:
        if p == "least-outstanding":
            continue
        ratios = []
        for variant in VARIANTS:
            mine, base = p50_by[(p, variant)], p50_by[("least-outstanding", variant)]
            cells = [f"{mine[t][1] / base[t][1]:.2f}" if t in mine and t in base and base[t][1] > 0 else "–"
                     for t in (2, 3, 4)]
            ratios.append(f"{variant} {' / '.join(cells)}")
        print(f"* {p}: " + "; ".join(ratios))

if "killed" in wanted:
    notes = [open(f"{work}/{p}.killed.note").read().strip() for p in policies if os.path.exists(f"{work}/{p}.killed.note")]
    print()
    print("Killed variant: " + "; ".join(f"{p}: {n}" for p, n in zip(policies, notes)) + ".")
if "mixed" in wanted:
    mixed = load("mixed")
    step = mixed["steps"][0]
    per = per_instance("mixed")
    print()
    print(f"Mixed fleet (7900xtx-27b-q4 + 7900xtx-blower-27b-q4), least-outstanding, one request at a time: "
          f"{step['output_tokens_per_s'] / speed:.1f} tok/s delivered (the card's own rate); "
          f"completions per instance (warm-up included): {', '.join(f'{k} {int(v)}' for k, v in sorted(per.items()))}.")
PY
cat "$work/routing.md"
echo "(configs, logs and JSON in $work)" >&2
