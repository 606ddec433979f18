#!/usr/bin/env bash
# How the gateway's cost grows with the work it holds (issue 32), in one run:
# req/s and the gateway's CPU time per request (user and kernel, from its
# threads' schedstat) at 50 connections, p50 at 1 connection, and user-space
# instructions per request (callgrind at 1 connection: on a shared machine
# the one figure that does not move with the neighbours), against
#   keys       1, 1,000, 100,000 static API keys (every request presents one)
#   instances  1, 64, 256 instances of the model, for each routing policy
#   queued     0, 1,000, 10,000 requests waiting on a full instance, so that
#              every slot that frees is handed to a queued request: req/s and
#              CPU per request at 50 slots with 50 + N connections (counted by
#              the gateway's own metrics over the measured seconds, after the
#              queue has filled), p50 the wait behind the queue, instructions
#              per request with 1 slot and 1 + N connections
# Every case above is the same gateway (one I/O thread) in front of one static
# OpenAI-shaped upstream (nginx `return 200 '<chat.completion>'`; all the
# instances are that upstream), so that only the gateway's work grows. Each
# row's ratio is against the first row of its group, measured in the same run.
# The requests take turns among --conversations conversations (each its own
# opening, so its own session and prefix): 100 by default, so that the 50 in
# flight are 50 agents' turns, as a session or prefix policy expects; with 1
# every request continues one conversation, whose home cannot hold 50 at once
# on 256 instances of 4 slots: every request spills (the spill path's cost).
#   idle       1,000, 10,000 open streams to simulators that stall after the
#              first token: the gateway's RSS before (after 100 such streams
#              opened and closed), while they are open (per stream) and after
#              they close (bench/faults/load.mjs --mode idle)
#
# Usage: bench/scaling.sh [options]
#   --duration S     measured seconds per case and connection count (default 5)
#   --rounds N       measure the cases of the keys and instances groups N
#                    times in turn (1, 256, 1, 256, ...), so that a drift of
#                    the machine's speed falls on every case alike: each row
#                    gives its medians, and its ratio to the group's first
#                    row is the median of the ratios within a round (each
#                    round's in brackets); callgrind in the first round only
#                    (default 1)
#   --warmup S       warm-up seconds before each case (default 2)
#   --keys LIST      comma list of key counts (default 1,1000,100000)
#   --instances LIST comma list of instance counts (default 1,64,256)
#   --policies LIST  comma list of routing policies (default: all four)
#   --conversations N  conversations the requests take turns among (default 100)
#   --prompt-kib N   KiB more of system prompt, the same in every conversation
#                    (an agent's instructions and tools: some 16 tokens a
#                    64-byte block that every instance ends up holding;
#                    default 0)
#   --queued LIST    comma list of queue lengths (default 0,1000,10000)
#   --idle LIST      comma list of idle stream counts (default 1000,10000)
#                    (an empty LIST skips its group)
#   --callgrind S    seconds of the 1-connection run under callgrind per case
#                    (default 5; 0 = no instruction counts)
#   --callgrind-opts O  more valgrind options for those runs, e.g.
#                    --cache-sim=yes (cache misses in the --out DIR's
#                    NAME.callgrind files: callgrind_annotate --show=D1mr,D1mw)
#   --wait-load L    first wait (at most 600 s) for the 1-min load average < L
#                    (default 1.0; 0 = do not wait)
#   --binary PATH    the switchyard binary (default build/switchyard)
#   --out DIR        keep configs, logs and raw results in DIR
#
# Needs wrk and nginx (Debian: wrk, nginx-light; installed when missing and
# run as root), valgrind for the instruction counts, node for the idle
# streams, and descriptors for the largest case (the soft limit raised to
# what it needs, the hard one too where that is allowed: the gateway holds
# two a stream, so 10,000 idle streams need some 20,300). Loopback only;
# every process it starts is stopped at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

duration=5
rounds=1
round=1
warmup=2
key_counts=1,1000,100000
instance_counts=1,64,256
policies=least-outstanding,round-robin,session,prefix-affinity
conversations=100
prompt_kib=0
queued_counts=0,1000,10000
idle_counts=1000,10000
cg_seconds=5
cg_opts=()
wait_load=1.0
binary="$repo/build/switchyard"
out=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --keys) key_counts="$2"; shift 2 ;;
    --instances) instance_counts="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --conversations) conversations="$2"; shift 2 ;;
    --prompt-kib) prompt_kib="$2"; shift 2 ;;
    --queued) queued_counts="$2"; shift 2 ;;
    --idle) idle_counts="$2"; shift 2 ;;
    --callgrind) cg_seconds="$2"; shift 2 ;;
    --callgrind-opts) read -ra cg_opts <<<"$2"; shift 2 ;;
    --wait-load) wait_load="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
