#!/usr/bin/env bash
# What relaying a stream costs: Switchyard against nginx (issue 11).
#
# A simulated engine with no delays (`switchyard sim --preset fast`, paced
# with --pace) streams chat completions; `switchyard bench` sends C
# concurrent streams of L tokens each through
#   nginx-proxy  nginx proxy_pass (proxy_buffering off, keepalive, 1 worker) → sim
#   switchyard   build/switchyard serve (one I/O thread)                     → sim
# one after the other in one run, and reports for each the relay's CPU time
# (the time its threads ran, from /proc/PID/task/*/schedstat, in ns) per
# 1,000 chunks, the same for its event loop's thread alone (loop_ms/1k:
# nginx's one thread, Switchyard's I/O thread; the rest is its helper
# threads': the usage ledger's writer, the key watcher) and the chunks per
# second delivered.
#
# CPU time on a shared VM swings with its neighbours (the same binary has
# measured 0.9x and 1.5x nginx's in consecutive rounds). --profile callgrind
# adds what does not: each relay once more under callgrind, 16 streams, and
# the user-space instructions it ran per chunk (system calls not included).
# The simulator answers as fast as it can unless --pace: then the more the
# relay lags, the more events each of its reads and writes carries, so a
# relay's CPU per chunk depends on its own speed. --pace N streams each
# sequence at N tokens a second, as an engine does: every read then carries
# one event, for both relays, and CPU per chunk is the cost of relaying one.
# --pin split takes the placement out: the relay on the last CPU, the
# simulator and the client on CPU 0, so that neither relay's wake-ups cross
# CPUs differently from the other's.
#
# Usage: bench/streaming.sh [options]
#   --streams N       concurrent streams (default 64)
#   --tokens N        tokens per stream (default 256)
#   --requests N      streams per case (default 512)
#   --rounds N        repeat both cases N times (default 2)
#   --wait-load L     first wait (at most 600 s) for the 1-min load average < L (default 1.0; 0: no wait)
#   --profile P       none (default) or callgrind (needs valgrind)
#   --pin MODE        none (default) or split (needs taskset and 2 CPUs)
#   --pace N          N tokens a second per stream (default: no pacing)
#   --binary PATH     the switchyard binary (default build/switchyard)
#   --out DIR         keep configs, logs and bench JSON in DIR (default: a temp dir)
#
# Needs nginx (Debian: nginx-light; installed when missing and run as root).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

streams=64
tokens=256
requests=512
rounds=2
wait_load=1.0
profile=none
pin=none
pace=""
binary="$repo/build/switchyard"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --streams) streams="$2"; shift 2 ;;
    --tokens) tokens="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --wait-load) wait_load="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --pin) pin="$2"; shift 2 ;;
    --pace) pace="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for n in "$streams" "$tokens" "$requests" "$rounds"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive whole number"
done
[[ "$profile" == none || "$profile" == callgrind ]] || die "--profile is none or callgrind, not '$profile'"
[[ "$profile" == none ]] || command -v valgrind >/dev/null ||
  die "--profile callgrind needs valgrind (Debian: valgrind)"
[[ -z "$pace" || "$pace" =~ ^[1-9][0-9]*$ ]] || die "--pace takes a positive whole number of tokens a second, not '$pace'"
case "$pin" in
  none) relay_cpu=(); load_cpu=() ;;
  split)
    command -v taskset >/dev/null || die "--pin split needs taskset (util-linux)"
    (( $(nproc) >= 2 )) || die "--pin split needs 2 CPUs, this machine has $(nproc)"
    relay_cpu=(taskset -c "$(($(nproc) - 1))"); load_cpu=(taskset -c 0) ;;
  *) die "--pin is none or split, not '$pin'" ;;
