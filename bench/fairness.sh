#!/usr/bin/env bash
# The weighted-fair queue measured (issue 14): one key keeps 50 requests in
# flight (a flood) while another key sends lone requests, one at a time,
# against simulated instances behind the gateway. Reports the lone requests'
# wait in the gateway's queue, p50 and p99, in units of one request's
# service time (the median time a flood request held its slot), read from
# the gateway's access log (queued_ms; requests tagged by X-Request-Id).
#
#   fair, 1 x 1 slot     one instance with one slot; keys flood and lone
#   fair, 2 x 2 slots    two instances with two slots each
#   one key, 2 x 2 slots both clients on the flood's key: FIFO within a key,
#                        the order every request had before keys (baseline)
#
# Goal: p99 <= 1 service time in the fair rows. Both clients send the same
# requests (--input-len 256 --output-len 32) through `switchyard bench`.
# Prints a Markdown table (also written to OUT/fairness.md) for docs/keys.md.
#
# Usage: bench/fairness.sh [options]
#   --duration S      seconds of lone requests per row (default 40)
#   --speed-factor F  simulator speed-up (default 10)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and bench JSON in DIR (default: a temp dir)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

duration=40
speed=10
binary="$repo/build/switchyard"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --speed-factor) speed="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || die "--duration: '$duration' is not a positive whole number"
[[ "$speed" =~ ^[1-9][0-9]*$ ]] || die "--speed-factor: '$speed' is not a positive whole number"
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

open_work
wait_load=0

MODEL=qwen-27b
REQUEST=(--input-len 256 --output-len 32 --warmup 0)

gateway=""
start_fleet() {  # NAME INSTANCES SLOTS
  local name="$1" count="$2" slots="$3" ports i sims=()
  read -r -a ports <<<"$(free_ports $((count + 1)))"
  for ((i = 0; i < count; i++)); do
    "$binary" sim --host 127.0.0.1 --port "${ports[$i]}" --preset r9700-27b-q4 --slots "$slots" \
      --speed-factor "$speed" --alias "$MODEL" --seed $((i + 1)) >"$work/$name.sim$i.log" 2>&1 &
    pids+=($!)
    sims+=("http://127.0.0.1:${ports[$i]}")
  done
  {
    echo "state_db: $work/$name.db"
    echo "queue: {max_length: 1000, max_wait: 10m}"
    echo "api_keys:"
    echo "  - {key: sk-flood, name: flood}"
    echo "  - {key: sk-lone, name: lone}"
    echo "instances:"
    for i in "${!sims[@]}"; do echo "  - {name: gpu$i, model: $MODEL, url: '${sims[$i]}', slots: $slots}"; done
  } >"$work/$name.yaml"
  for i in "${!sims[@]}"; do wait_http "${sims[$i]}/health" 30 || die "sim $i of $name did not start"; done
  start_gateway "$work/$name.yaml" "${ports[-1]}" "$work/$name.gateway.log"
}
queued() {
  curl -s "$gateway/metrics" | awk '/^switchyard_queue_depth\{/ {n += $NF} END {print n + 0}'
}
run_row() {  # NAME INSTANCES SLOTS LONE_KEY
  local name="$1" lone_key="$4" flood
  echo "== $name" >&2
  start_fleet "$name" "$2" "$3"
  "$binary" bench --url "$gateway" -m "$MODEL" --simulated --api-key sk-flood -H 'X-Request-Id: flood' \
    -c 50 --duration $((duration + 30)) "${REQUEST[@]}" --json "$work/$name.flood.json" \
    >"$work/$name.flood.log" 2>&1 &
  flood=$!
  pids+=("$flood")
  for _ in $(seq 300); do (( $(queued) >= 40 )) && break; sleep 0.1; done
  (( $(queued) >= 40 )) || die "the flood of $name did not queue (see $work/$name.flood.log)"
  "$binary" bench --url "$gateway" -m "$MODEL" --simulated --api-key "$lone_key" -H 'X-Request-Id: lone' \
    -c 1 --duration "$duration" "${REQUEST[@]}" --json "$work/$name.lone.json" \
    >"$work/$name.lone.log" 2>&1 || die "the lone bench of $name failed (see $work/$name.lone.log)"
  stop_all
}

run_row fair-1x1 1 1 sk-lone
run_row fair-2x2 2 2 sk-lone
run_row onekey-2x2 2 2 sk-flood

python3 - "$work" >"$work/fairness.md" <<'PY'
import re, statistics, sys
work = sys.argv[1]
# Generations only: the bench's /tokenize calls take no slot.
line_re = re.compile(r'access id=(flood|lone) POST /v1/(?:chat/)?completions .*status=200 .* ms=([\d.]+)')
queued_re = re.compile(r' queued_ms=([\d.]+)')

def row(name):
    waits = {"flood": [], "lone": []}
    service = []
    for line in open(f"{work}/{name}.gateway.log"):
        m = line_re.search(line)
        if not m:
            continue
        q = queued_re.search(line)
        wait = float(q.group(1)) if q else 0.0
        waits[m.group(1)].append(wait)
        if m.group(1) == "flood":
            service.append(float(m.group(2)) - wait)
    unit = statistics.median(service)
    lone = sorted(waits["lone"])
    pick = lambda q: lone[min(len(lone) - 1, int(q * len(lone)))]
    return unit, lone, pick(0.5) / unit, pick(0.99) / unit, max(lone) / unit

labels = {"fair-1x1": ("fair", "1 × 1"), "fair-2x2": ("fair", "2 × 2"),
          "onekey-2x2": ("one key (FIFO)", "2 × 2")}
print("| queue | instances × slots | service time | lone requests | lone wait p50 | lone wait p99 | max |")
print("|---|---|---|---|---|---|---|")
for name, (queue, fleet) in labels.items():
    unit, lone, p50, p99, worst = row(name)
    print(f"| {queue} | {fleet} | {unit:.0f} ms | {len(lone)} | {p50:.2f} | {p99:.2f} | {worst:.2f} |")
PY
cat "$work/fairness.md"
echo "(configs, logs and bench JSON in $work)" >&2
