# Shared by the HTTP benchmark scripts (sourced, not run).

# Sets `bin`: $BIN when given (saved release binaries, e.g. an older build for before/after
# figures), otherwise a release build of the named products.
release_binaries() { # product...
  if [ -n "${BIN:-}" ]; then
    bin="$BIN"
  else
    local product
    for product in "$@"; do swift build -c release --product "$product" 2>&1 | tail -1; done
    bin="$(swift build -c release --show-bin-path)"
  fi
}

# Prints N loopback ports the kernel says are free now (all bound at once, so they differ), so
# two runs at once or a busy port do not collide.
free_ports() { # count
  python3 -c '
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in held))' "$1"
}