for n in "$duration" "$rounds" "$warmup" "$cg_seconds" "$conversations" "$prompt_kib" ${key_counts//,/ } ${instance_counts//,/ } \
  ${queued_counts//,/ } ${idle_counts//,/ }; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a whole number"
done
(( duration >= 1 )) || die "--duration must be at least 1"
(( rounds >= 1 )) || die "--rounds must be at least 1"
(( conversations >= 1 )) || die "--conversations must be at least 1"
for p in ${policies//,/ }; do
  case "$p" in least-outstanding|round-robin|session|prefix-affinity) ;;
    *) die "--policies: '$p' is not a policy (least-outstanding, round-robin, session, prefix-affinity)" ;;
  esac
done

find_nginx_and_wrk
max_of() { tr ',' '\n' <<<"0,$1" | sort -n | tail -1; }
need=$(( $(max_of "$idle_counts") * 2 > $(max_of "$queued_counts") ? $(max_of "$idle_counts") * 2 : $(max_of "$queued_counts") ))
need=$((need + 300))  # the gateway's own: listener, log, probes, the simulators' pipes
if (( $(ulimit -n) < need )); then
  (( $(ulimit -Hn) >= need )) || ulimit -Hn "$need" 2>/dev/null ||
    die "the largest case needs $need descriptors a process and the hard limit is $(ulimit -Hn) (raising it needs CAP_SYS_RESOURCE): lower --idle (two a stream) or --queued"
  ulimit -n "$need"
fi
if ((cg_seconds > 0)); then
  command -v valgrind >/dev/null || die "--callgrind needs valgrind (sudo apt-get install -y valgrind), or pass --callgrind 0"
fi
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: cmake --build build --target switchyard)"

open_work
read -r static_port gw_port <<<"$(free_ports 2)"
model="bench-model"
# The request of conversation %d (a Lua string.format template).
system="You are a concise assistant.$(for ((i = 0; i < prompt_kib * 1024 / 32; i++)); do
  printf ' Tool %05d reads a named file.' "$i"; done)"
body_of='{"model":"'"$model"'","messages":[{"role":"system","content":"'"$system"'"},{"role":"user","content":"In one sentence, what does an HTTP gateway do? (conversation %04d)"}],"max_tokens":64,"temperature":0.2}'
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

wrk_script() {  # KEYS: the POST, presenting the last key, each the next conversation's
  cat <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
$( (($1 > 0)) && echo "wrk.headers[\"Authorization\"] = \"Bearer sk-bench-$1\"")
local turns, turn = {}, 0  -- each conversation's request, formatted once
function init(args)
  for i = 1, $conversations do
    turns[i] = wrk.format(nil, nil, nil, string.format([[$body_of]], i))
  end
end
function request()
  turn = turn % #turns + 1
  return turns[turn]
end
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
# 1-connection run: what the gateway does beside them meanwhile (its probes
# of the instances, 256 of them a round) is counted as long again with no
# request and taken off; sets `ir` (instructions per request, 0 without).
instructions() {  # NAME INSTANCES KEYS
  local name="$1" url="http://127.0.0.1:$gw_port/v1/chat/completions" r total
  ir=0
  ((cg_seconds > 0)) || return 0
  rm -f "$work/$name.callgrind"*  # a kept --out directory's earlier dumps
  serve "$name" "$2" "$3" valgrind --tool=callgrind "${cg_opts[@]}" --instr-atstart=no \
    --callgrind-out-file="$work/$name.callgrind"
  # Uncounted: the upstream connection pooled, every conversation seen once.
  "$WRK" -t1 -c1 -d2s --timeout 10s -s "$work/$name.lua" "$url" >/dev/null
  callgrind_control -i on "$gw" >/dev/null 2>&1
  r="$("$WRK" -t1 -c1 -d"${cg_seconds}s" --timeout 10s -s "$work/$name.lua" "$url" | grep '^RESULT')"
  callgrind_control -d "$gw" >/dev/null 2>&1  # NAME.callgrind.1: the requests and the probes
  sleep "$cg_seconds"
  callgrind_control -d "$gw" >/dev/null 2>&1  # NAME.callgrind.2: the probes alone
  callgrind_control -i off "$gw" >/dev/null 2>&1
  stop_pid "$gw" 300  # callgrind writes its file as the gateway exits
  per_request_ir "$name" "$(field requests "$r")"
}

# A callgrind file's total instructions.
callgrind_total() {  # FILE
  local total
  total="$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$1" | tail -1)"
  [[ "$total" =~ ^[0-9]+$ ]] || die "no callgrind totals in $1"
  echo "$total"
}

