#!/usr/bin/env bash
# How the gateway's cost grows with the work it holds (issue 32), in one run:
# req/s and the gateway's CPU time per request (user and kernel, from its
# threads' schedstat) at 50 connections, p50 at 1 connection, and user-space
# instructions per request (callgrind at 1 connection: on a shared machine
# the one figure that does not move with the neighbours), against
#   keys       1, 1,000, 100,000 static API keys (every request presents one)
#   instances  1, 64, 256 instances of the model, for each routing policy
# Every case is the same gateway (one I/O thread) in front of one static
# OpenAI-shaped upstream (nginx `return 200 '<chat.completion>'`; all the
# instances are that upstream), so that only the gateway's work grows. Each
# row's ratio is against the first row of its group, measured in the same run.
#
# Usage: bench/scaling.sh [options]
#   --duration S     measured seconds per case and connection count (default 5)
#   --warmup S       warm-up seconds before each case (default 2)
#   --keys LIST      comma list of key counts (default 1,1000,100000)
#   --instances LIST comma list of instance counts (default 1,64,256)
#   --policies LIST  comma list of routing policies (default: all four)
#   --callgrind S    seconds of the 1-connection run under callgrind per case
#                    (default 5; 0 = no instruction counts)
#   --wait-load L    first wait (at most 600 s) for the 1-min load average < L
#                    (default 1.0; 0 = do not wait)
#   --binary PATH    the switchyard binary (default build/switchyard)
#   --out DIR        keep configs, logs and raw results in DIR
#
# Needs wrk and nginx (Debian: wrk, nginx-light; installed when missing and
# run as root) and valgrind for the instruction counts. Loopback only; every
# process it starts is stopped at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

duration=5
warmup=2
key_counts=1,1000,100000
instance_counts=1,64,256
policies=least-outstanding,round-robin,session,prefix-affinity
cg_seconds=5
wait_load=1.0
binary="$repo/build/switchyard"
out=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --keys) key_counts="$2"; shift 2 ;;
    --instances) instance_counts="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --callgrind) cg_seconds="$2"; shift 2 ;;
    --wait-load) wait_load="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
for n in "$duration" "$warmup" "$cg_seconds" ${key_counts//,/ } ${instance_counts//,/ }; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a whole number"
done
(( duration >= 1 )) || die "--duration must be at least 1"
for p in ${policies//,/ }; do
  case "$p" in least-outstanding|round-robin|session|prefix-affinity) ;;
    *) die "--policies: '$p' is not a policy (least-outstanding, round-robin, session, prefix-affinity)" ;;
  esac
done

find_nginx_and_wrk
if ((cg_seconds > 0)); then
  command -v valgrind >/dev/null || die "--callgrind needs valgrind (sudo apt-get install -y valgrind), or pass --callgrind 0"
fi
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: cmake --build build --target switchyard)"

open_work
read -r static_port gw_port <<<"$(free_ports 2)"
model="bench-model"
body='{"model":"'"$model"'","messages":[{"role":"system","content":"You are a concise assistant."},{"role":"user","content":"In one sentence, what does an HTTP gateway do?"}],"max_tokens":64,"temperature":0.2}'
answer='{"id":"chatcmpl-bench","object":"chat.completion","created":1732924800,"model":"'"$model"'","choices":[{"index":0,"message":{"role":"assistant","content":"It routes, authenticates and load-balances requests."},"finish_reason":"stop"}],"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40}}'

mkdir -p "$work/static/tmp"
cat >"$work/static/nginx.conf" <<EOF
$(nginx_common "$work/static" "access_log off;")
  server {
    listen 127.0.0.1:$static_port;
    default_type application/json;
    location = /health { return 200 '{"status":"ok"}'; }
    location = /metrics { return 200 ''; }
    location / { return 200 '$answer'; }
  }
}
EOF
"$NGINX" -p "$work/static" -c "$work/static/nginx.conf" -e "$work/static/error.log" \
  >"$work/static/stdout.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$static_port/health" 10 || die "the static upstream did not start"

# The fleet's 1,024 slots shared by its instances: never binding at 50
# connections, and the same descriptors reserved for upstream connections
# in every case (the gateway derives its client cap from what is left).
fleet_yaml() {  # INSTANCES POLICY KEYS: the case's config on stdout
  local n="$1" policy="$2" keys="$3" i
  echo "listen: 127.0.0.1:$gw_port"
  echo "routing: {policy: $policy}"
  echo "instances:"
  for ((i = 0; i < n; i++)); do
    printf '  - {name: up%d, model: %s, url: "http://127.0.0.1:%s", slots: %d}\n' \
      "$i" "$model" "$static_port" "$(((1024 + n - 1) / n))"
  done
  if ((keys > 0)); then
    echo "api_keys:"
    seq -f '  - sk-bench-%.0f' 1 "$keys"
  fi
}

wrk_script() {  # KEYS: the POST, presenting the last key
  cat <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[$body]]
$( (($1 > 0)) && echo "wrk.headers[\"Authorization\"] = \"Bearer sk-bench-$1\"")
function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50),
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.status + summary.errors.timeout))
end
EOF
}

field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }

