#!/usr/bin/env bash
# End-to-end checks: starts the real healthd binary on a free port with a fresh data directory
# and drives it over real sockets. Usage: Tests/e2e/run.sh PATH/TO/healthd [--database postgres://...]
# With --database every check runs on PostgreSQL (a fresh database per data directory on that server).
set -euo pipefail
binary="${1:?usage: run.sh PATH/TO/healthd [--database URL]}"
shift
here="$(cd "$(dirname "$0")" && pwd)"
exec python3 "$here/e2e.py" --binary "$binary" --public "$here/../../Public" "$@"
