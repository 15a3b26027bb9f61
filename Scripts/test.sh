#!/usr/bin/env bash
# `make test`: builds the tests, runs every one, and ends with one line on what was skipped.
#   Scripts/test.sh [swift test arguments...]     (e.g. --filter CaptureTests)
# A clone without the real captures (../shared/captures/real, or GATTLAB_REAL_CAPTURES) skips the
# tests that need them; under CI=true those tests fail instead (TestSupport's RealCaptures).
# Under CI=true (or GATTLAB_WARNINGS=error) a compiler warning fails the run: the build is kept
# free of warnings. An incremental build prints only what it recompiles: CI builds from scratch.
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
logs=.build/test-logs
mkdir -p "$logs"

ci=false
case "${CI:-}" in true|1|yes|TRUE|True) ci=true ;; esac
fatal_warnings=$ci
[ "${GATTLAB_WARNINGS:-}" = error ] && fatal_warnings=true

# Issue 19's rule: the engines name no device protocol (they work through the hooks).
Scripts/protocol-names.sh --check >"$logs/protocol-names.log" 2>&1 \
  || { cat "$logs/protocol-names.log" >&2; echo "gattlab: error: an engine names a device protocol (above); move the code to its protocol's folder behind a hook" >&2; exit 1; }

"$SWIFT" build --build-tests 2>&1 | tee "$logs/build.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || { echo "gattlab: error: the build failed (exit $rc; log: $logs/build.log)" >&2; exit "$rc"; }
warnings=$(grep -c 'warning:' "$logs/build.log")
if [ "$warnings" != 0 ]; then
  grep 'warning:' "$logs/build.log" | sort -u >&2
  if $fatal_warnings; then
    echo "gattlab: error: the build printed $warnings warning line(s); the build is kept free of warnings" >&2
    exit 1
  fi
  echo "gattlab: warning: the build printed $warnings warning line(s) (CI fails on them)" >&2
fi

"$SWIFT" test --skip-build "$@" 2>&1 | tee "$logs/test.log"
rc=${PIPESTATUS[0]}

# XCTest prints a skipped test's reason as "FILE:LINE: Class.test : Test skipped - REASON" (or
# "Test skipped: REASON" from XCTSkipIf/Unless); the real-capture ones carry RealCaptures.skipMessage.
# The Bumble ones (BumbleCaptureTests) carry BumbleCaptures.skipMessage: no .venv-bumble.
skipped=$(grep -c ' : Test skipped - needs real captures' "$logs/test.log")
bumble=$(grep -c ' : Test skipped - needs Bumble' "$logs/test.log")
other=$(grep ' : Test skipped' "$logs/test.log" | grep -v 'needs real captures' | grep -vc 'needs Bumble')
if [ "$bumble" != 0 ]; then
  echo "skipped $bumble tests that need Bumble: run Scripts/bumble-env.sh (it needs PyPI; make setup runs it)"
fi
if [ "$skipped" != 0 ]; then
  echo "skipped $skipped tests that need real captures: set GATTLAB_REAL_CAPTURES=DIR or clone with ../shared beside it"
fi
if [ "$other" != 0 ]; then
  echo "skipped $other other tests (their reasons: grep 'Test skipped' $logs/test.log)"
fi
exit "$rc"
