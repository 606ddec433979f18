#!/usr/bin/env bash
# The fault matrix (issue 12): a gateway over simulated engines, a fault per
# row, and every request counted.
#
# Each row starts its own `switchyard serve` over `switchyard sim` engines it
# supervises, warms it up, records its RSS and open descriptors, runs
# bench/faults/load.mjs (chat completions, each ending ok / clean error / lost
# / hung, see that file) while the fault happens, records them again, counts
# <defunct> children, stops the gateway (SIGTERM) and checks that no engine
# outlived it. Rows:
#   engine-kill     SIGKILL one engine of 4, three times, each after it is back
#   wrapper-kill    the same for the /bin/sh wrapping an engine (`cmd ; exit`)
#   sigstop         SIGSTOP one engine for 8 s (past stream_idle 5 s), SIGCONT
#   reset           one engine of 4 resets every stream after 10 tokens
#   fail-half       2 of 4 engines answer 503 to their first 100 requests
#   crash-loop      one engine of 4 exits after 20 tokens, each life
#   sighup-flood    100 SIGHUPs 50 ms apart, a fifth engine removed and added
#   drain           SIGTERM with streams in flight; new requests meanwhile
#   drain-timeout   SIGTERM with 400-token requests at 20 tok/s and a 2 s drain:
#                   each ends with shutting_down (wrong: any other error code,
#                   or an engine blamed in the log)
#   aborted-ledger  clients close their streams after 20 tokens: each ledger
#                   row charges at least what was read (wrong: less, or no row);
#                   the excess is what was relayed before the gateway saw the close
#   keys-damaged    a stored key's requests, a quarter sent without it; the keys
#                   table's page of state_db overwritten (dd) meanwhile: the key
#                   keeps working, the others get 401 (wrong: a 401 to the key,
#                   a 200 without it); then a restart on the damaged file must
#                   exit 2 naming it (wrong: any other end). The stop's WAL
#                   checkpoint writes the page back from its good copy; if it
#                   did, the page is damaged again before the restart
#   redis-restart   two gateways (own state_db each) on one redis-server; a key
#                   created through A's config, the load on B (a quarter without
#                   the key); Redis SIGKILLed and started empty on its port
#                   meanwhile (wrong as keys-damaged, or the key's record not
#                   back in Redis within 10 s)
#   admin-doors     two gateways without admin_key on 127.0.0.1 (one with
#                   admin_hosts, one without) under load; rounds of cross-origin,
#                   no-cors and DNS-rebinding requests to the admin routes and
#                   /models/unload meanwhile: each refused (403 or 415), the
#                   fleet unchanged (wrong: an attack not refused so, a control
#                   request that should pass refused, a profile or instance changed)
#   slowloris       200 connections sending headers a byte a second, with load
#   fd-limit        the gateway under `ulimit -n 1024`, 1,500 concurrent streams
#   idle-streams    5,000 streams held open (an engine that stalls after a
#                   token), closed, five rounds: RSS at peak and after
#   soak            --soak-seconds of mixed streamed / whole requests
# The gateway's timeouts are short so a fault resolves within the row:
# first_byte 15s, stream_idle 5s, client_header 5s, health.interval 1s.
#
# Usage: bench/faults.sh [options]
#   --quick             a smoke run: fewer requests, 1,000 idle streams in 2 rounds, a 20 s soak,
#                       10 s of load in redis-restart and admin-doors (else 30 s)
#   --soak-seconds S    length of the soak row (default 300)
#   --rows LIST         comma-separated rows to run (default: all, in the order above)
#   --wait-load L       first wait (at most 600 s) for the 1-min load average < L (default 0: no wait)
#   --binary PATH       the switchyard binary (default build/switchyard)
#   --out DIR           keep configs, logs and JSON in DIR (default: a temp dir)
#
# Prints a Markdown table (also in DIR/table.md). Loopback only; every process
# it starts is stopped at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

