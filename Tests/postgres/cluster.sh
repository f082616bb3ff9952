#!/usr/bin/env bash
# A private PostgreSQL cluster for tests: initdb + pg_ctl on a temporary directory and a free
# port, run as a non-root user (initdb refuses root; as root it runs as `postgres`).
#
#   Tests/postgres/cluster.sh start [DIR]   start one, print its postgres:// URL
#   Tests/postgres/cluster.sh url [DIR]     print the URL of a running one
#   Tests/postgres/cluster.sh stop [DIR]    stop it and remove its directory
#
# DIR defaults to $HEALTHD_PG_DIR or /tmp/healthd-pg-$UID. Settings favour test speed over
# durability (fsync off): never point a real deployment at this.
set -euo pipefail

command=${1:-}
dir=${2:-${HEALTHD_PG_DIR:-/tmp/healthd-pg-$(id -u)}}

bindir=""
for candidate in "$(command -v pg_config >/dev/null 2>&1 && pg_config --bindir || true)" /usr/lib/postgresql/*/bin; do
  if [ -n "$candidate" ] && [ -x "$candidate/initdb" ]; then bindir=$candidate; fi
done
[ -n "$bindir" ] || { echo "cluster.sh: no initdb found (install the postgresql package)" >&2; exit 1; }

# Root runs the server as `postgres` (Debian's package creates that user).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

url() {
  [ -f "$dir/port" ] || { echo "cluster.sh: no cluster in $dir" >&2; exit 1; }
  echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres?sslmode=disable"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

case "$command" in
  start)
    if [ -f "$dir/port" ] && as_owner "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then url; exit 0; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    # Sockets only on localhost and in the cluster's directory (not /var/run, which may be absent).
    # The port is probed free, then bound by the server: another program may take it in between,
    # so a failed start tries another port (twice more). A loaded machine gets 120 s to start.
    started=""
    for _ in 1 2 3; do
      port=$(free_port)
      echo "$port" >"$dir/port"
      if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start -o \
        "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
        >/dev/null; then started=1; break; fi
      as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    done
    [ -n "$started" ] || { cat "$dir/server.log" >&2; exit 1; }
    url
    ;;
  url) url ;;
  stop)
    if [ -d "$dir/data" ]; then as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop|url [DIR]" >&2; exit 2 ;;
esac
