#!/bin/bash
# PID 1 inside the VM (Scripts/vm/vm-test.sh boots it): two linked virtual LE controllers
# (btvirt), the emulated speaker as a real peripheral on one (`gattlab emulate --hci`), a replay
# of a recorded OTA from the other (`gattlab replay run --target bluez:`), a write round-trip
# benchmark, all captured by btmon, by tcpdump on bluetooth-monitor and by gattlab capture. Results go to
# $WORK/out (shared with the host); the host checks them. Always powers the VM off.
WORK=$1 REPO=$2 KROOT=$3
OUT=$WORK/out
GATTLAB=$WORK/bin/gattlab
CENTRAL_ADDR=00:AA:01:00:00:00
PERIPHERAL_ADDR=00:AA:01:01:00:01
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run TMPDIR=/run
mount -t tmpfs tmpfs /run
# A writable /tmp and /var/tmp, unless the clone (or its work folder, or the kernel) lives there:
# a tmpfs over it would hide the repository and the shared out folder (CI may clone under /tmp).
for d in /tmp /var/tmp; do
  case "$WORK/ $REPO/ $KROOT/" in *"$d/"*) ;; *) mount -t tmpfs tmpfs "$d" ;; esac
done
mount -t devpts devpts /dev/pts 2>/dev/null
cd /run || exit 1
T0=$(cut -d' ' -f1 /proc/uptime)
say() { awk -v u="$(cut -d' ' -f1 /proc/uptime)" -v m="$*" 'BEGIN{printf "[guest %7.2f] %s\n", u, m}'; }
STATUS=$OUT/guest-status
note() { echo "$1" >> "$STATUS"; }   # key=value lines the host reads
poweroff_now() { sync; echo o > /proc/sysrq-trigger; sleep 30; }
trap poweroff_now EXIT
say "up; kernel $(uname -r)"
note "boot_uptime=$T0"

