#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 30) from the committed seed corpus;
# new inputs go to .build-fuzz/corpus-*/ (not committed). A crash stops the run with the
# reproducer in .build-fuzz/crash-*. Usage: Fuzz/run.sh [SECONDS]   (CI: 20; long: 3600);
# FUZZ_TARGETS="unit duration" runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
# A fixed seed (FUZZ_SEED) makes a CI run replay the same inputs; unset, each run explores anew.
seed_option=()
[ -n "${FUZZ_SEED:-}" ] && seed_option=(-seed="$FUZZ_SEED")
# The Swift runtime's backtracer trips AddressSanitizer after a fatalError; libFuzzer's report is enough.
export SWIFT_BACKTRACE=enable=no
[ -x .build-fuzz/fuzz-http ] && [ -x .build-fuzz/fuzz-duration ] && [ -x .build-fuzz/fuzz-imucsv ] \
  && [ -x .build-fuzz/fuzz-applehealthxml ] && [ -x .build-fuzz/fuzz-healthautoexport ] \
  && [ -x .build-fuzz/fuzz-webhookpeer ] || bash Fuzz/build.sh
for target in ${FUZZ_TARGETS:-http jsonbody unit instant duration imucsv applehealthxml healthautoexport webhookpeer}; do
  seeds=Fuzz/corpus/$target
  [ "$target" = jsonbody ] && seeds=Fuzz/corpus/json
  work=.build-fuzz/corpus-$target
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  ".build-fuzz/fuzz-$target" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 "${seed_option[@]}" -artifact_prefix=.build-fuzz/crash-$target- -print_final_stats=1 2>&1 \
    | grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|ERROR|SUMMARY|panic|Fatal error|crash-" || true
  if ls .build-fuzz/crash-$target-* >/dev/null 2>&1; then
    echo "fuzz: $target crashed: $(ls .build-fuzz/crash-$target-*)"; exit 1
  fi
done
echo "fuzz: no crashes"