all_rows="engine-kill,wrapper-kill,sigstop,reset,fail-half,crash-loop,sighup-flood,drain,drain-timeout,aborted-ledger,keys-damaged,redis-restart,admin-doors,slowloris,fd-limit,idle-streams,soak"
quick=0
soak_seconds=300
rows="$all_rows"
wait_load=0
binary="$repo/build/switchyard"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --soak-seconds) soak_seconds="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --wait-load) wait_load="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$soak_seconds" =~ ^[1-9][0-9]*$ ]] || die "--soak-seconds: '$soak_seconds' is not a positive whole number"
for r in ${rows//,/ }; do
  [[ ",$all_rows," == *",$r,"* ]] || die "--rows: unknown row '$r' (known: $all_rows)"
done
[[ -x "$binary" ]] || die "no switchyard binary at $binary (build: make build)"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
for tool in node python3 curl; do command -v "$tool" >/dev/null || die "$tool is needed"; done
if [[ ",$rows," == *",redis-restart,"* ]]; then
  for tool in redis-server redis-cli; do command -v "$tool" >/dev/null || die "$tool is needed by row redis-restart"; done
fi

keep=0
if [[ -n "$out" ]]; then mkdir -p "$out"; work="$(cd "$out" && pwd)"; keep=1
else work="$(mktemp -d /tmp/sy-faults.XXXXXX)"; fi
pids=()
# The model name tags this run's engines, so leftovers can be found by it.
model="fb$$"
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pkill -KILL -f -- "--alias $model( |$)" 2>/dev/null || true
  (( keep )) || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if (( quick )); then
  n_req=120; kills=1; hups=20; slow=50; slow_s=8; idle=1000; idle_rounds=2; soak_seconds=20; load_s=10; door_rounds=1
else
  n_req=400; kills=3; hups=100; slow=200; slow_s=15; idle=5000; idle_rounds=5; load_s=30; door_rounds=4
fi
conc=16
deadline_ms=60000
results="$work/results.jsonl"; : >"$results"

# ---------------------------------------------------------------------------
# The fleet

# fleet_config PORT [top-level YAML lines...]; the instances follow on stdin.
fleet_config() {
  local port="$1"; shift
  echo "listen: 127.0.0.1:$port"
  echo "models: [{name: $model}]"
  local l; for l in "$@"; do echo "$l"; done
  echo "instances:"
  cat
}

timeouts_short='timeouts: {first_byte: 15s, stream_idle: 5s, client_header: 5s, startup: 60s, drain: 20s, stop: 5s}'
health_fast='health: {interval: 1s}'

four_engines() {  # the usual fleet; EXTRA flags for e1 (and e2 with FLAGS2)
  engine e1 1 4 "${1:-}"
  engine e2 2 4 "${2:-}"
  engine e3 3 4
  engine e4 4 4
}

# ---------------------------------------------------------------------------
# The gateway and its engines

# The row's gateways: gw_pid and gw_port are the last one started (the one
# gw_state, zombies and drive look at), gw_pids all of them (gw_stop stops
# them all). A row with two sets gw_port before each gw_start.
gw_pid=""
gw_port=""
gw_pids=()
# The API key ready_count and warm_up present, for a row whose gateway has keys
# (its /health shows the instances only to a request with one).
gw_key=""
# gw_start CONFIG [NOFILE]: start serve (under `ulimit -n NOFILE` if given)
# and wait until every instance is ready.
gw_start() {
  local cfg="$1" nofile="${2:-}"
  if [[ -n "$nofile" ]]; then
    (ulimit -n "$nofile"; exec "$binary" serve -c "$cfg") >"$cfg.log" 2>&1 &
  else
    "$binary" serve -c "$cfg" >"$cfg.log" 2>&1 &
  fi
  gw_pid=$!; pids+=("$gw_pid"); gw_pids+=("$gw_pid")
  local want; want=$(grep -c '^  - {name:' "$cfg")
  local i
  for i in $(seq 600); do
    (( $(ready_count) == want )) && return 0
    kill -0 "$gw_pid" 2>/dev/null || die "the gateway exited: $(tail -5 "$cfg.log")"
    sleep 0.1
  done
  die "the gateway's engines did not all become ready in 60 s: $(tail -5 "$cfg.log")"
}

ready_count() {  # instances whose state is ready
  curl -s --max-time 2 ${gw_key:+-H "Authorization: Bearer $gw_key"} "http://127.0.0.1:$gw_port/health" 2>/dev/null |
    grep -o '"state":"ready"' | wc -l || true
}

wait_ready() {  # N: until N instances are ready (60 s at most)
  local i
  for i in $(seq 600); do (( $(ready_count) >= $1 )) && return 0; sleep 0.1; done
  echo "warning: only $(ready_count) of $1 instances ready after 60 s" >&2
}

# seconds_since T0: seconds (one decimal) since date +%s.%N gave T0.
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}'; }

# gw_stop: SIGTERM to the row's gateways at once, bounded wait; sets
# stop_result to "exit-status seconds engines-left", the statuses joined by /
# when there are several (not printed: it must run in this shell, the
# gateways' parent).
stop_result=""
gw_stop() {
  local t0 i p rc rcs=""
  t0=$(date +%s.%N)
  for p in "${gw_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${gw_pids[@]}"; do
    for i in $(seq 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; fi
    wait "$p" 2>/dev/null && rc=0 || rc=$?
    rcs+="${rcs:+/}$rc"
  done
  local secs; secs=$(seconds_since "$t0")
  for p in "${gw_pids[@]}"; do stop_pid "$p"; done
  gw_pids=()
  local left=0
  for i in $(seq 50); do
    left=$(pgrep -c -f -- "--alias $model( |$)" || true)
    (( left == 0 )) && break
    sleep 0.1
  done
  stop_result="$rcs $secs $left"
}

gw_state() {  # "RSS-MiB fds" of the gateway
  awk '/^VmRSS:/{printf "%.1f ", $2 / 1024}' "/proc/$gw_pid/status"
  ls "/proc/$gw_pid/fd" | wc -l
}

zombies() {  # <defunct> children of the gateway
  ps -o stat= --ppid "$gw_pid" 2>/dev/null | grep -c '^Z' || true
}

# engine_pid SEED COMM: the pid of engine SEED's process named COMM
# (`switchyard` for the sim itself, `sh` for its wrapper).
engine_pid() {
  local p
  for p in $(pgrep -f -- "--alias $model --seed $1( |$)" || true); do
    [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == "$2" ]] && { echo "$p"; return 0; }
  done
  return 1
}