# Sets `ir` over REQUESTS: NAME's first callgrind dump less its second (the
# same seconds without requests) when there are two, else its whole file.
per_request_ir() {  # NAME REQUESTS
  local total idle=0
  if [[ -f "$work/$1.callgrind.2" ]]; then
    total="$(callgrind_total "$work/$1.callgrind.1")"
    idle="$(callgrind_total "$work/$1.callgrind.2")"
  else
    total="$(callgrind_total "$work/$1.callgrind")"
  fi
  ir="$(awk -v t="$total" -v i="$idle" -v q="$2" 'BEGIN { printf "%.0f", (t - i) / q }')"
}

# The gateway's CPU µs per request: its milliseconds from MS0 to MS1 over REQUESTS.
cpu_per_request() { awk -v a="$1" -v b="$2" -v q="$3" 'BEGIN { printf "%.1f", (b - a) * 1000 / q }'; }

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
  ir=0
  ((round == 1)) && instructions "$name" "$n" "$keys"
  (($(field errors "$r50") == 0 && $(field errors "$r1") == 0)) ||
    die "$name: wrk saw errors ($r50 / $r1)"
  req="$(awk -v q="$(field requests "$r50")" -v us="$(field duration_us "$r50")" \
    'BEGIN { printf "%.0f", q / (us / 1e6) }')"
  cpu="$(cpu_per_request "$ms0" "$ms1" "$(field requests "$r50")")"
  p50="$(field p50_us "$r1")"
}

# What the gateway's /metrics says of a family, summed over its labels.
metric_sum() {  # NAME
  curl -s --max-time 10 "http://127.0.0.1:$gw_port/metrics" |
    awk -v m="$1" '$1 == m || index($1, m "{") == 1 { n += $NF } END { printf "%.0f\n", n }'
}

# Until WAITING requests are queued (the clients have all connected), at most
# 300 s; then the measured seconds see slots handed on, not connections opened.
wait_queued() {  # NAME WAITING
  local i
  ((${2} > 0)) || return 0
  for i in $(seq 3000); do
    (($(metric_sum switchyard_queue_depth) >= $2)) && return 0
    sleep 0.1
  done
  die "$1: fewer than $2 requests queued after 300 s (see $work/$1.log)"
}

queued_yaml() {  # WAITING SLOTS: one instance of SLOTS, room for WAITING more
  echo "listen: 127.0.0.1:$gw_port"
  echo "max_connections: $(($1 + $2 + 500))"
  echo "queue: {max_length: $(($1 + 500)), max_wait: 10m}"
  echo "instances:"
  printf '  - {name: up0, model: %s, url: "http://127.0.0.1:%s", slots: %d}\n' "$model" "$static_port" "$2"
}

# Drives the gateway with CONNS connections (wrk, until stopped) and counts
# the requests it ends over S seconds once WAITING are queued; sets `served`,
# `seconds`, the gateway's CPU milliseconds `ms0` and `ms1` at both ends, and
# `r` (wrk's summary: its p50 is the wait behind the queue). ON-COMMAND and
# OFF-COMMAND run around the measured seconds (callgrind's switch).
drive_queued() {  # NAME CONNS WAITING S [ON-COMMAND OFF-COMMAND]
  local name="$1" url="http://127.0.0.1:$gw_port/v1/chat/completions" wrk_pid q0 q1 t0 t1
  "$WRK" -t1 -c"$2" -d600s --timeout 120s -s "$work/$name.lua" "$url" >"$work/$name.wrk" &
  wrk_pid=$!
  pids+=("$wrk_pid")
  wait_queued "$name" "$3"
  sleep "$warmup"
  ${5:-true} >/dev/null 2>&1
  q0="$(metric_sum switchyard_requests_total)"; t0="$(date +%s.%N)"; ms0="$(cpu_ms "$gw")"
  sleep "$4"
  q1="$(metric_sum switchyard_requests_total)"; t1="$(date +%s.%N)"; ms1="$(cpu_ms "$gw")"
  ${6:-true} >/dev/null 2>&1
  kill -INT "$wrk_pid"
  wait "$wrk_pid" || true
  forget_pid "$wrk_pid"
  served=$((q1 - q0))
  seconds="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
  r="$(grep '^RESULT' "$work/$name.wrk" || true)"
  ((served > 0)) || die "$name: no request served in the measured seconds (see $work/$name.log)"
}