fail() { say "FAIL: $*"; note "fail=$*"; stop_all; exit 1; }
PIDS_CAPTURE=""; PID_EMU=""; PID_BTVIRT=""
stop_all() {
  [ -n "$PID_EMU" ] && { kill -TERM "$PID_EMU" 2>/dev/null; for _ in $(seq 50); do kill -0 "$PID_EMU" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$PID_EMU" 2>/dev/null; }
  # btmon lags the kernel under TCG: stop the captures once neither file has grown for 1.5 s.
  if [ -n "$PIDS_CAPTURE" ]; then
    last=""; same=0
    for _ in $(seq 60); do
      now=$(stat -c %s "$OUT/btmon.btsnoop" "$OUT/monitor.pcap" 2>/dev/null | tr '\n' ' ')
      if [ "$now" = "$last" ]; then same=$((same + 1)); [ $same -ge 3 ] && break; else same=0; fi
      last=$now; sleep 0.5
    done
  fi
  [ -n "$PIDS_CAPTURE" ] && { kill -INT $PIDS_CAPTURE 2>/dev/null; for _ in $(seq 50); do kill -0 $PIDS_CAPTURE 2>/dev/null || break; sleep 0.1; done; }
  [ -n "$PID_BTVIRT" ] && kill "$PID_BTVIRT" 2>/dev/null
  PID_EMU=""; PIDS_CAPTURE=""; PID_BTVIRT=""
}

# Modules come from the extracted kernel package; the kernel's own requests go the same way.
printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$KROOT" > /run/modprobe && chmod +x /run/modprobe
echo /run/modprobe > /proc/sys/kernel/modprobe
modprobe() { /sbin/modprobe -d "$KROOT" "$@"; }
modprobe bluetooth && modprobe hci_vhci || fail "modprobe bluetooth hci_vhci"
say "modules: $(lsmod | awk '$1 ~ /^(bluetooth|hci_vhci)$/ {printf "%s ", $1}')"

# Capture from the first controller event on: btmon (btsnoop, datalink 2001) and libpcap's
# bluetooth-monitor device (pcap, DLT 254) see the same kernel monitor channel.
# btmon decodes every packet as it goes and lags under TCG; with the default socket buffer the
# kernel then drops monitor packets for it (btmon lost a quarter of the ATT PDUs tcpdump saw).
# A 16 MB receive buffer lets it catch up instead. Its decode goes to tmpfs, not the 9p share.
echo 16777216 > /proc/sys/net/core/rmem_max; echo 16777216 > /proc/sys/net/core/rmem_default
btmon -w "$OUT/btmon.btsnoop" > /run/btmon.log 2>&1 & PIDS_CAPTURE="$!"
tcpdump -U -Z root -i bluetooth-monitor -w "$OUT/monitor.pcap" > "$OUT/tcpdump.log" 2>&1 & PIDS_CAPTURE="$PIDS_CAPTURE $!"
# And gattlab's own live capture (libpcap's bluetooth-monitor device), checked against both.
"$GATTLAB" capture -o "$OUT/gattlab-capture.btsnoop" --force > "$OUT/gattlab-capture.log" 2>&1 & PIDS_CAPTURE="$PIDS_CAPTURE $!"
sleep 1

# hci_vhci creates a default controller of its own when the opener of /dev/vhci does not
# configure it within 1 s, which happens under TCG now and then: check that both btvirt
# controllers exist by address, else start again. Warm the page cache first.
cat /usr/bin/btvirt /usr/lib/x86_64-linux-gnu/libglib-2.0.so.0 > /dev/null 2>&1
# One hciconfig per look (starting a program takes a good part of a second under TCG): the
# controller names of both addresses, "hciC hciP", when both exist.
find_controllers() { hciconfig 2>/dev/null | awk -v c="$CENTRAL_ADDR" -v p="$PERIPHERAL_ADDR" '
  /^hci/ {d = $1; sub(":", "", d)} /BD Address/ && $3 == c {C = d} /BD Address/ && $3 == p {P = d}
  END {if (C != "" && P != "") print C, P}'; }
for try in 1 2 3 4; do
  btvirt -L -l2 > "$OUT/btvirt.log" 2>&1 & PID_BTVIRT=$!
  deadline=$(( $(cut -d. -f1 /proc/uptime) + 10 ))
  found=""
  while [ -z "$found" ] && [ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ]; do
    sleep 0.3; found=$(find_controllers)
  done
  [ -n "$found" ] && break
  say "controllers not both up (try $try): $(hciconfig 2>/dev/null | awk '/^hci/{n=$1} /BD Address/{printf "%s%s ", n, $3}'); retrying"
  kill $PID_BTVIRT; wait $PID_BTVIRT 2>/dev/null; PID_BTVIRT=""
  rmmod hci_vhci; modprobe hci_vhci; sleep 0.5
done
read -r C P <<< "$found"
[ -n "$C" ] && [ -n "$P" ] || fail "btvirt did not create the two controllers after 4 tries"
note "controller_tries=$try"; note "central=$C"; note "peripheral=$P"
say "central $C ($CENTRAL_ADDR), peripheral $P ($PERIPHERAL_ADDR), after $try tries"

timeout 20 btmgmt -i "$C" le on > /dev/null && timeout 20 btmgmt -i "$C" power on > /dev/null || fail "btmgmt could not power the central $C"

# The peripheral: gattlab powers and advertises it itself.
"$GATTLAB" emulate speaker-ota --hci "$P" > "$OUT/emulate.log" 2>&1 & PID_EMU=$!
deadline=$(( $(cut -d. -f1 /proc/uptime) + 90 ))
while [ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ]; do
  grep -q '^listening on' "$OUT/emulate.log" && break; kill -0 $PID_EMU 2>/dev/null || break; sleep 0.3
done
grep -q '^listening on' "$OUT/emulate.log" || fail "gattlab emulate --hci $P did not start: $(tail -1 "$OUT/emulate.log")"
say "$(grep '^listening on' "$OUT/emulate.log")"
btmgmt -i "$P" info > "$OUT/peripheral-info.txt" 2>&1

# The replay: the recorded OTA against the emulated speaker over the real kernel link.
say "replaying speaker-ota-mtu247 over bluez:$C/$PERIPHERAL_ADDR"
t=$(date +%s.%N)
timeout 150 "$GATTLAB" replay run "$REPO/Captures/emulated/speaker-ota-mtu247.btsnoop" \
  --target "bluez:$C/$PERIPHERAL_ADDR" --allow-writes --timing fast --format json \
  --set ssid=HomeNet --set "password=correct horse battery staple" \
  --set url=https://fw.chaoticvolt.example/speaker/v2.4.1.bin \
  > "$OUT/replay.json" 2> "$OUT/replay.log"
rc=$?
note "replay_rc=$rc"; note "replay_seconds=$(awk -v a="$(date +%s.%N)" -v b="$t" 'BEGIN{printf "%.2f", a-b}')"
say "replay exit status $rc"

# Write round trips: a script of Write Requests (made on the host), replayed as fast as the link goes.
if [ -f "$WORK/bench-writes.json" ]; then
  sleep 1
  say "write round-trip benchmark"
  timeout 120 "$GATTLAB" replay run "$WORK/bench-writes.json" --target "bluez:$C/$PERIPHERAL_ADDR" \
    --allow-writes --timing fast --format json > "$OUT/bench.json" 2> "$OUT/bench.log"
  note "bench_rc=$?"
fi

sleep 1
stop_all
say "emulator: $(tail -n +2 "$OUT/emulate.log" | tr '\n' ';')"
note "guest_done=1"
cp /run/btmon.log "$OUT/btmon.log" 2>/dev/null
say "done"
