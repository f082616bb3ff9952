#!/usr/bin/env bash
# Import benchmark: generates a synthetic Apple Health export in a temp dir, imports it with the
# release binary into a fresh data dir, prints wall/CPU time and peak memory, imports it again
# (everything already stored), then removes everything.
# Usage: Tools/bench_import.sh [RECORDS] [xml|zip]     (default 1000000 xml)
set -euo pipefail
records="${1:-1000000}"
format="${2:-xml}"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/healthd-import-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
swift build -c release --product healthd --package-path "$here" >/dev/null
file="$work/export.$format"
python3 "$here/Tools/make_apple_export.py" "$file" "$records" $([ "$format" = zip ] && echo --zip)
ls -l "$file"
for run in first again; do
    echo "== import ($run)"
    /usr/bin/time -f "%e s wall, %U s user, %S s sys, peak RSS %M KB" \
        "$here/.build/release/healthd" import "$file" --user bench --data-dir "$work/data" 2>&1 \
        | grep -v '^import:' | sed -n '1p;$p'
done
