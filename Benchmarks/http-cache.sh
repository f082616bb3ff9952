#!/usr/bin/env bash
# Memory touched per request as the connection count grows: instructions, first-level data misses
# and last-level misses per GET /healthz, counted by valgrind's cache simulator (callgrind
# --cache-sim=yes) with the last level set to one core's L2 here (1 MiB, 16-way). Like
# http-instructions.sh these counts do not move with the machine's load, so they compare builds
# (and healthd against the floor) reliably where wall-clock figures cannot; what they model is the
# cost that grows with connections: each connection's objects a request touches, which stop
# fitting in the cache once there are enough connections.
#   Benchmarks/http-cache.sh [requests] [connection counts...]   (defaults: 10000; 64 500 1000)
# Serves from the Dispatch floor and from `healthd-bench http-serve` (healthd's server and
# application); a Python client holds N keep-alive connections (from 127.0.0.1 and 127.0.0.2:
# http-serve allows 512 per address) with one request in flight on each, as wrk does. Each count
# is warmed up with 3 requests per connection before counting. BIN=dir takes healthd-bench and
# dispatch-floor from dir instead of building (e.g. an older build, for before/after counts).
set -euo pipefail
cd "$(dirname "$0")/.."
requests="${1:-10000}"
shift || true
if [ $# -gt 0 ]; then counts=("$@"); else counts=(64 500 1000); fi
source Benchmarks/common.sh
release_binaries healthd-bench dispatch-floor
out="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT  # valgrind writes its last dump as it exits
read -r healthd_port floor_port < <(free_ports 2)

cache=(--tool=callgrind --cache-sim=yes --LL=1048576,16,64 --instr-atstart=no)
mkdir -p "$out/store"
valgrind "${cache[@]}" --callgrind-out-file="$out/healthd.%p" \
  "$bin/healthd-bench" http-serve --port "$healthd_port" --work-dir "$out/store" > "$out/healthd.log" 2>&1 &
healthd_pid=$!
valgrind "${cache[@]}" --callgrind-out-file="$out/floor.%p" "$bin/dispatch-floor" "$floor_port" > "$out/floor.log" 2>&1 &
floor_pid=$!
for port in $healthd_port $floor_port; do
  for _ in $(seq 600); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
done

# The client: connects N sockets, then for each line "K" on stdin answers K requests (one in
# flight per connection, the next sent as each answer arrives) and prints "done".
cat > "$out/client.py" <<'PY'
import selectors, socket, sys
port, conns = int(sys.argv[1]), int(sys.argv[2])
request = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
selector = selectors.DefaultSelector()
sockets = []
for i in range(conns):
    s = socket.socket()
    s.bind((f"127.0.0.{1 + i % 2}", 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    sockets.append(s)
    selector.register(s, selectors.EVENT_READ, bytearray())
def run(total):
    sent = done = 0
    for s in sockets:
        if sent < total: s.send(request); sent += 1
    while done < total:
        for key, _ in selector.select(10):
            buffer = key.data
            buffer += key.fileobj.recv(65536)
            while True:
                end = buffer.find(b"\r\n\r\n")
                if end < 0: break
                length = 0
                for line in bytes(buffer[:end]).split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
                if len(buffer) < end + 4 + length: break
                assert buffer.startswith(b"HTTP/1.1 200"), bytes(buffer[:40])
                del buffer[:end + 4 + length]
                done += 1
                if sent < total: key.fileobj.send(request); sent += 1
print("connected", flush=True)
for line in sys.stdin:
    run(int(line))
    print("done", flush=True)
PY

measure() { # label pid port connections -> "label|connections|Ir|D1 misses|LL misses"
  local label=$1 pid=$2 port=$3 conns=$4 line
  coproc CLIENT { python3 "$out/client.py" "$port" "$conns"; }
  read -r line <&"${CLIENT[0]}"
  callgrind_control -i on "$pid" >/dev/null 2>&1
  echo $((conns * 3)) >&"${CLIENT[1]}"; read -r line <&"${CLIENT[0]}"   # warm-up, not counted
  callgrind_control -z "$pid" >/dev/null 2>&1
  echo "$requests" >&"${CLIENT[1]}"; read -r line <&"${CLIENT[0]}"
  callgrind_control -d "$label-$conns" "$pid" >/dev/null 2>&1
  callgrind_control -i off "$pid" >/dev/null 2>&1
  eval "exec ${CLIENT[1]}>&-"
  wait "$CLIENT_PID" 2>/dev/null || true
  sleep 1
  local file; file=$(grep -l "^desc: Trigger: dump $label-$conns\$" "$out"/*."$pid".* | head -1)
  python3 - "$file" "$label" "$conns" "$requests" <<'PY'
import sys
path, label, conns, requests = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = open(path).read().splitlines()
events = next(l for l in lines if l.startswith("events:")).split()[1:]
totals = dict(zip(events, map(int, next(l for l in lines if l.startswith("summary:")).split()[1:])))
# callgrind leaves trailing zero counts off the summary line (no LL misses at all: no DLmr).
per = lambda *names: sum(totals.get(n, 0) for n in names) / requests
print(f"{label}|{conns}|{per('Ir'):.0f}|{per('D1mr', 'D1mw'):.1f}|{per('DLmr', 'DLmw'):.1f}")
PY
}

rows=()
for conns in "${counts[@]}"; do
  rows+=("$(measure floor "$floor_pid" "$floor_port" "$conns")")
  rows+=("$(measure healthd "$healthd_pid" "$healthd_port" "$conns")")
done

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), callgrind cache model (D1 from the host, LL 1 MiB 16-way), $requests requests per count, GET /healthz"
echo
echo "| server | connections | instructions per request | D1 misses per request | LL misses per request | LL misses, healthd / floor |"
echo "|---|---:|---:|---:|---:|---:|"
for r in "${rows[@]}"; do
  IFS='|' read -r name conns ir d1 ll <<<"$r"
  ratio=""
  if [ "$name" = healthd ]; then
    for f in "${rows[@]}"; do
      IFS='|' read -r fname fconns _ _ fll <<<"$f"
      # Below 0.1 a request (everything fits the cache) a ratio says nothing.
      [ "$fname" = floor ] && [ "$fconns" = "$conns" ] && ratio=$(python3 -c "print(f'{$ll / $fll:.1f}' if $fll >= 0.1 else '')")
    done
  fi
  echo "| $name | $conns | $ir | $d1 | $ll | $ratio |"
done
