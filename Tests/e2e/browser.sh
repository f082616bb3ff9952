#!/usr/bin/env bash
# Browser test of the dashboard: the real healthd and a headless Chromium (Debian's `chromium`,
# installed here when missing). Usage: Tests/e2e/browser.sh PATH/TO/healthd [ARTIFACTS_DIR]
set -euo pipefail
binary="${1:?usage: browser.sh PATH/TO/healthd [ARTIFACTS_DIR]}"
artifacts="${2:-ci-artifacts}"
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v chromium >/dev/null 2>&1; then
  echo "browser: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
exec python3 "$here/browser.py" --binary "$binary" --public "$here/../../Public" --artifacts "$artifacts"
