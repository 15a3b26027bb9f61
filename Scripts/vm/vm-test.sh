#!/bin/bash
# make vm-test: GATTLab against a real kernel BlueZ stack without Bluetooth hardware.
# Boots a Debian kernel under qemu (TCG unless real KVM works) with the host root shared
# read-only over 9p; inside (Scripts/vm/guest.sh), btvirt links two virtual LE controllers;
# `gattlab emulate SCENARIO --hci` serves the emulated speaker or sensor as a peripheral on one,
# while from the other `gattlab replay run --target bluez:` replays the recorded Captures/ sessions,
# a write benchmark runs, and `gattlab fuzz run --target bluez:` fuzzes a healthy speaker and one
# with a planted bug; btmon, tcpdump and `gattlab capture` capture it all. Then checks here, on
# the host, each with its figures and a PASS or FAIL line.
#
# Environment: VM_TIMEOUT (s, whole VM run, default 720), GATTLAB (a built binary to use instead
# of building), VM_SESSIONS, VM_SPEED (below), BENCH_WRITES (write round trips to time, default
# 200), FORCE_TCG=1, VM_FUZZ=0 (no fuzz campaigns), VM_BUMBLE=0 (no Bumble peer; it needs
# Scripts/bumble-env.sh's venv).
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
W=$REPO/.build-vm
OUT=$W/out
VM_TIMEOUT=${VM_TIMEOUT:-720}
BENCH_WRITES=${BENCH_WRITES:-200}
# Recorded sessions (Captures/emulated, without .btsnoop) replayed in the VM, and the device speed
# their emulators run at (timers 10x: an OTA's 14 s of device time takes 1.4 s).
VM_SESSIONS=${VM_SESSIONS:-"speaker-ota-mtu247 speaker-ota-mtu23 speaker-wrong-password-mtu23 speaker-reboot-validate-mtu247
  speaker-disconnect-downloading-mtu23 sensor-scan-mtu247 sensor-scan-mtu23 sensor-scan-separate-markers-mtu23
  sensor-mtu23-only-mtu247 sensor-scan-missing-end-mtu247 esp-sec0-provision-mtu247"}
VM_SPEED=${VM_SPEED:-10}
PACKAGES="qemu-system-x86 bluez bluez-test-tools busybox-static kmod cpio tcpdump tshark python3"
T_START=$(date +%s.%N)
elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
FAILS=0
PASSES=0
pass() { echo "PASS: $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() { echo "FAIL: $*"; echo "vm-test: FAILED after $(elapsed "$T_START") s (logs in $OUT)"; exit 1; }
case "$REPO$W" in *[[:space:]]*) die "the repository path must not contain spaces ($REPO)";; esac

# 1. Packages.
missing=""
# Installed, not only known: dpkg -s answers 0 for a package removed without --purge.
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || die "missing packages; run: sudo apt-get install -y --no-install-recommends$missing"
  echo "vm-test: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq && timeout 900 apt-get install -y -qq --no-install-recommends $missing > /dev/null \
    || die "apt-get install$missing failed"
fi
[ "$(id -u)" = 0 ] || echo "vm-test: note: not root; qemu and the 9p share may need root"

# 2. The kernel: a Debian linux-image package, downloaded once and extracted (not installed).
# Debian 12's 6.12 kernel when apt knows it, else the default one (6.1): under the black-box
# campaigns' rapid LE connect/disconnect, 6.1 oopses in its own L2CAP channel bookkeeping
# ("list_del corruption" in hci_chan_del from l2cap_sock_release); 6.12 does not.
# VM_KERNEL_PACKAGE picks another package (e.g. linux-image-6.1.0-47-amd64); each is cached apart.
kernel_of() { apt-cache depends "$1" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
PKG=${VM_KERNEL_PACKAGE:-$(kernel_of linux-image-6.12-amd64)}
PKG=${PKG:-$(kernel_of linux-image-amd64)}
[ -n "$PKG" ] || die "apt-cache knows no linux-image-amd64 (is this Debian with its sources?)"
KROOT=$W/kernel/$PKG/root
if ! ls "$KROOT"/boot/vmlinuz-* > /dev/null 2>&1; then
  mkdir -p "$W/kernel/debs"
  ls "$W/kernel/debs/${PKG}"_*.deb > /dev/null 2>&1 || (cd "$W/kernel/debs" && timeout 600 apt-get download -qq "$PKG") \
    || die "apt-get download $PKG failed"
  rm -rf "$KROOT"; mkdir -p "$KROOT"
  dpkg-deb -x "$(ls "$W/kernel/debs/${PKG}"_*.deb | head -1)" "$KROOT" || die "dpkg-deb -x $PKG failed"
  depmod -b "$KROOT" "$(ls "$KROOT/lib/modules" | head -1)" || die "depmod failed"
fi
KVER=$(ls "$KROOT/lib/modules" | sort -V | tail -1)
echo "vm-test: kernel $KVER (cached in $W/kernel)"

# 3. gattlab: the debug build (`make test` leaves one), copied so a rebuild during the run
# cannot change it under the guest.
if [ -z "${GATTLAB:-}" ]; then
  (cd "$REPO" && timeout 1800 swift build --product gattlab 2>&1 | tail -3) || die "swift build failed"
  GATTLAB=$REPO/.build/debug/gattlab
fi
[ -x "$GATTLAB" ] || die "no gattlab binary at $GATTLAB"
mkdir -p "$W/bin"; cp "$GATTLAB" "$W/bin/gattlab.new" && mv "$W/bin/gattlab.new" "$W/bin/gattlab"
GL=$W/bin/gattlab

# 4. The initramfs: static busybox and the modules to mount 9p.
INITRD=$W/initrd-$KVER.gz
D=$W/initrd.d
rm -rf "$D"; mkdir -p "$D/bin" "$D/mods" "$D/proc" "$D/sys" "$D/dev" "$D/newroot"
cp /bin/busybox "$D/bin/busybox"
for m in virtio_pci 9pnet_virtio 9p; do modprobe -d "$KROOT" -S "$KVER" --show-depends "$m"; done \
  | awk '$1 == "insmod" && !seen[$2]++ {print $2}' > "$D/mods/paths"
while read -r f; do cp "$f" "$D/mods/" && basename "$f"; done < "$D/mods/paths" > "$D/mods/order"
cp "$REPO/Scripts/vm/initramfs-init.sh" "$D/init"; chmod +x "$D/init"
(cd "$D" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD" || die "cannot build the initramfs"

# 5. The sessions to replay: Captures/emulated recordings of the speaker and the sensor, each
# against the emulator of its own scenario (the name without -mtuNN). Their secrets are the
# emulator's made-up ones, so the scripts keep them (--reveal-secrets) and need no --set.
rm -rf "$OUT" "$W/scripts"; mkdir -p "$OUT" "$W/scripts"
: > "$W/sessions.tsv"
for name in $VM_SESSIONS; do
  capture=$REPO/Captures/emulated/$name.btsnoop
  [ -f "$capture" ] || die "VM_SESSIONS: no capture $capture"
  "$GL" replay extract "$capture" --reveal-secrets -o "$W/scripts/$name.json" > /dev/null 2> "$OUT/extract.log" \
    || die "gattlab replay extract $capture failed: $(tail -1 "$OUT/extract.log")"
  # The ESP-IDF app polls the device's Wi-Fi scan between its steps, and how many polls see it
  # unfinished depends on time: its session keeps the recorded timing at the device's own pace
  # (without the waits it reads a scan the device does not have yet; at 10x, the link's few ms a
  # round trip count ten times in device time and a poll sees the scan done where the recording
  # did not).
  timing=fast speed=$VM_SPEED; case $name in esp-*) timing=recorded speed=1 ;; esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${name%-mtu*}" "$W/scripts/$name.json" "$speed" "$timing" \
    "$REPO/Captures/emulated/$name.timeline.json" >> "$W/sessions.tsv"
done
# Devices built from a capture (`gattlab emulate --from CAPTURE --hci`), each replaying the capture's
# own session against it (`replay run CAPTURE`, no script), expected to decode to that capture's timeline.
# Against bluez: the capture's secrets are redacted, so the replay is given them with --set, as a
# user would, read from the capture (the speaker's credentials: SSID, NUL, password).
# Adds from_session NAME CAPTURE EXPECTED-TIMELINE to sessions.tsv; NAME.args holds the replay's
# extra arguments, one a line.
from_session() {
  local name=$1 capture=$2 expected=$3
  "$GL" replay extract "$capture" --reveal-secrets -o "$W/scripts/$name.revealed.json" > /dev/null 2> "$OUT/extract.log" \
    || die "gattlab replay extract $capture failed: $(tail -1 "$OUT/extract.log")"
  python3 -c 'import json, sys
for st in json.load(open(sys.argv[1]))["steps"]:
    c = st.get("credentials") or {}
    if c.get("format") == "speaker-credentials":
        ssid, _, password = bytes.fromhex(st["value"]).partition(b"\0")
        print("--set"); print("password=" + password.decode())' "$W/scripts/$name.revealed.json" > "$W/scripts/$name.args" \
    || die "the secrets of $capture could not be read"
  rm -f "$W/scripts/$name.revealed.json"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "--from $capture" "$capture" "$VM_SPEED" fast "$expected" >> "$W/sessions.tsv"
}
from_session from-speaker-ota-demo "$REPO/Captures/speaker-ota-demo.btsnoop" "$REPO/Captures/speaker-ota-demo.timeline.json"
echo "vm-test: $(wc -l < "$W/sessions.tsv") sessions to replay at device speed ${VM_SPEED}x: $VM_SESSIONS; emulate --from Captures/speaker-ota-demo.btsnoop"

# The benchmark script: N Write Requests (the speaker's status CCCD, harmless) in one session.
rm -f "$W/bench-writes.json"
# Extracted redacted: it needs only the set-up and a CCCD write, and out/ is what people share.
"$GL" replay extract "$REPO/Captures/emulated/speaker-ota-mtu247.btsnoop" -o "$OUT/ota-script.json" > /dev/null 2>&1 || true
python3 "$REPO/Scripts/vm/bench-script.py" "$OUT/ota-script.json" "$BENCH_WRITES" "$W/bench-writes.json" \
  || echo "vm-test: note: no benchmark script (see above); the round-trip figure will be missing"

# 5b. Bumble as the peer (Tests/Bumble/peer.py in the guest, from the project's venv): scripts of
# sessions Bumble's own central recorded against Bumble's peripheral (make_capture.py), and one
# recorded with GATTLab's emulator, replayed against the Bumble peer over the kernel link.
# NAME, ADDRESS (peer.py's peripherals: Just Works 03, Passkey 04), SCRIPT, SECURITY, FAULT, EXPECT, BOND.
rm -f "$W/bumble-sessions.tsv" "$W/fuzz.off"
[ "${VM_FUZZ:-1}" = 0 ] && touch "$W/fuzz.off"
if [ "${VM_BUMBLE:-1}" = 0 ]; then
  echo "vm-test: VM_BUMBLE=0: no Bumble peer"
elif ! (cd "$REPO" && bash Scripts/bumble-env.sh); then
  echo "bumble_fail=no Bumble venv (Scripts/bumble-env.sh failed; VM_BUMBLE=0 runs without it)" > "$OUT/bumble-host-status"
else
  ok=1
  for c in speaker-ota-pairing sensor-suffix-newline; do
    "$REPO/.venv-bumble/bin/python" "$REPO/Tests/Bumble/make_capture.py" --capture "$c" --out "$W/scripts/bumble-$c.btsnoop" \
      > /dev/null 2> "$OUT/bumble-make-$c.log" \
      && "$GL" replay extract "$W/scripts/bumble-$c.btsnoop" --reveal-secrets -o "$W/scripts/bumble-$c.json" > /dev/null 2>> "$OUT/bumble-make-$c.log" \
      || { ok=0; echo "vm-test: note: Bumble capture $c failed: $(tail -1 "$OUT/bumble-make-$c.log")"; }
  done
  if [ $ok = 1 ]; then
    S=$W/scripts
    # The same session for a phone that asks for an encrypted link as it connects (replay run
    # --security medium): without the refused write and the app's own pairing step.
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
steps = [st for st in s["steps"] if st["action"] != "encrypt"]
bad = [i for i, st in enumerate(steps) if st["action"] == "write" and (st.get("expect") or {}).get("result") == "error"]
s["steps"] = [st for i, st in enumerate(steps) if i not in bad]
json.dump(s, open(sys.argv[2], "w"), indent=1)' "$S/bumble-speaker-ota-pairing.json" "$S/bumble-speaker-secure.json" \
      || { ok=0; echo "vm-test: note: the secure-connect script could not be made"; }
  fi
  if [ $ok = 1 ]; then
    # BOND: keep the kernel's bond with the peer, or unpair (btmgmt unpair) before the replay so
    # that --security medium pairs afresh as the link comes up, before any ATT PDU.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
      bumble-speaker-pairing 00:AA:01:03:00:03 "$S/bumble-speaker-ota-pairing.json" low - equivalent keep \
      bumble-sensor-scan 00:AA:01:03:00:03 "$S/bumble-sensor-suffix-newline.json" low - equivalent keep \
      bumble-sensor-no-end 00:AA:01:03:00:03 "$S/bumble-sensor-suffix-newline.json" low sensor-no-end diverged keep \
      bumble-speaker-passkey 00:AA:01:04:00:04 "$S/bumble-speaker-ota-pairing.json" low - equivalent keep \
      bumble-speaker-secure 00:AA:01:03:00:03 "$S/bumble-speaker-secure.json" medium - equivalent unpair > "$W/bumble-sessions.tsv"
    echo "vm-test: Bumble peer: $(wc -l < "$W/bumble-sessions.tsv") replays and 2 central sessions"
    # A capture Bumble made (its central against its sensor), as a device of its own: emulate
    # --from it, replay it (with the btvirt sessions), expect the capture's own timeline.
    c=$S/bumble-sensor-suffix-newline.btsnoop
    # (Without its timeline, the check says the expected timeline is missing.)
    "$GL" timeline --format json --pretty "$c" > "$S/from-bumble-sensor.timeline.json" 2> "$OUT/bumble-make-timeline.log" \
      || rm -f "$S/from-bumble-sensor.timeline.json"
    from_session from-bumble-sensor "$c" "$S/from-bumble-sensor.timeline.json"
  else
    echo "bumble_fail=the Bumble captures could not be made (out/bumble-make-*.log)" > "$OUT/bumble-host-status"
  fi
fi

# 6. Boot. KVM only where the CPU has real virtualization and /dev/kvm opens; else TCG.
if [ -z "${FORCE_TCG:-}" ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  ACCEL="-accel kvm -cpu host"; ACCEL_NAME=kvm
else
  ACCEL="-accel tcg,thread=multi -cpu max"; ACCEL_NAME=tcg
fi
# The console's last lines, without the terminal's escape sequences: what the kernel said last.
console_tail() {
  tr -d '\r' < "$1" 2>/dev/null | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' | grep -av '^[[:space:]]*$' \
    | tail -"$2" | sed 's/^/    | /'
}
status() { sed -n "s/^$1=//p" "$OUT/guest-status" 2>/dev/null | tail -1; }
# One boot. -no-reboot with the guest's sysrq power-off ends qemu; timeout (then KILL) ends a hung
# guest. no_timer_check: a vCPU the host deschedules at the wrong moment fails the kernel's early
# IO-APIC timer check, and that panic (a silent reboot here) ends the run before anything starts.
boot() {
  echo "vm-test: booting ($ACCEL_NAME, timeout ${VM_TIMEOUT} s); console in $OUT/console.log"
  T_VM=$(date +%s.%N)
  timeout -k 10 "$VM_TIMEOUT" qemu-system-x86_64 $ACCEL -smp 2 -m 1G -nographic -no-reboot -nodefaults \
    -serial stdio -machine q35 \
    -kernel "$KROOT/boot/vmlinuz-$KVER" -initrd "$INITRD" \
    -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
    -fsdev local,id=out,path="$OUT",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=out,mount_tag=out \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init gvm.work=$W gvm.repo=$REPO gvm.kroot=$KROOT" \
    < /dev/null > "$OUT/console.log" 2>&1
  QEMU_RC=$?
  VM_SECONDS=$(elapsed "$T_VM")
}
# The VM writes its captures and logs (a few MB) to out/; a full disk would only show as a guest
# that stops without a word, since its console could not be written either.
avail_kb=$(df -Pk "$OUT" | awk 'NR == 2 {print $4}')
[ "${avail_kb:-0}" -ge 524288 ] || die "only $((${avail_kb:-0} / 1024)) MB free for $OUT; the VM run needs 512 MB"
boot
# A guest whose script never started (no boot_uptime: the kernel or the initramfs stopped first)
# tested nothing of GATTLab: show what the kernel said, and boot once more. A guest that started
# and failed is never booted again.
if [ "$QEMU_RC" != 124 ] && [ "$QEMU_RC" != 137 ] && [ -z "$(status boot_uptime)" ]; then
  echo "vm-test: the guest stopped before its script started (qemu status $QEMU_RC, $VM_SECONDS s); the console's last lines:"
  console_tail "$OUT/console.log" 12
  mv "$OUT/console.log" "$OUT/console-first-boot.log"; rm -f "$OUT/guest-status"
  echo "vm-test: booting once more (the first console is in $OUT/console-first-boot.log)"
  boot
fi
tr -d '\r' < "$OUT/console.log" | grep -aoE '\[guest .*|^.*(FAIL|initramfs|Kernel panic).*' | sed 's/^/  /'
[ "$QEMU_RC" = 124 ] || [ "$QEMU_RC" = 137 ] && fail "the VM did not finish within $VM_TIMEOUT s (killed); console: $OUT/console.log"
if [ "$(status guest_done)" != 1 ]; then
  echo "vm-test: the console's last lines:"; console_tail "$OUT/console.log" 25
  die "the guest did not finish its run (qemu status $QEMU_RC, $VM_SECONDS s): $(status fail)"
fi
pass "VM run: $ACCEL_NAME, $VM_SECONDS s (guest script started at $(status boot_uptime) s uptime; controllers after $(status controller_tries) tries: central $(status central), peripheral $(status peripheral))"

# 7. Checks on the host.
python3 "$REPO/Scripts/vm/check.py" --gattlab "$GL" --out "$OUT" --expected "$REPO/Captures/emulated" \
  --bench-writes "$BENCH_WRITES" > "$OUT/checks.txt" || FAILS=$((FAILS + $?))
cat "$OUT/checks.txt"
PASSES=$((PASSES + $(grep -c '^PASS' "$OUT/checks.txt")))

echo "vm-test: $PASSES passed, $FAILS failed"
if [ "$FAILS" = 0 ]; then
  echo "vm-test: PASSED in $(elapsed "$T_START") s (VM $VM_SECONDS s); logs and captures in $OUT"
else
  echo "vm-test: FAILED ($FAILS checks) after $(elapsed "$T_START") s; logs and captures in $OUT"
  exit 1
fi
