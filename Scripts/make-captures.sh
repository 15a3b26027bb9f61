#!/usr/bin/env bash
# Regenerates Captures/: the demo capture and one recording per emulator scenario at MTU 23 and
# 247 (seed 1, so the bytes are the same every time). Run after changing the emulator or the
# scenarios, then review `git diff --stat Captures/`.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product gattlab
python3 Scripts/make-demo-capture.py Captures/speaker-ota-demo.btsnoop
mkdir -p Captures/emulated
# The scenarios are the indented names under the "Scenarios" heading (devices and quirks are
# listed above it, audit scenarios below it under their own heading).
scenarios=$(.build/debug/gattlab emulate list | awk '/^Scenarios/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF { print $1 }')
for scenario in $scenarios; do
  for mtu in 23 247; do
    .build/debug/gattlab emulate scenario "$scenario" --mtu "$mtu" --seed 1 --record "Captures/emulated/$scenario-mtu$mtu.btsnoop" --force
  done
done
# The expected timeline of every capture, beside it (CapturesTests compares them): review the
# diff of these when a change to the analysis is meant to change a story.
for capture in Captures/*.btsnoop Captures/emulated/*.btsnoop; do
  .build/debug/gattlab timeline --format json --pretty --output "${capture%.btsnoop}.timeline.json" --force "$capture" 2>/dev/null
done
