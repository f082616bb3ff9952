#!/usr/bin/env bash
# Instructions per request in healthd (all threads), counted by valgrind's callgrind: unlike
# wall-clock figures these do not move when other work loads the machine, so they compare a
# change before and after reliably.
#   Benchmarks/http-instructions.sh [requests] [store-dir]
# Serves GET /healthz from the Dispatch floor (Benchmarks/DispatchFloor) and from `healthd-bench http-serve` (the server and application of `healthd
# serve`) and, with a store seeded by `healthd-bench seed-store`, GET
# /v1/samples?type=stepCount&limit=10, to 8 keep-alive clients sending one request at a time;
# counting starts after a warm-up. Leaves callgrind.out.* in $OUT (default: a temporary
# directory) for `callgrind_annotate`. BIN=dir uses healthd-bench and dispatch-floor from there
# instead of building (e.g. copies of an older build, for before/after counts).
set -euo pipefail
cd "$(dirname "$0")/.."
requests="${1:-8000}"
store="${2:-}"
source Benchmarks/common.sh
release_binaries healthd-bench dispatch-floor
read -r healthd_port floor_port < <(free_ports 2)
out="${OUT:-$(mktemp -d)}"
scratch="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$scratch"' EXIT
data="${store:-$scratch}"   # a given store is used in place and kept

token=""
if [ -n "$store" ]; then
  token=$("$bin/healthd-bench" seed-store --work-dir "$store" --store-samples 1 | awk '/^token: / {print $2}')
fi
# healthd's server and application, in healthd-bench because valgrind cannot run dispatchMain.
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out.%p" \
  "$bin/healthd-bench" http-serve --port "$healthd_port" --work-dir "$data" > "$out/healthd.log" 2>&1 &
pid=$!
for _ in $(seq 600); do curl -fs "http://127.0.0.1:$healthd_port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

measure() { # port target
  python3 - "$requests" "$1" "$2" "$token" <<'PY'
import socket, sys, threading
total, port, target, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
auth = f"Authorization: Bearer {token}\r\n" if token and "samples" in target else ""
request = f"GET {target} HTTP/1.1\r\nHost: bench\r\n{auth}\r\n".encode()
def client(count):
    s = socket.create_connection(("127.0.0.1", port))
    for _ in range(count):
        s.sendall(request)
        data = b""
        while True:
            data += s.recv(65536)
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
                if len(body) >= length:
                    assert head.startswith(b"HTTP/1.1 200"), head
                    break
    s.close()
threads = [threading.Thread(target=client, args=(total // 8,)) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
PY
}

instructions() { # label pid port target
  callgrind_control -i on "$2" >/dev/null
  measure "$3" "$4"                       # warm-up, not counted
  callgrind_control -z "$2" >/dev/null
  measure "$3" "$4"
  callgrind_control -d "$1" "$2" >/dev/null
  callgrind_control -i off "$2" >/dev/null
  sleep 1
  local file; file=$(ls -t "$out"/callgrind.out.*"$2".* | head -1)
  local ir; ir=$(awk '/^summary:/ {print $2}' "$file")
  echo "$1: $((ir / requests)) instructions per request ($requests requests, $file)"
}

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out.floor.%p" \
  "$bin/dispatch-floor" "$floor_port" > "$out/floor.log" 2>&1 &
floor_pid=$!
for _ in $(seq 600); do curl -fs "http://127.0.0.1:$floor_port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
instructions floor "$floor_pid" "$floor_port" /healthz
kill "$floor_pid"
instructions healthz "$pid" "$healthd_port" /healthz
if [ -n "$token" ]; then instructions samples "$pid" "$healthd_port" "/v1/samples?type=stepCount&limit=10"; fi