# ---------------------------------------------------------------------------
# The client

drv_pid=""
drv_name=""
# drive NAME ARGS...: load.mjs in the background, its JSON in NAME.json.
drive() {
  local name="$1"; shift
  : >"$work/$name.progress"
  node "$here/faults/load.mjs" --url "http://127.0.0.1:$gw_port" --model "$model" \
    --deadline-ms "$deadline_ms" --progress "$work/$name.progress" "$@" >"$work/$name.json" 2>"$work/$name.err" &
  drv_pid=$!; pids+=("$drv_pid"); drv_name="$name"
}
drive_wait() {
  wait "$drv_pid" || die "the load driver of row $drv_name failed: $(tail -3 "$work/$drv_name.err")"
  forget_pid "$drv_pid"
}
# progress_at NAME FIELD N: until field FIELD (1 ended, 2 first tokens) of
# NAME's progress is >= N, or the driver ended (120 s at most).
progress_at() {
  local i v
  for i in $(seq 1200); do
    v=$(awk -v f="$2" '{print $f}' "$work/$1.progress" 2>/dev/null || true)
    [[ -n "$v" ]] && (( v >= $3 )) && return 0
    kill -0 "$drv_pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

warm_up() {
  node "$here/faults/load.mjs" --url "http://127.0.0.1:$gw_port" --model "$model" \
    --requests $((2 * conc)) --concurrency "$conc" --stream-share 0.5 ${gw_key:+--key "$gw_key"} >/dev/null
}

# add_wrong ROW N WHY: N more wrong outcomes in ROW's JSON (found outside the driver).
add_wrong() {
  python3 - "$work/$1.json" "$2" "$3" <<'PY'
import json, sys
path, n, why = sys.argv[1], int(sys.argv[2]), sys.argv[3]
doc = json.load(open(path))
if n:
    doc["wrong"] = doc.get("wrong", 0) + n
    doc["detail"][f"wrong:{why}"] = doc["detail"].get(f"wrong:{why}", 0) + n
json.dump(doc, open(path, "w"))
PY
}

# record ROW NOTE BEFORE AFTER ZOMBIES STOP: one line of results.jsonl.
record() {
  python3 - "$work/$1.json" "$1" "$2" "$3" "$4" "$5" "$6" >>"$results" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
row, note, before, after, zombies, stop = sys.argv[2:8]
doc.update(row=row, note=note, before=before, after=after, zombies=int(zombies), stop=stop)
print(json.dumps(doc))
PY
}

# ---------------------------------------------------------------------------
# Rows

# A standard row: 4 engines (e1/e2 with FLAGS), a load, FAULT run meanwhile.
standard_row() {
  local row="$1" flags1="$2" flags2="$3" fault="$4" load_args="$5" note="$6"
  read -r gw_port <<<"$(free_ports 1)"
  four_engines "$flags1" "$flags2" | fleet_config "$gw_port" "$timeouts_short" "$health_fast" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  warm_up
  local before; before=$(gw_state)
  # shellcheck disable=SC2086
  drive "$row" $load_args
  "$fault" "$row"
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  record "$row" "$note" "$before" "$after" "$z" "$stop_result"
}

no_fault() { :; }

kill_engine_fault() {  # SIGKILL e1's process named $2, $kills times
  local row="$1" comm="$2" k p
  for k in $(seq "$kills"); do
    progress_at "$row" 1 $((n_req * k / (kills + 2)))
    p=$(engine_pid 1 "$comm") || { echo "warning: no $comm process for e1" >&2; continue; }
    kill -KILL "$p"
    wait_ready 4
  done
}
engine_kill_fault() { kill_engine_fault "$1" switchyard; }
wrapper_kill_fault() { kill_engine_fault "$1" sh; }

sigstop_fault() {
  local p
  progress_at "$1" 1 $((n_req / 4))
  p=$(engine_pid 1 switchyard) || return 0
  kill -STOP "$p"
  sleep 8
  kill -CONT "$p"
}

sighup_fault() {  # toggle e5 in and out of the config with each SIGHUP
  local row="$1" cfg="$work/$1.yaml" i
  cp "$cfg" "$cfg.without"
  { cat "$cfg"; engine e5 5 4; } >"$cfg.with"
  progress_at "$row" 1 $((n_req / 10))
  for i in $(seq "$hups"); do
    if (( i % 2 )); then cp "$cfg.with" "$cfg"; else cp "$cfg.without" "$cfg"; fi
    kill -HUP "$gw_pid"
    sleep 0.05
  done
}

row_engine-kill() { standard_row engine-kill "" "" engine_kill_fault "--requests $n_req --concurrency $conc" "SIGKILL e1 ×$kills"; }
row_wrapper-kill() {
  standard_row wrapper-kill "; exit" "" wrapper_kill_fault "--requests $n_req --concurrency $conc" "SIGKILL e1's sh ×$kills"
}
row_sigstop() {
  standard_row sigstop "" "" sigstop_fault "--requests $n_req --concurrency $conc --stream-share 0.5" "e1 stopped 8 s; half streamed"
}
row_reset() { standard_row reset "--reset-after-tokens 10" "" no_fault "--requests $n_req --concurrency $conc" "e1 resets after 10 of 32 tokens"; }
row_fail-half() {
  standard_row fail-half "--fail-before-first-byte 100" "--fail-before-first-byte 100" no_fault \
    "--requests $n_req --concurrency $conc" "e1, e2: 503 ×100 each"
}
row_crash-loop() { standard_row crash-loop "--exit-after-tokens 20" "" no_fault "--requests $n_req --concurrency $conc" "e1 exits after 20 tokens, each life"; }
row_sighup-flood() {
  standard_row sighup-flood "" "" sighup_fault "--requests $n_req --concurrency $conc" "$hups SIGHUPs, e5 added/removed"
}

row_drain() {
  local row=drain
  read -r gw_port <<<"$(free_ports 1)"
  four_engines | fleet_config "$gw_port" "$timeouts_short" "$health_fast" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  warm_up
  local before; before=$(gw_state)
  # 16 streams of 400 tokens (2 s at 200 tok/s) in flight, then SIGTERM; the
  # driver keeps sending (96 more) while the gateway drains and exits.
  drive "$row" --requests $((conc * 7)) --concurrency "$conc" --max-tokens 400
  progress_at "$row" 2 "$conc"
  local z; z=$(zombies)
  gw_stop
  drive_wait
  record "$row" "SIGTERM with $conc streams in flight, $((conc * 6)) more sent" "$before" "- -" "$z" "$stop_result"
}

row_drain-timeout() {
  local row=drain-timeout
  read -r gw_port <<<"$(free_ports 1)"
  # One engine at 20 tok/s: a 400-token request runs 20 s, far past the drain.
  engine e1 1 "$conc" | sed 's/--tokens-per-second 200/--tokens-per-second 20/' |
    fleet_config "$gw_port" "${timeouts_short/drain: 20s/drain: 2s}" "$health_fast" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  warm_up
  local before; before=$(gw_state)
  # $conc requests in flight (half streamed), SIGTERM once the streams have
  # their first token; the driver sends $conc more meanwhile.
  drive "$row" --requests $((conc * 2)) --concurrency "$conc" --max-tokens 400 --stream-share 0.5 \
    --expect-code shutting_down
  progress_at "$row" 2 $((conc / 2))
  local z; z=$(zombies)
  gw_stop
  drive_wait
  add_wrong "$row" "$(grep -cE 'failed mid-stream|failed_on=|ejected \(' "$work/$row.yaml.log" || true)" engine-blamed
  record "$row" "SIGTERM with $conc requests of 400 tokens at 20 tok/s in flight, drain 2 s, $conc more sent" \
    "$before" "- -" "$z" "$stop_result"
}

row_aborted-ledger() {
  local row=aborted-ledger
  read -r gw_port <<<"$(free_ports 1)"
  four_engines | fleet_config "$gw_port" "$timeouts_short" "$health_fast" "state_db: $work/$row.db" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  warm_up
  local before; before=$(gw_state)
  drive "$row" --requests "$n_req" --concurrency "$conc" --max-tokens 400 --read-tokens 20
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  # Each stream's ledger row against what its client read (the stop flushed the ledger).
  "$binary" usage -c "$work/$row.yaml" --trace >"$work/$row.trace"
  local note
  note=$(python3 - "$work/$row.json" "$work/$row.trace" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
charged = {}
for line in open(sys.argv[2]):
    if line.strip():
        r = json.loads(line)
        charged[r["request_id"]] = r["completion_tokens"]
wrong, read_sum, charged_sum, excess = 0, 0, 0, []
for rid, n in doc.pop("reads"):
    c = charged.get(rid)
    read_sum += n
    charged_sum += c or 0
    if c is None or c < n:
        wrong += 1
    else:
        excess.append(c - n)
excess.sort()
doc["wrong"] = doc.get("wrong", 0) + wrong
if wrong:
    doc["detail"]["wrong:ledger"] = wrong
json.dump(doc, open(sys.argv[1], "w"))
median = excess[len(excess) // 2] if excess else 0
print(f"streams closed after 20 tokens; read {read_sum}, ledger charged {charged_sum} output tokens "
      f"(excess per stream: median {median}, max {excess[-1] if excess else 0})")
PY
)
  record "$row" "$note" "$before" "$after" "$z" "$stop_result"
}

# ---------------------------------------------------------------------------
# Keys, Redis and the admin doors (issue 31)

# create_key CONFIG NAME: a stored key through CONFIG (`switchyard keys
# create`); prints the key.
create_key() {
  "$binary" keys -c "$1" create "$2" 2>>"$1.keys.log" | grep -E '^sy-[A-Za-z0-9]+$' ||
    die "switchyard keys create $2 failed: $(tail -3 "$1.keys.log")"
}

# key_status PORT [CURL ARGS...]: the status of GET /v1/models (which needs a
# key when keys are on) on the gateway on PORT.
key_status() {
  local port="$1"; shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "http://127.0.0.1:$port/v1/models" || true
}

# wait_key PORT: until the gateway on PORT takes gw_key and refuses a request
# without it (10 s at most).
wait_key() {
  local i
  for i in $(seq 100); do
    [[ "$(key_status "$1" -H "Authorization: Bearer $gw_key")" == 200 && "$(key_status "$1")" == 401 ]] && return 0
    sleep 0.1
  done
  die "the gateway on port $1 does not use the key after 10 s"
}

# sql DB QUERY: one value from SQLite (python3's module), or "error: why".
sql() {
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
try:
    print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])
except sqlite3.Error as e:
    print(f"error: {e}")
PY
}