# One queued case: 50 slots and 50 + WAITING connections, then (with
# callgrind) 1 slot and 1 + WAITING. Sets req, cpu, p50 and ir as measure does.
measure_queued() {  # NAME WAITING
  local name="$1" waiting="$2"
  rm -f "$work/$name.log" "$work/$name-cg.log"
  queued_yaml "$waiting" 50 >"$work/$name.yaml"
  wrk_script 0 >"$work/$name.lua"
  serve "$name" 1 0
  drive_queued "$name" $((50 + waiting)) "$waiting" "$duration"
  stop_pid "$gw"
  req="$(awk -v q="$served" -v s="$seconds" 'BEGIN { printf "%.0f", q / s }')"
  cpu="$(cpu_per_request "$ms0" "$ms1" "$served")"
  p50="$(field p50_us "$r")"
  ir=0
  ((cg_seconds > 0)) || return 0
  queued_yaml "$waiting" 1 >"$work/$name-cg.yaml"
  cp "$work/$name.lua" "$work/$name-cg.lua"
  rm -f "$work/$name.callgrind"*
  serve "$name-cg" 1 0 valgrind --tool=callgrind "${cg_opts[@]}" --instr-atstart=no \
    --callgrind-out-file="$work/$name.callgrind"
  drive_queued "$name-cg" $((1 + waiting)) "$waiting" "$cg_seconds" \
    "callgrind_control -i on $gw" "callgrind_control -i off $gw"
  stop_pid "$gw" 300
  per_request_ir "$name" "$served"
}

# STREAMS open streams through the gateway to simulators that stall after
# their first token (1,000 a simulator at most), held, then closed; prints
# the table's row.
idle_row() {  # STREAMS
  local n="$1" name="idle-$1" sims i per
  sims=$(((n + 999) / 1000))
  per=$(((n + sims - 1) / sims))
  rm -f "$work/$name.log"
  {
    echo "listen: 127.0.0.1:$gw_port"
    echo "max_connections: $((n + 1000))"
    echo "queue: {max_length: $n}"
    echo "timeouts: {stream_idle: 10m, startup: 60s, stop: 5s}"
    echo "instances:"
    for ((i = 1; i <= sims; i++)); do
      engine "sim$i" "$i" "$per" --ctx-size $((per * 256)) --stall-after-tokens 1
    done
  } >"$work/$name.yaml"
  serve "$name" "$sims" 0
  local streams
  # 100 streams first, so that "before" is a gateway that has served (the
  # code and the stores a first request touches are not the streams' cost).
  for streams in 100 "$n"; do
    node "$here/faults/load.mjs" --mode idle --url "http://127.0.0.1:$gw_port" --model "$model" \
      --streams "$streams" --rounds 1 --gateway-pid "$gw" --max-tokens 64 >"$work/$name.json" 2>"$work/$name.err" ||
      die "$name: the idle-stream driver failed: $(tail -3 "$work/$name.err")"
  done
  stop_pid "$gw" 30
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const n = Number(process.argv[2]), o = r.rounds[0];
    if (o.open_streams !== n) { console.error(`only ${o.open_streams} of ${n} streams opened`); process.exit(1); }
    // Streams the gateway had not closed by the deadline of the driver: the
    // "after" figures are not those of a gateway without them, and say so.
    const open = o.after.client_connections ?? 0;
    if (open > 0) console.error(`${n} idle streams: ${open} still open on the gateway after the deadline`);
    const f = (x) => x.toFixed(1);
    console.log(`| ${n} | ${f(r.base.rss_mib)} | ${f(o.open.rss_mib)} | ${f((o.open.rss_mib - r.base.rss_mib) * 1024 / n)} | ${f(o.after.rss_mib)} | ${(o.after.rss_mib / r.base.rss_mib).toFixed(2)}×${open > 0 ? ` (${open} streams not closed)` : ""} | ${f(r.base.anon_mib)} / ${f(r.base.file_mib)} → ${f(o.after.anon_mib)} / ${f(o.after.file_mib)} |`);
  ' "$work/$name.json" "$n" || die "$name: see $work/$name.json"
}

