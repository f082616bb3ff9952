#!/usr/bin/env bash
# HTTP throughput and latency: healthd vs nginx (1 worker) in the same run on the same machine.
#   Benchmarks/http.sh [seconds]      (default 10 s per run)
# wrk -t2 with 64 and 1,000 keep-alive connections on GET /healthz (healthd) and on a 16-byte
# JSON location (nginx), then healthd's RSS while holding 1,000 idle keep-alive connections.
# Installs wrk and nginx-light from Debian if missing. Prints a Markdown table for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10}"

if ! command -v wrk >/dev/null || ! command -v nginx >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq wrk nginx-light >/dev/null
fi
swift build -c release --product healthd 2>&1 | tail -1
bin="$(swift build -c release --show-bin-path)/healthd"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT

# nginx, one worker, returning a body the size of healthd's.
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:18081;
    location /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
  }
}
CONF
nginx -c "$work/nginx.conf"

# The abuse limits are off: every client here is one loopback address.
echo '{"accessLog": false, "maxConnections": 20000, "maxConnectionsPerAddress": 20000, "rateLimitPerAddressPerSecond": 0, "rateLimitPerTokenPerSecond": 0}' > "$work/config.json"
HEALTHD_ADMIN_TOKEN=bench-admin-token-0123456789 "$bin" serve --port 18080 --data-dir "$work/data" \
  --config "$work/config.json" > "$work/healthd.log" 2>&1 &
healthd_pid=$!
for _ in $(seq 50); do curl -fs http://127.0.0.1:18080/healthz >/dev/null && break; sleep 0.1; done

run() { # name url connections
  local out; out=$(wrk -t2 -c"$3" -d"${duration}s" --latency "$2" 2>&1)
  local rps p99
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  echo "$1|$3|$rps|$p99"
}

ulimit -n 65536 2>/dev/null || true
results=()
for c in 64 1000; do
  results+=("$(run nginx http://127.0.0.1:18081/healthz $c)")
  results+=("$(run healthd http://127.0.0.1:18080/healthz $c)")
done

# RSS holding 1,000 idle keep-alive connections (each made one request, then stays open).
idle_rss=$(python3 - <<'PY'
import socket, time, os
conns = []
for _ in range(1000):
    s = socket.create_connection(("127.0.0.1", 18080))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    s.recv(4096)
    conns.append(s)
time.sleep(1)
pid = os.popen("pgrep -f 'healthd serve --port 18080'").read().split()[0]
rss = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1]
print(int(rss) // 1024)
PY
)

echo
echo "| server | connections | requests/s | p99 | ratio to nginx |"
echo "|---|---:|---:|---:|---:|"
for c in 64 1000; do
  nginx_rps=""
  for r in "${results[@]}"; do
    IFS='|' read -r name conns rps p99 <<<"$r"
    [ "$conns" = "$c" ] || continue
    if [ "$name" = nginx ]; then nginx_rps=$rps; echo "| nginx 1 worker | $conns | $rps | $p99 | 1.00 |"; fi
  done
  for r in "${results[@]}"; do
    IFS='|' read -r name conns rps p99 <<<"$r"
    [ "$conns" = "$c" ] && [ "$name" = healthd ] || continue
    ratio=$(python3 -c "print(f'{float($rps)/float($nginx_rps):.2f}')")
    echo "| healthd | $conns | $rps | $p99 | $ratio |"
  done
done
echo
echo "healthd RSS holding 1,000 idle keep-alive connections: ${idle_rss} MiB"
