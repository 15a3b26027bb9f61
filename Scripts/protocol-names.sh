#!/usr/bin/env bash
# Issue 19's rule: the engines name no device protocol. Lists every line (comments included)
# in the engine folders that names a protocol's types; the protocols live in Sources/Protocols/,
# whose Registry.swift is the one list naming them all.
#   Scripts/protocol-names.sh           the lines, then a count per folder; exit 0
#   Scripts/protocol-names.sh --check   the same, exit 1 when any line is found (make test runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
engines=(ATT AssignedNumbers Capture HCI GATT Transport Profiles Analysis Report Redact Emulator Replay Fuzz FuzzDriver GATTLabCLI gattlab)
types='SpeakerOTA|SensorScan|ScanJoiner|NRF7|ESPProv|ESPSecurity|ESPSession|ESPLive|ESPDevice|ESPConfiguration|Improv|Speaker(Device|Quirk|Fault|Configuration)|Sensor(Device|Quirk|Configuration)'
found=0
for e in "${engines[@]}"; do
  [ -d "Sources/$e" ] || continue
  # Generated protobuf code is the protocol's own and moves with it.
  # Comments too: a newcomer searching the engines for a protocol's name must find nothing.
  hits=$(grep -rnE --include='*.swift' "$types" "Sources/$e" | grep -v '\.pb\.swift:' || true)
  if [ -n "$hits" ]; then
    n=$(printf '%s\n' "$hits" | wc -l)
    found=$((found + n))
    printf '%s\n' "$hits"
    printf '== Sources/%s: %d lines name a protocol\n' "$e" "$n" >&2
  fi
done
printf 'protocol-names: %d engine lines name a protocol\n' "$found" >&2
if [ "${1:-}" = "--check" ] && [ "$found" -gt 0 ]; then exit 1; fi
