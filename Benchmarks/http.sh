#!/usr/bin/env bash
# HTTP throughput, latency, CPU and memory: healthd beside nginx (1 worker) and the Dispatch floor
# (Benchmarks/DispatchFloor: healthd's socket design stripped to recv, count, send), all measured
# in ONE run on the same machine, so the ratios hold even when absolute figures move with load.
#   Benchmarks/http.sh [seconds] [store-samples]     (defaults: 10 s per run, 1,000,000 samples)
# Prints, for GET /healthz at 64 connections (wrk -t2): req/s, p99 and server CPU per request
# (utime+stime deltas from /proc/PID/stat over the run) for all three, healthd/floor and
# healthd/nginx; p99 at 1,000 connections, with the mean latency beside the bound Little's law
# sets (connections / requests per second) and the share of both cores wrk itself used; and
# GET /v1/samples?type=stepCount&limit=10 with an app token on a store of 1M samples (built
# once by `healthd-bench seed-store` and kept in .build/http-bench-store). healthd's memory
# holding 1,000 idle keep-alive connections (/proc/PID/smaps_rollup) is read twice: after the
# /healthz runs (the HTTP layer's own) and after the samples run (with the store's caches).
# BASELINE=path/to/an/older/healthd adds that binary's GET /healthz to the same run, for
# before/after figures side by side; with BASELINE_STORE=dir (a store that binary can open, with
# the token in BASELINE_TOKEN) its samples route too. BIN=dir takes the three binaries from dir
# instead of building them. CONFIG_EXTRA='"eventLoops": 16' adds members to the config healthd
# (and the baseline) run with, to compare settings. TAIL_ONLY=1 runs only GET /healthz at 1,000
# connections, floor, healthd (and baseline) in turn, ROUNDS times (default 3), each round's
# ratios against that round's floor, with context switches per request, then the idle-memory
# check: no nginx, no store, no samples route. Installs wrk and nginx from Debian if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10}"
store_samples="${2:-1000000}"

if ! command -v wrk >/dev/null || ! command -v nginx >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq wrk nginx >/dev/null
fi
source Benchmarks/common.sh
release_binaries healthd healthd-bench dispatch-floor
work="$(mktemp -d)"
store="$PWD/.build/http-bench-store-$store_samples"
trap 'kill $(jobs -p) 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT
ulimit -n 65536 2>/dev/null || true
# healthd, nginx, the Dispatch floor, the baseline.
read -r healthd_port nginx_port floor_port baseline_port < <(free_ports 4)

# nginx, one worker, returning the same body as healthd.
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
daemon on;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nginx_port;
    location /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
  }
}
CONF
if [ -z "${TAIL_ONLY:-}" ]; then
  nginx -c "$work/nginx.conf"
  for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
  nginx_pid=""
  for _ in $(seq 50); do # the one worker does the work (it may start a moment after the pid file)
    nginx_pid=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1) || true
    [ -n "$nginx_pid" ] && break; sleep 0.1
  done
fi

"$bin/dispatch-floor" "$floor_port" > "$work/floor.log" 2>&1 &
floor_pid=$!

# The store for the samples route (seeded through HealthStore once, then reused).
if [ -n "${TAIL_ONLY:-}" ]; then
  store="$work/store"   # /healthz touches no data
  mkdir -p "$store"
else
  mkdir -p "$store"
  token=$("$bin/healthd-bench" seed-store --work-dir "$store" --store-samples "$store_samples" | awk '/^token: / {print $2}')
fi

# The abuse limits are off: every client here is one loopback address.
echo "{\"accessLog\": false, \"maxConnections\": 20000, \"maxConnectionsPerAddress\": 20000, \"rateLimitPerAddressPerSecond\": 0, \"rateLimitPerTokenPerSecond\": 0${CONFIG_EXTRA:+, $CONFIG_EXTRA}}" > "$work/config.json"
HEALTHD_ADMIN_TOKEN=bench-admin-token-0123456789 "$bin/healthd" serve --port "$healthd_port" --data-dir "$store" \
  --config "$work/config.json" > "$work/healthd.log" 2>&1 &
