# Shell helpers shared by the benchmarks in bench/ (sourced, not run).
# open_work sets `work` (the run's folder) and `pids` (processes to stop at
# exit), or the caller sets them itself; `wait_load` is for wait_for_quiet.

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

stop_pid() {  # PID [SECONDS, default 10]: stop one process we started, bounded, and forget it
  local p="$1" i
  kill -TERM "$p" 2>/dev/null || true
  for i in $(seq $((${2:-10} * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  forget_pid "$p"
}
forget_pid() {  # PID: no longer stopped at exit (it has ended)
  local keep_pids=() q
  for q in "${pids[@]}"; do [[ "$q" != "$1" ]] && keep_pids+=("$q"); done
  pids=("${keep_pids[@]}")
}

# A run's folder and processes: `work` is $out (kept) or a temporary folder
# (removed at exit); whatever is added to `pids` is stopped at exit.
open_work() {
  work="${out:-$(mktemp -d)}"
  mkdir -p "$work"
  pids=()
  trap 'stop_all; [[ -n "$out" ]] || rm -rf "$work"' EXIT
}
stop_all() {  # stop every process in pids
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pids=()
}

start_gateway() {  # CONFIG PORT LOG: serve CONFIG on 127.0.0.1:PORT until /health answers; sets gateway
  "$binary" serve -c "$1" --listen "127.0.0.1:$2" >"$3" 2>&1 &
  pids+=($!)
  gateway="http://127.0.0.1:$2"
  wait_http "$gateway/health" 30 || die "the gateway did not start (see $3)"
}

free_ports() {  # N distinct free loopback ports
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

wait_http() {  # URL, seconds: until it answers 200
  local url="$1" secs="$2" i
  for i in $(seq $((secs * 10))); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)" == 200 ]] && return 0
    sleep 0.1
  done
  return 1
}

# CPU time a process has used so far, in milliseconds: the time each of its
# threads has run (/proc/PID/task/*/schedstat, in nanoseconds). /proc/PID/stat
# counts 10 ms ticks, 2-3 % of what a streaming round uses.
cpu_ms() { cat /proc/"$1"/task/*/schedstat | awk '{ns += $1} END {printf "%.3f\n", ns / 1e6}'; }
# PID's main thread alone: nginx's one thread, the gateway's I/O thread.
main_cpu_ms() { awk '{printf "%.3f\n", $1 / 1e6}' /proc/"$1"/task/"$1"/schedstat; }

load1() { cut -d' ' -f1 /proc/loadavg; }
wait_for_quiet() {
  [[ "$wait_load" == 0 || "$wait_load" == 0.0 ]] && return 0
  local i
  for i in $(seq 60); do
    awk -v l="$(load1)" -v t="$wait_load" 'BEGIN{exit !(l < t)}' && return 0
    (( i == 1 )) && echo "waiting (at most 600 s) for the 1-min load average ($(load1)) to drop below $wait_load ..." >&2
    sleep 10
  done
  echo "warning: load average still $(load1) after 600 s; measuring anyway" >&2
}

# Sets NGINX and WRK; installs nginx-light and wrk with apt-get when they are
# missing and this runs as root, else stops and says how.
find_nginx_and_wrk() {
  NGINX="$(command -v nginx || true)"; [[ -z "$NGINX" && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
  WRK="$(command -v wrk || true)"
  if [[ -z "$NGINX" || -z "$WRK" ]]; then
    missing=(); [[ -z "$WRK" ]] && missing+=(wrk); [[ -z "$NGINX" ]] && missing+=(nginx-light)
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      echo "installing ${missing[*]} ..." >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
      NGINX="$(command -v nginx || echo /usr/sbin/nginx)"; WRK="$(command -v wrk)"
    else
      die "missing ${missing[*]}: install with 'sudo apt-get install -y ${missing[*]}'"
    fi
  fi
  [[ -x "$NGINX" ]] || die "nginx not found"
}

# HAPROXY: haproxy's path, installed like nginx when missing and run as root;
# empty otherwise (the caller leaves its case out and says so).
find_haproxy() {
  HAPROXY="$(command -v haproxy || true)"; [[ -z "$HAPROXY" && -x /usr/sbin/haproxy ]] && HAPROXY=/usr/sbin/haproxy
  if [[ -z "$HAPROXY" && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing haproxy ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy >/dev/null || die "apt-get install haproxy failed"
    HAPROXY="$(command -v haproxy || echo /usr/sbin/haproxy)"
  fi
  [[ -x "$HAPROXY" ]] || HAPROXY=""
}

# What both nginx configs share, up to their servers: one process in the
# foreground, its files under DIR, long-lived keep-alive connections, and
# the http block's access_log directive.
nginx_common() {
  local d="$1" access_log="$2"
  cat <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
  $access_log
  client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
  keepalive_timeout 75s;
  keepalive_requests 100000000;
EOF
}


# One supervised sim instance (a config's YAML line) of `model` (the
# caller's), 200 tokens a second, FLAGS added to its command.
engine() {  # NAME SEED SLOTS [FLAGS...]
  local name="$1" seed="$2" slots="$3"; shift 3
  local extra="${*:+ $*}"
  echo "  - {name: $name, model: $model, slots: $slots, command: \"\${SWITCHYARD} sim --port \${PORT} --slots $slots --tokens-per-second 200 --alias $model --seed $seed$extra\"}"
}