# damage_page DB PAGE: PAGE (1-based, as SQLite counts) overwritten with random bytes.
damage_page() { dd if=/dev/urandom of="$1" bs=4096 seek=$(($2 - 1)) count=1 conv=notrunc status=none; }

# start_once CONFIG: start serve on CONFIG, expecting it to refuse; sets
# start_rc to its exit status, or to "served" if it started listening (it is
# then stopped). 30 s at most; its output in CONFIG.restart.log.
start_rc=""
start_once() {
  local log="$1.restart.log" p i
  "$binary" serve -c "$1" >"$log" 2>&1 &
  p=$!; pids+=("$p")
  for i in $(seq 300); do
    kill -0 "$p" 2>/dev/null || break
    grep -q 'listening on' "$log" && break
    sleep 0.1
  done
  if kill -0 "$p" 2>/dev/null; then start_rc=served; else wait "$p" && start_rc=0 || start_rc=$?; fi
  stop_pid "$p"
}

row_keys-damaged() {
  local row=keys-damaged db="$work/keys-damaged.db"
  read -r gw_port <<<"$(free_ports 1)"
  four_engines | fleet_config "$gw_port" "$timeouts_short" "$health_fast" "state_db: $db" >"$work/$row.yaml"
  gw_key=$(create_key "$work/$row.yaml" faults)
  # The page the keys table lives on (one key: its root is its only page).
  local page; page=$(sql "$db" "SELECT rootpage FROM sqlite_master WHERE name = 'keys'")
  [[ "$page" =~ ^[0-9]+$ ]] || die "no keys table in $db: $page"
  gw_start "$work/$row.yaml"
  wait_key "$gw_port"
  warm_up
  local before; before=$(gw_state)
  drive "$row" --requests "$n_req" --concurrency "$conc" --key "$gw_key" --unauth-share 0.25
  progress_at "$row" 1 $((n_req / 3))
  local at; at=$(cut -d' ' -f1 "$work/$row.progress")
  damage_page "$db" "$page"
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  gw_key=""
  # The gateway's stop checkpoints its WAL into the file: a copy of the page
  # there (its last write of the key's last_used) repairs it. Then the file is
  # damaged again, the gateway stopped, for the restart.
  local healed="" readable
  readable=$(sql "$db" "SELECT count(*) FROM keys")
  if [[ "$readable" == 1 ]]; then
    healed="; the stop's WAL checkpoint wrote the page back (keys readable), damaged again while stopped"
    damage_page "$db" "$page"
  fi
  start_once "$work/$row.yaml"
  local named=0 restart
  grep -qF "state_db: $db:" "$work/$row.yaml.restart.log" && named=1
  if [[ "$start_rc" == 2 ]] && (( named )); then
    restart="exit 2 naming the file ($(grep -oE '(file is not a database|database disk image is malformed)' "$work/$row.yaml.restart.log" | head -1 || true))"
  else
    restart="ended '$start_rc' (file named: $named)"
    add_wrong "$row" 1 restart-not-refused
  fi
  record "$row" "page $page of state_db (the keys table) overwritten after $at of $n_req requests, a quarter sent without the key$healed; restart: $restart" \
    "$before" "$after" "$z" "$stop_result"
}