healthd_pid=$!
ports="$healthd_port $floor_port"
[ -n "${TAIL_ONLY:-}" ] || ports="$ports $nginx_port"
if [ -n "${BASELINE:-}" ]; then
  mkdir -p "$work/baseline-store"
  [ -n "${BASELINE_STORE:-}" ] && cp -r "$BASELINE_STORE"/. "$work/baseline-store/"
  HEALTHD_ADMIN_TOKEN=bench-admin-token-0123456789 "$BASELINE" serve --port "$baseline_port" --data-dir "$work/baseline-store" \
    --config "$work/config.json" > "$work/baseline.log" 2>&1 &
  baseline_pid=$!
  ports="$ports $baseline_port"
fi
for port in $ports; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
done
samples_url="http://127.0.0.1:$healthd_port/v1/samples?type=stepCount&limit=10"
[ -n "${TAIL_ONLY:-}" ] || curl -fs -H "Authorization: Bearer $token" "$samples_url" | grep -q '"samples":\[{' || { echo "samples route returned no samples"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Voluntary and involuntary context switches of all the process's threads so far (threads that
# ended meanwhile are not counted; Dispatch keeps its workers for the length of a run).
context_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
ticks_per_second=$(getconf CLK_TCK)

run() { # name pid url connections [extra wrk args...] -> "name|conns|req/s|p99|µs CPU per request|mean|wrk CPU share|context switches per request"
  local name=$1 pid=$2 url=$3 conns=$4; shift 4
  local before after out switches_before switches_after
  before=$(cpu_ticks "$pid")
  switches_before=$(context_switches "$pid")
  # wrk's own CPU (user + system seconds): it shares the two cores with the server.
  out=$(/usr/bin/time -f 'wrk-cpu %U %S' wrk -t2 -c"$conns" -d"${duration}s" --latency "$@" "$url" 2>&1)
  after=$(cpu_ticks "$pid")
  switches_after=$(context_switches "$pid")
  local rps p99 requests mean wrk_cpu
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  mean=$(echo "$out" | awk '$1=="Latency" {print $2; exit}')
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  wrk_cpu=$(echo "$out" | awk -v d="$duration" -v n="$(nproc)" '$1=="wrk-cpu" {printf "%.2f", ($2 + $3) / (d * n)}')
  local cpu switches
  cpu=$(python3 -c "print(f'{1e6 * ($after - $before) / $ticks_per_second / max(1, $requests):.1f}')")
  switches=$(python3 -c "print(f'{($switches_after - $switches_before) / max(1, $requests):.2f}')")
  echo "$name|$conns|$rps|$p99|$cpu|$mean|$wrk_cpu|$switches"
}

# healthd's memory while it holds 1,000 idle keep-alive connections (each made one request, then
# stays open), from /proc/PID/smaps_rollup: "Rss MiB (anonymous MiB)", and the growth the
# connections themselves caused.
idle_memory() {
  python3 - "$healthd_pid" "$healthd_port" <<'PY2'
import socket, sys, time
def rollup():
    fields = {}
    for line in open(f"/proc/{sys.argv[1]}/smaps_rollup"):
        parts = line.split()
        if len(parts) >= 3 and parts[-1] == "kB": fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return fields
before = rollup()
conns = []
for _ in range(1000):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    s.recv(4096)
    conns.append(s)
time.sleep(1)
after = rollup()
print(f"{after['Rss']:.1f} MiB ({after['Anonymous']:.1f} MiB anonymous; the 1,000 connections added {after['Rss'] - before['Rss']:.1f} MiB)")
PY2
}

ratio() { python3 -c "print(f'{float($1)/float($2):.2f}')"; }
machine_line() {
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)${CONFIG_EXTRA:+, healthd config + $CONFIG_EXTRA}"
}

if [ -n "${TAIL_ONLY:-}" ]; then
  echo
  machine_line
  echo
  echo "| round | GET /healthz, 1,000 connections | requests/s | p99 | server CPU per request | context switches per request | ratio to this round's floor (req/s, CPU) | mean latency (connections / requests/s) | wrk's CPU share | load |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for round in $(seq "${ROUNDS:-3}"); do
    floor_row=""
    for n in floor healthd ${BASELINE:+baseline}; do
      pid_var="${n}_pid"; port_var="${n}_port"
      row=$(run "$n" "${!pid_var}" "http://127.0.0.1:${!port_var}/healthz" 1000)
      IFS='|' read -r _ c rps p99 cpu mean wrk switches <<<"$row"
      [ "$n" = floor ] && floor_row="$row"
      IFS='|' read -r _ _ frps _ fcpu _ _ _ <<<"$floor_row"
      little=$(python3 -c "print(f'{1000 * 1000 / float($rps):.1f} ms')")
      label=$n; [ "$n" = floor ] && label="Dispatch floor"; [ "$n" = baseline ] && label="baseline healthd ($BASELINE)"
      echo "| $round | $label | $rps | $p99 | $cpu µs | $switches | $(ratio "$rps" "$frps"), $(ratio "$cpu" "$fcpu") | $mean ($little) | $wrk | $(cut -d' ' -f1 /proc/loadavg) |"
    done
  done
  echo
  echo "healthd holding 1,000 idle keep-alive connections: $(idle_memory)"
  exit 0