# Starts the gateway over the case's config (under the given wrapper, e.g.
# valgrind) and waits until every instance is ready; sets `gw`.
serve() {  # NAME INSTANCES KEYS [WRAPPER...]
  local name="$1" n="$2" keys="$3" url="http://127.0.0.1:$gw_port" i ready=0
  shift 3
  "$@" "$binary" serve -c "$work/$name.yaml" >>"$work/$name.log" 2>&1 &
  gw=$!
  pids+=("$gw")
  for i in $(seq 1200); do
    # With keys, /health shows the instances to a request that presents one.
    ready="$(curl -s --max-time 2 -H "Authorization: Bearer sk-bench-$keys" "$url/health" \
      2>/dev/null | grep -o '"state":"ready"' | wc -l || true)"
    ((ready >= n)) && return 0
    kill -0 "$gw" 2>/dev/null || die "the gateway stopped (see $work/$name.log)"
    sleep 0.1
  done
  die "$name: $ready of $n instances ready after 120 s (see $work/$name.log)"
}

# The case again under callgrind, counting only the requests of a
# 1-connection run (and what the gateway does beside them meanwhile: its
# probes of the instances); sets `ir` (instructions per request, 0 without).
instructions() {  # NAME INSTANCES KEYS
  local name="$1" url="http://127.0.0.1:$gw_port/v1/chat/completions" r total
  ir=0
  ((cg_seconds > 0)) || return 0
  serve "$name" "$2" "$3" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$work/$name.callgrind"
  curl -s -o /dev/null -H 'Content-Type: application/json' \
    -H "Authorization: Bearer sk-bench-$3" -d "$body" "$url"  # the upstream connection pooled
  callgrind_control -i on "$gw" >/dev/null 2>&1
  r="$("$WRK" -t1 -c1 -d"${cg_seconds}s" --timeout 10s -s "$work/$name.lua" "$url" | grep '^RESULT')"
  callgrind_control -i off "$gw" >/dev/null 2>&1
  stop_pid "$gw" 300  # callgrind writes its file as the gateway exits
  total="$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/$name.callgrind" | tail -1)"
  [[ "$total" =~ ^[0-9]+$ ]] || die "$name: no callgrind totals in $work/$name.callgrind"
  ir="$(awk -v t="$total" -v q="$(field requests "$r")" 'BEGIN { printf "%.0f", t / q }')"
}

# One case: the gateway over the config, every instance ready, then wrk at
# 50 and at 1 connection, then under callgrind. Sets `req` (req/s), `cpu`
# (the gateway's CPU µs per request at 50 connections), `p50` (µs) and `ir`.
measure() {  # NAME INSTANCES POLICY KEYS
  local name="$1" n="$2" policy="$3" keys="$4" url="http://127.0.0.1:$gw_port"
  rm -f "$work/$name.log"
  fleet_yaml "$n" "$policy" "$keys" >"$work/$name.yaml"
  wrk_script "$keys" >"$work/$name.lua"
  serve "$name" "$n" "$keys"
  "$WRK" -t1 -c50 -d"${warmup}s" -s "$work/$name.lua" "$url/v1/chat/completions" >/dev/null
  local r50 r1 ms0 ms1
  ms0="$(cpu_ms "$gw")"
  r50="$("$WRK" -t1 -c50 -d"${duration}s" -s "$work/$name.lua" "$url/v1/chat/completions" |
    grep '^RESULT')"
  ms1="$(cpu_ms "$gw")"
  r1="$("$WRK" -t1 -c1 -d"${duration}s" -s "$work/$name.lua" "$url/v1/chat/completions" |
    grep '^RESULT')"
  echo "$r50" >"$work/$name.c50"
  echo "$r1" >"$work/$name.c1"
  stop_pid "$gw"
  instructions "$name" "$n" "$keys"
  (($(field errors "$r50") == 0 && $(field errors "$r1") == 0)) ||
    die "$name: wrk saw errors ($r50 / $r1)"
  req="$(awk -v q="$(field requests "$r50")" -v us="$(field duration_us "$r50")" \
    'BEGIN { printf "%.0f", q / (us / 1e6) }')"
  cpu="$(awk -v a="$ms0" -v b="$ms1" -v q="$(field requests "$r50")" \
    'BEGIN { printf "%.1f", (b - a) * 1000 / q }')"
  p50="$(field p50_us "$r1")"
}

row() {  # LABEL, then this case's and the group's first case's REQ CPU P50 IR
  awk -v l="$1" -v q="$2" -v c="$3" -v p="$4" -v i="$5" \
    -v bq="$6" -v bc="$7" -v bp="$8" -v bi="$9" 'BEGIN {
    printf "| %s | %d | %.2f× | %.1f | %.2f× | %d | %.2f× | %s | %s |\n", l, q, q / bq, c, c / bc,
      p, p / bp, (i > 0 ? sprintf("%d", i) : "-"), (bi > 0 ? sprintf("%.2f×", i / bi) : "-") }'
}

wait_for_quiet
echo "bench/scaling.sh $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(load1) at start"
echo "${duration} s per case; req/s and the gateway's CPU µs per request at 50 connections, p50 at 1 connection (µs), instructions per request (callgrind, ${cg_seconds} s at 1 connection); ratios against each group's first row"
echo
echo "| case | req/s | × first | CPU µs/request | × first | p50 µs | × first | instructions/request | × first |"
echo "|---|---|---|---|---|---|---|---|---|"
base=""
for k in ${key_counts//,/ }; do
  measure "keys-$k" 1 least-outstanding "$k"
  [[ -z "$base" ]] && base="$req $cpu $p50 $ir"
  row "$k key(s), 1 instance" "$req" "$cpu" "$p50" "$ir" $base
done
for policy in ${policies//,/ }; do
  base=""
  for n in ${instance_counts//,/ }; do
    measure "$policy-$n" "$n" "$policy" 0
    [[ -z "$base" ]] && base="$req $cpu $p50 $ir"
    row "$policy, $n instance(s)" "$req" "$cpu" "$p50" "$ir" $base
  done
done
echo
echo "load average $(load1) at the end"