redis_pid=""
# redis_start PORT: redis-server on 127.0.0.1:PORT without persistence, until
# it answers PING (10 s at most).
redis_start() {
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >>"$work/redis-$1.log" 2>&1 &
  redis_pid=$!; pids+=("$redis_pid")
  local i
  for i in $(seq 100); do
    [[ "$(redis-cli -p "$1" ping 2>/dev/null || true)" == PONG ]] && return 0
    kill -0 "$redis_pid" 2>/dev/null || die "redis-server exited: $(tail -3 "$work/redis-$1.log")"
    sleep 0.1
  done
  die "redis-server on port $1 does not answer after 10 s"
}

# redis_state PORT: Redis's state in the /health of the gateway on PORT.
redis_state() {
  curl -s --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin).get("redis", {}).get("state", "?"))' 2>/dev/null || echo "?"
}

row_redis-restart() {
  local row=redis-restart rport pa pb
  read -r rport pa pb <<<"$(free_ports 3)"
  redis_start "$rport"
  local shared=("redis: redis://127.0.0.1:$rport/0" "redis_secret: faults-$$-shared")
  engine e1 1 4 | fleet_config "$pa" "$timeouts_short" "$health_fast" "state_db: $work/$row-a.db" "${shared[@]}" >"$work/$row-a.yaml"
  { engine e2 2 4; engine e3 3 4; engine e4 4 4; } |
    fleet_config "$pb" "$timeouts_short" "$health_fast" "state_db: $work/$row-b.db" "${shared[@]}" >"$work/$row-b.yaml"
  # The key is in A's state_db and in Redis; B learns it from Redis.
  gw_key=$(create_key "$work/$row-a.yaml" faults)
  gw_port=$pa; gw_start "$work/$row-a.yaml"
  gw_port=$pb; gw_start "$work/$row-b.yaml"
  wait_key "$pa"; wait_key "$pb"
  warm_up
  local before; before=$(gw_state)
  drive "$row" --seconds "$load_s" --concurrency "$conc" --key "$gw_key" --unauth-share 0.25
  progress_at "$row" 1 $((n_req / 4))
  local at; at=$(cut -d' ' -f1 "$work/$row.progress")
  local t0 i down="" back="" empty
  t0=$(date +%s.%N)
  { kill -KILL "$redis_pid"; stop_pid "$redis_pid"; } 2>/dev/null  # without bash's "Killed" notice
  for i in $(seq 100); do [[ "$(redis_state "$pb")" == down ]] && { down=$(seconds_since "$t0"); break; }; sleep 0.1; done
  redis_start "$rport"
  empty=$(redis-cli -p "$rport" hlen 'switchyard:{keys}:records')
  for i in $(seq 100); do
    [[ "$(redis-cli -p "$rport" hexists 'switchyard:{keys}:records' faults)" == 1 ]] && { back=$(seconds_since "$t0"); break; }
    sleep 0.1
  done
  local running=no; kill -0 "$drv_pid" 2>/dev/null && running=yes
  drive_wait
  [[ -n "$back" ]] || add_wrong "$row" 1 record-not-back-in-redis
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  gw_key=""
  stop_pid "$redis_pid"
  local note="load on B with a key created through A, a quarter without it; Redis SIGKILLed after $at requests"
  [[ -n "$down" ]] && note+=", down in B's /health after $down s"
  note+=", started empty ($empty records); the key's record back in Redis "
  if [[ -n "$back" ]]; then note+="after $back s"; else note+="not within 10 s"; fi
  record "$row" "$note; load still running then: $running" "$before" "$after" "$z" "$stop_result"
}