esac
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
NGINX="$(command -v nginx || true)"; [[ -z "$NGINX" && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
if [[ -z "$NGINX" ]]; then
  [[ "$(id -u)" == 0 ]] || die "nginx is missing: sudo apt-get install -y nginx-light"
  DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light >/dev/null || die "apt-get install nginx-light failed"
  NGINX=/usr/sbin/nginx
fi
command -v python3 >/dev/null || die "python3 is needed"
command -v curl >/dev/null || die "curl is needed"

keep=0
if [[ -n "$out" ]]; then mkdir -p "$out"; work="$(cd "$out" && pwd)"; keep=1
else work="$(mktemp -d /tmp/sy-streaming.XXXXXX)"; fi
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  (( keep )) || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r sim_port proxy_port gw_port <<<"$(free_ports 3)"
mkdir -p "$work/proxy/tmp"

"${load_cpu[@]}" "$binary" sim --preset fast ${pace:+--tokens-per-second "$pace"} \
  --host 127.0.0.1 --port "$sim_port" --alias m --slots "$streams" \
  >"$work/sim.log" 2>&1 &
pids+=($!)
cat >"$work/proxy/nginx.conf" <<EOF
$(nginx_common "$work/proxy" "access_log $work/proxy/access.log;")
  upstream sim { server 127.0.0.1:$sim_port; keepalive 128; }
  server {
    listen 127.0.0.1:$proxy_port;
    location / {
      proxy_pass http://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
EOF
cat >"$work/fleet.yaml" <<EOF
listen: 127.0.0.1:$gw_port
instances:
  - {name: sim, model: m, url: "http://127.0.0.1:$sim_port", slots: $streams}
EOF
# Each relay starts behind an optional wrapper (valgrind for the profile).
start_proxy() {
  "${relay_cpu[@]}" "$@" "$NGINX" -p "$work/proxy" -c "$work/proxy/nginx.conf" -e "$work/proxy/error.log" \
    2>>"$work/proxy/stderr.log" &
  proxy_pid=$!; pids+=("$proxy_pid")
}
start_switchyard() {
  "${relay_cpu[@]}" "$@" "$binary" serve -c "$work/fleet.yaml" >>"$work/switchyard.log" 2>&1 &
  gw_pid=$!; pids+=("$gw_pid")
}
start_proxy
start_switchyard
wait_http "http://127.0.0.1:$sim_port/health" 10 || die "the sim did not start: $(tail -3 "$work/sim.log")"
wait_http "http://127.0.0.1:$proxy_port/health" 10 || die "nginx did not start: $(cat "$work/proxy/error.log")"
wait_http "http://127.0.0.1:$gw_port/health" 20 || die "switchyard did not become ready: $(tail -5 "$work/switchyard.log")"

wait_for_quiet

echo "# placement: $pin (--pin); pace: ${pace:-none} (--pace)"
printf '%-12s %5s %10s %12s %14s %14s %10s\n' case round chunks cpu_ms "cpu_ms/1k" "loop_ms/1k" "chunks/s"
summary="$work/summary.txt"; : >"$summary"
for round in $(seq "$rounds"); do
  for case in nginx-proxy switchyard; do
    if [[ "$case" == nginx-proxy ]]; then port=$proxy_port; pid=$proxy_pid; else port=$gw_port; pid=$gw_pid; fi
    json="$work/$case-$round.json"
    before=$(cpu_ms "$pid"); loop_before=$(main_cpu_ms "$pid")
    "${load_cpu[@]}" "$binary" bench --url "http://127.0.0.1:$port" --model m --input-len 64 --output-len "$tokens" \
      --concurrency "$streams" --requests-per-step "$requests" --warmup 0 --json "$json" \
      >"$work/$case-$round.log" 2>&1 || die "bench through $case failed: $(tail -3 "$work/$case-$round.log")"
    after=$(cpu_ms "$pid"); loop_after=$(main_cpu_ms "$pid")
    python3 - "$json" "$case" "$round" "$before" "$after" "$loop_before" "$loop_after" >>"$summary" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
chunks = sum(r["content_chunks"] for r in doc["requests"] if r.get("error") is None)
wall = doc["steps"][0]["wall_s"]
cpu_ms = float(sys.argv[5]) - float(sys.argv[4])
loop_ms = float(sys.argv[7]) - float(sys.argv[6])
per_1k = 1000 / max(chunks, 1)
print(f"{sys.argv[2]:<12} {sys.argv[3]:>5} {chunks:>10} {cpu_ms:>12.1f} {cpu_ms * per_1k:>14.2f} "
      f"{loop_ms * per_1k:>14.2f} {chunks / wall if wall else 0:>10.0f}")
PY
    tail -1 "$summary"
  done
done

[[ "$profile" == callgrind ]] || exit 0
cg_streams=$((streams < 16 ? streams : 16))
echo
echo "## callgrind: user-space instructions per chunk, $cg_streams streams x $tokens tokens x $((cg_streams * 4)) requests"
for case in nginx-proxy switchyard; do
  if [[ "$case" == nginx-proxy ]]; then
    stop_pid "$proxy_pid"; start_proxy valgrind --tool=callgrind --instr-atstart=no \
      --callgrind-out-file="$work/callgrind-$case.out"
    port=$proxy_port; pid=$proxy_pid
  else
    stop_pid "$gw_pid"; start_switchyard valgrind --tool=callgrind --instr-atstart=no \
      --callgrind-out-file="$work/callgrind-$case.out"
    port=$gw_port; pid=$gw_pid
  fi
  wait_http "http://127.0.0.1:$port/health" 120 || die "$case under callgrind did not start"
  for step in warm measured; do  # the first fills pools and caches, the second counts
    [[ "$step" == measured ]] && callgrind_control -i on "$pid" >/dev/null 2>&1
    "${load_cpu[@]}" "$binary" bench --url "http://127.0.0.1:$port" --model m --input-len 64 --output-len "$tokens" \
      --concurrency "$cg_streams" --requests-per-step $((cg_streams * 4)) --warmup 0 \
      --json "$work/callgrind-$case-$step.json" >"$work/callgrind-$case-$step.log" 2>&1 ||
      die "bench through $case under callgrind failed: $(tail -3 "$work/callgrind-$case-$step.log")"
  done
  callgrind_control -i off "$pid" >/dev/null 2>&1
  stop_pid "$pid" 300  # SIGTERM: both exit, and callgrind writes its file (slowly)
  python3 - "$work/callgrind-$case-measured.json" "$work/callgrind-$case.out" "$case" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
chunks = sum(r["content_chunks"] for r in doc["requests"] if r.get("error") is None)
total = [int(m.group(1)) for line in open(sys.argv[2]) if (m := re.match(r"totals:\s+(\d+)", line))][-1]
print(f"{sys.argv[3]:<12} {chunks:>10} chunks {total:>14,} instructions {total / max(chunks, 1):>8,.0f} per chunk")
PY
done