fi

results=()
for c in 64 1000; do
  results+=("$(run nginx "$nginx_pid" "http://127.0.0.1:$nginx_port/healthz" $c)")
  results+=("$(run floor "$floor_pid" "http://127.0.0.1:$floor_port/healthz" $c)")
  results+=("$(run healthd "$healthd_pid" "http://127.0.0.1:$healthd_port/healthz" $c)")
  if [ -n "${BASELINE:-}" ]; then results+=("$(run baseline "$baseline_pid" "http://127.0.0.1:$baseline_port/healthz" $c)"); fi
done
# Idle connections after the /healthz runs (the HTTP layer's own memory) ...
idle_after_healthz=$(idle_memory)
samples_result=$(run samples "$healthd_pid" "$samples_url" 64 -H "Authorization: Bearer $token")
if [ -n "${BASELINE_STORE:-}" ]; then
  baseline_samples=$(run samples "$baseline_pid" "${samples_url/:$healthd_port/:$baseline_port}" 64 -H "Authorization: Bearer $BASELINE_TOKEN")
fi
# ... and again once the samples route has filled the store's caches (SQLite pages, tokens).
idle_after_samples=$(idle_memory)

field() { # name conns column
  for r in "${results[@]}"; do
    IFS='|' read -r n c rps p99 cpu mean wrk _ <<<"$r"
    if [ "$n" = "$1" ] && [ "$c" = "$2" ]; then
      case $3 in rps) echo "$rps" ;; p99) echo "$p99" ;; cpu) echo "$cpu" ;; mean) echo "$mean" ;; wrk) echo "$wrk" ;; esac
    fi
  done
}
echo
machine_line
echo
echo "| GET /healthz | connections | requests/s | p99 | server CPU per request | requests/s ratio | mean latency (connections / requests/s) | wrk's CPU share |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for c in 64 1000; do
  for n in nginx floor healthd ${BASELINE:+baseline}; do
    label=$n; [ "$n" = nginx ] && label="nginx, 1 worker"; [ "$n" = floor ] && label="Dispatch floor"
    [ "$n" = baseline ] && label="baseline healthd ($BASELINE)"
    r=""
    case $n in
      nginx) r="1.00 of nginx" ;;
      floor) r="$(ratio "$(field floor $c rps)" "$(field nginx $c rps)") of nginx" ;;
      healthd|baseline) r="$(ratio "$(field $n $c rps)" "$(field floor $c rps)") of floor, $(ratio "$(field $n $c rps)" "$(field nginx $c rps)") of nginx" ;;
    esac
    # Little's law: with every connection waiting on its answer, the mean latency is at least
    # connections / throughput, so p99 at 1,000 connections follows from requests/s.
    little=$(python3 -c "print(f'{1000 * $c / float($(field $n $c rps)):.1f} ms')")
    echo "| $label | $c | $(field $n $c rps) | $(field $n $c p99) | $(field $n $c cpu) µs | $r | $(field $n $c mean) ($little) | $(field $n $c wrk) |"
  done
done
IFS='|' read -r _ c rps p99 cpu _ _ _ <<<"$samples_result"
echo
echo "| healthd GET /v1/samples?type=stepCount&limit=10 ($store_samples samples, app token) | $c | $rps | $p99 | $cpu µs | $(ratio "$rps" "$(field healthd 64 rps)") of /healthz |"
if [ -n "${BASELINE_STORE:-}" ]; then
  IFS='|' read -r _ c brps bp99 bcpu _ _ _ <<<"$baseline_samples"
  echo "| baseline healthd, same route | $c | $brps | $bp99 | $bcpu µs | $(ratio "$rps" "$brps") after/before |"
fi
echo
echo "healthd holding 1,000 idle keep-alive connections, after the /healthz runs: $idle_after_healthz"
echo "the same after the samples route's run: $idle_after_samples"