# A round of requests to the admin routes, sent by one curl (one process, not
# one per request, so that the round runs while the load does): its
# arguments, transfers joined by --next, and "WANT WHAT" of each.
doors_batch=()
doors_want=()
doors_log=""
# attack WANT PORT PATH WHAT [CURL ARGS...]: one more request of the round to
# PATH on the gateway on PORT, whose answer should have status WANT. WHAT
# starting with control: is a request the doors must let through.
attack() {
  local want="$1" port="$2" path="$3" what="$4"; shift 4
  (( ${#doors_batch[@]} )) && doors_batch+=(--next)
  doors_batch+=(-s -o /dev/null -w '%{http_code}\n' --max-time 3 "$@" "http://127.0.0.1:$port$path")
  doors_want+=("$want $what")
}
# doors_send: sends the round; a line "WANT GOT WHAT" for each request in
# $doors_log (GOT 000: no answer).
doors_send() {
  local got=() i
  mapfile -t got < <(curl "${doors_batch[@]}" || true)
  for i in "${!doors_want[@]}"; do
    echo "${doors_want[i]%% *} ${got[i]:-000} ${doors_want[i]#* }"
  done >>"$doors_log"
  doors_batch=(); doors_want=()
}

# door_round PORT: one round of attacks (and controls) on the admin routes of
# the gateway on PORT, which has no admin_key.
door_round() {
  local port="$1" route path body json=(-H 'Content-Type: application/json')
  local evil="evil.example:$port" here_origin="http://127.0.0.1:$port"
  for route in "/admin/instances/e1/drain {}" "/admin/profile {\"profile\":\"one\"}" \
    "/models/unload {\"model\":\"$model\"}" "/admin/login {}"; do
    path=${route%% *}; body=${route#* }
    # Cross-site and cross-origin pages: the browser says so.
    attack 403 "$port" "$path" origin -d "$body" "${json[@]}" -H 'Origin: http://evil.example'
    attack 403 "$port" "$path" origin-null -d "$body" "${json[@]}" -H 'Origin: null'
    attack 403 "$port" "$path" sec-fetch-cross-site -d "$body" "${json[@]}" -H 'Sec-Fetch-Site: cross-site'
    attack 403 "$port" "$path" other-local-port -d "$body" "${json[@]}" \
      -H 'Sec-Fetch-Site: same-site' -H "Origin: http://127.0.0.1:$((port == 65535 ? 1 : port + 1))"
    attack 403 "$port" "$path" no-cors-text-plain -d "$body" -H 'Content-Type: text/plain' \
      -H 'Origin: http://evil.example' -H 'Sec-Fetch-Site: cross-site' -H 'Sec-Fetch-Mode: no-cors'
    # What a no-cors request can declare, whatever it says of its origin.
    attack 415 "$port" "$path" text-plain -d "$body" -H 'Content-Type: text/plain'
    attack 415 "$port" "$path" form -d "$body" -H 'Content-Type: application/x-www-form-urlencoded'
    attack 415 "$port" "$path" multipart -F "x=$body"
    attack 415 "$port" "$path" no-content-type -d "$body" -H 'Content-Type:'
    # DNS rebinding: a page at evil.example resolved to 127.0.0.1 is same-origin to itself.
    attack 403 "$port" "$path" host-evil -d "$body" "${json[@]}" -H 'Host: evil.example'
    attack 403 "$port" "$path" rebinding -d "$body" "${json[@]}" -H "Host: $evil" \
      -H "Origin: http://$evil" -H 'Sec-Fetch-Site: same-origin'
    attack 403 "$port" "$path" host-suffix -d "$body" "${json[@]}" -H "Host: switchyard.lan.evil.example:$port"
  done
  # Reads through a rebinding page: the fleet, the keys, the event stream, the page.
  for path in /admin/status /admin/keys /admin/events /ui; do
    attack 403 "$port" "$path" "rebinding-read" -H "Host: $evil"
  done
  # Controls: a tool (no Origin) or the same origin gets through the doors
  # (an unknown instance: 404, nothing changes).
  attack 200 "$port" /admin/status control:status
  attack 404 "$port" /admin/instances/nope/drain control:tool -d '{}' "${json[@]}"
  attack 404 "$port" /admin/instances/nope/drain control:same-origin -d '{}' "${json[@]}" \
    -H "Origin: $here_origin" -H 'Sec-Fetch-Site: same-origin'
  # admin_hosts: the name listed opens the admin routes, elsewhere it is another Host.
  if grep -q '^admin_hosts:' "$work/admin-doors-$port.yaml"; then
    attack 200 "$port" /admin/status control:admin-hosts -H "Host: switchyard.lan:$port"
  else
    attack 403 "$port" /admin/status unlisted-host -H "Host: switchyard.lan:$port"
  fi
  doors_send
}

# fleet_changes PORT: what differs on the gateway on PORT from its start (the
# first profile active, every instance active and ready, not draining); empty
# when nothing.
fleet_changes() {
  curl -s --max-time 2 "http://127.0.0.1:$1/admin/status" | python3 -c '
import json, sys
s = json.load(sys.stdin)
out = [] if s.get("active") == "both" else ["profile %s" % s.get("active")]
if s.get("draining"): out.append("draining")
for i in s.get("instances", []):
    if i.get("admin") != "active" or i.get("state") != "ready":
        out.append("%s %s/%s" % (i.get("name"), i.get("admin"), i.get("state")))
print(", ".join(out))' 2>/dev/null || echo "no /admin/status"
}

row_admin-doors() {
  local row=admin-doors pa pb p
  read -r pa pb <<<"$(free_ports 2)"
  doors_log="$work/$row.attacks"; : >"$doors_log"
  local profiles="profiles: {both: [e1, e2], one: [e1]}"
  { engine e1 1 4; engine e2 2 4; } |
    fleet_config "$pa" "$timeouts_short" "$health_fast" "$profiles" "admin_hosts: [switchyard.lan]" >"$work/$row-$pa.yaml"
  { engine e1 3 4; engine e2 4 4; } | fleet_config "$pb" "$timeouts_short" "$health_fast" "$profiles" >"$work/$row-$pb.yaml"
  for p in "$pa" "$pb"; do gw_port=$p; gw_start "$work/$row-$p.yaml"; warm_up; done
  local before; before=$(gw_state)
  drive "$row" --seconds "$load_s" --concurrency "$conc" --stream-share 0.5 --url "http://127.0.0.1:$pa,http://127.0.0.1:$pb"
  progress_at "$row" 1 "$conc"
  local r=0
  while (( r < door_rounds )) && kill -0 "$drv_pid" 2>/dev/null; do
    r=$((r + 1))
    door_round "$pa"; door_round "$pb"
  done
  local running=no; kill -0 "$drv_pid" 2>/dev/null && running=yes
  drive_wait
  local changed="" c
  for p in "$pa" "$pb"; do
    c=$(fleet_changes "$p")
    [[ -n "$c" ]] && changed+="${changed:+; }$p: $c"
  done
  [[ -n "$changed" ]] && add_wrong "$row" 1 fleet-changed
  local n accepted other controls bad_controls refused
  read -r n accepted other controls bad_controls <<<"$(awk '
    $3 ~ /^control:/ { c++; if ($1 != $2) bc++; next }
    { n++; if ($1 != $2) { if ($2 ~ /^2/) a++; else o++ } }
    END { printf "%d %d %d %d %d\n", n, a, o, c, bc }' "$doors_log")"
  refused=$(awk '$3 !~ /^control:/ && $1 == $2 {print $2}' "$doors_log" | sort | uniq -c |
    awk '{printf "%s%s ×%s", s, $2, $1; s = ", "}')
  add_wrong "$row" "$accepted" admin-attack-accepted
  add_wrong "$row" "$other" admin-attack-other-status
  add_wrong "$row" "$bad_controls" admin-control-refused
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  record "$row" "2 gateways (admin_hosts set / absent), half streamed; $n attacks on the admin routes in $r round(s), refused: ${refused:-none}; accepted: $accepted, another status: $other; $controls controls, $bad_controls refused; fleet ${changed:-unchanged}; load running throughout: $running" \
    "$before" "$after" "$z" "$stop_result"
}

row_slowloris() {
  standard_row slowloris "" "" no_fault "--seconds $slow_s --concurrency 8 --slowloris $slow" "$slow slow header senders, client_header 5 s"
}

row_fd-limit() {
  local row=fd-limit
  read -r gw_port <<<"$(free_ports 1)"
  { engine e1 1 64; engine e2 2 64; engine e3 3 64; engine e4 4 64; } |
    fleet_config "$gw_port" "$timeouts_short" "$health_fast" >"$work/$row.yaml"
  gw_start "$work/$row.yaml" 1024
  warm_up
  local before; before=$(gw_state)
  drive "$row" --requests 1500 --concurrency 1500 --max-tokens 16
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  record "$row" "ulimit -n 1024, 1,500 at once" "$before" "$after" "$z" "$stop_result"
}

row_idle-streams() {
  # A sim has at most 1,024 slots; each slot gets 256 tokens of context.
  local row=idle-streams n_eng=$(( (idle + 999) / 1000 < 4 ? 4 : (idle + 999) / 1000 ))
  local per=$(( (idle + n_eng - 1) / n_eng )) i
  read -r gw_port <<<"$(free_ports 1)"
  for i in $(seq "$n_eng"); do engine "e$i" "$i" "$per" --ctx-size $((per * 256)) --stall-after-tokens 1; done |
    fleet_config "$gw_port" "timeouts: {stream_idle: 10m, startup: 60s, stop: 5s}" "max_connections: $((idle + 1000))" \
      "queue: {max_length: $idle}" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  local before; before=$(gw_state)
  drive "$row" --mode idle --streams "$idle" --rounds "$idle_rounds" --gateway-pid "$gw_pid" --max-tokens 64
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  record "$row" "$idle streams held, closed; $idle_rounds rounds" "$before" "$after" "$z" "$stop_result"
}

row_soak() {
  local row=soak
  read -r gw_port <<<"$(free_ports 1)"
  four_engines | fleet_config "$gw_port" "$timeouts_short" "$health_fast" >"$work/$row.yaml"
  gw_start "$work/$row.yaml"
  warm_up
  local before; before=$(gw_state)
  drive "$row" --seconds "$soak_seconds" --concurrency 8 --stream-share 0.5
  local max=0 r
  while kill -0 "$drv_pid" 2>/dev/null; do
    r=$(gw_state | cut -d' ' -f1)
    max=$(awk -v a="$max" -v b="$r" 'BEGIN{print (b > a) ? b : a}')
    sleep 1
  done
  drive_wait
  local after z; after=$(gw_state); z=$(zombies)
  gw_stop
  record "$row" "${soak_seconds} s, half streamed; RSS max $max MiB" "$before" "$after" "$z" "$stop_result"
}

# ---------------------------------------------------------------------------

wait_for_quiet
echo "fault matrix: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
for r in ${rows//,/ }; do
  echo "row $r ..." >&2
  "row_$r"
done

python3 - "$results" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY' | tee "$work/table.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| row | fault | sent | ok | clean error | lost | hung | wrong | RSS MiB before → after | fds before → after | zombies | engines left | gateway exit | not ok, by cause |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    rb, fb = r["before"].split(); ra, fa = r["after"].split()
    rc, secs, left = r["stop"].split()
    causes = ", ".join(f"{k} ×{v}" for k, v in sorted(r["detail"].items())) or "—"
    note = r["note"]
    if "slowloris" in r:
        s = r["slowloris"]
        note += f"; {s['closed_by_gateway']}/{s['held']} cut after {s['held_ms_min']}–{s['held_ms_max']} ms"
    if r.get("rounds"):
        peaks = " / ".join(f"{x['open']['rss_mib']:.0f}→{x['after']['rss_mib']:.0f}" for x in r["rounds"])
        note += f"; per round RSS open→closed MiB: {peaks}"
    print(f"| {r['row']} | {note} | {r['sent']} | {r['ok']} | {r['clean']} | {r['lost']} | {r['hung']} | {r.get('wrong', 0)} | "
          f"{rb} → {ra} | {fb} → {fa} | {r['zombies']} | {left} | {rc} in {secs} s | {causes} |")
print(f"\nload average at the end: {sys.argv[2]}")
PY