# A table row: LABEL, then for req/s, CPU, p50 and instructions in turn this
# case's figures of every round and the group's first case's, each a
# space-separated list (instructions: the first round's only).
row() {  # LABEL REQS FIRST_REQS CPUS FIRST_CPUS P50S FIRST_P50S IR FIRST_IR
  awk -v l="$1" -v q="$2" -v bq="$3" -v c="$4" -v bc="$5" -v p="$6" -v bp="$7" \
    -v i="$8" -v bi="$9" '
    function median(list, a, n, k, j, t) {
      n = split(list, a, " ")
      for (k = 2; k <= n; k++) for (j = k; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    # The median of the ratios within a round; with several rounds, each in brackets.
    function ratio(list, first, shown, a, b, n, k, r, each) {
      n = split(list, a, " "); split(first, b, " ")
      for (k = 1; k <= n; k++) {
        r = r " " a[k] / b[k]
        each = each (k > 1 ? ", " : "") sprintf("%.2f", a[k] / b[k])
      }
      return sprintf("%.2f×", median(r)) (shown && n > 1 ? " (" each ")" : "")
    }
    BEGIN {
      printf "| %s | %d | %s | %.1f | %s | %d | %s | %s | %s |\n", l, median(q), ratio(q, bq, 1),
        median(c), ratio(c, bc, 0), median(p), ratio(p, bp, 0), (i > 0 ? i : "-"),
        (bi > 0 ? sprintf("%.2f×", i / bi) : "-")
    }'
}

# Measures a group's cases, each "NAME|LABEL|INSTANCES|POLICY|KEYS", --rounds
# times in turn, then prints their rows against the first.
run_group() {  # CASE...
  local -A reqs=() cpus=() p50s=() irs=()
  local c name label n policy keys first
  for ((round = 1; round <= rounds; round++)); do
    for c in "$@"; do
      IFS='|' read -r name label n policy keys <<<"$c"
      measure "$name" "$n" "$policy" "$keys"
      reqs[$name]+=" $req" cpus[$name]+=" $cpu" p50s[$name]+=" $p50"
      ((round == 1)) && irs[$name]="$ir"
    done
  done
  round=1
  first="${1%%|*}"
  for c in "$@"; do
    IFS='|' read -r name label _ <<<"$c"
    row "$label" "${reqs[$name]}" "${reqs[$first]}" "${cpus[$name]}" "${cpus[$first]}" \
      "${p50s[$name]}" "${p50s[$first]}" "${irs[$name]}" "${irs[$first]}"
  done
}

wait_for_quiet
echo "bench/scaling.sh $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(load1) at start"
echo "${duration} s per case, $rounds round(s) of the keys and instances (medians; ratios: within a round); requests taking turns among $conversations conversation(s), $prompt_kib KiB more of system prompt; req/s and the gateway's CPU µs per request at 50 connections, p50 at 1 connection (µs), instructions per request (callgrind, ${cg_seconds} s at 1 connection, less as long without requests: the probes); ratios against each group's first row"
header() {
  echo
  echo "| case | req/s | × first | CPU µs/request | × first | p50 µs | × first | instructions/request | × first |"
  echo "|---|---|---|---|---|---|---|---|---|"
}
[[ -n "$key_counts" || ( -n "$instance_counts" && -n "$policies" ) ]] && header
cases=()
for k in ${key_counts//,/ }; do cases+=("keys-$k|$k key(s), 1 instance|1|least-outstanding|$k"); done
((${#cases[@]} > 0)) && run_group "${cases[@]}"
for policy in ${policies//,/ }; do
  cases=()
  for n in ${instance_counts//,/ }; do cases+=("$policy-$n|$policy, $n instance(s)|$n|$policy|0"); done
  ((${#cases[@]} > 0)) && run_group "${cases[@]}"
done
if [[ -n "$queued_counts" ]]; then
  echo
  echo "Queued: 50 slots, 50 + N connections (p50: the wait behind the queue); instructions with 1 slot and 1 + N connections"
  header
  base=()
  for n in ${queued_counts//,/ }; do
    measure_queued "queued-$n" "$n"
    ((${#base[@]} > 0)) || base=("$req" "$cpu" "$p50" "$ir")
    row "$n queued" "$req" "${base[0]}" "$cpu" "${base[1]}" "$p50" "${base[2]}" "$ir" "${base[3]}"
  done
fi
if [[ -n "$idle_counts" ]]; then
  echo
  echo "| open idle streams | RSS before (MiB) | RSS open (MiB) | KiB a stream | RSS after they close (MiB) | × before | anon / file pages (MiB), before → after |"
  echo "|---|---|---|---|---|---|---|"
  for n in ${idle_counts//,/ }; do idle_row "$n"; done
fi
echo
echo "load average $(load1) at the end"
