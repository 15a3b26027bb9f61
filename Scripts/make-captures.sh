#!/usr/bin/env bash
# Regenerates Captures/: the demo capture and one recording per emulator scenario at MTU 23 and
# 247 (seed 1, so the bytes are the same every time). Run after changing the emulator or the
# scenarios, then review `git diff --stat Captures/`.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product gattlab
python3 Scripts/make-demo-capture.py Captures/speaker-ota-demo.btsnoop
mkdir -p Captures/emulated
for scenario in $(.build/debug/gattlab emulate list | awk '{print $1}'); do
  for mtu in 23 247; do
    .build/debug/gattlab emulate scenario "$scenario" --mtu "$mtu" --seed 1 --record "Captures/emulated/$scenario-mtu$mtu.btsnoop" --force
  done
done
