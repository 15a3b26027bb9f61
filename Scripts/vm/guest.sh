#!/bin/bash
# PID 1 inside the VM (Scripts/vm/vm-test.sh boots it): two linked virtual LE controllers
# (btvirt); on one, the emulated speaker and sensor as real peripherals (`gattlab emulate --hci`),
# one scenario after another; from the other, the recorded Captures/ sessions replayed (`gattlab
# replay run --target bluez:`), a write round-trip benchmark and two short black-box fuzz
# campaigns (`gattlab fuzz run --target bluez:`), all captured by btmon, by tcpdump on
# bluetooth-monitor and by gattlab capture. Results go to $WORK/out (shared with the host); the
# host checks them. Always powers the VM off.
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
note "boot_uptime=$T0"; note "kernel=$(uname -r)"

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
  [ -n "$PID_PEER" ] && kill "$PID_PEER" 2>/dev/null
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
# Under the fuzz campaigns' load (two vCPUs, TCG) btmon still fell behind and lost 45 % of the
# records, and tcpdump 15 % once btmon was ahead of it: the three captures run at a higher
# priority than the programs making the traffic, which then wait for them.
nice -n -15 btmon -w "$OUT/btmon.btsnoop" > /run/btmon.log 2>&1 & PIDS_CAPTURE="$!"
nice -n -15 tcpdump -U -Z root -i bluetooth-monitor -w "$OUT/monitor.pcap" > "$OUT/tcpdump.log" 2>&1 & PIDS_CAPTURE="$PIDS_CAPTURE $!"
# And gattlab's own live capture (libpcap's bluetooth-monitor device), checked against both.
nice -n -15 "$GATTLAB" capture -o "$OUT/gattlab-capture.btsnoop" --force > "$OUT/gattlab-capture.log" 2>&1 & PIDS_CAPTURE="$PIDS_CAPTURE $!"
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

# No agent runs here (no bluetoothd): with no input and no output on both sides, pairing (the
# nRF7 sessions encrypt) is Just Works, which the kernel completes by itself.
timeout 20 btmgmt -i "$C" le on > /dev/null && timeout 20 btmgmt -i "$C" io-cap 3 > /dev/null \
  && timeout 20 btmgmt -i "$C" power on > /dev/null || fail "btmgmt could not power the central $C"

# Each session: the emulated device of its scenario as a real peripheral (gattlab powers and
# advertises the controller itself), and the recorded session replayed from the central over the
# kernel link. $WORK/sessions.tsv (made on the host): NAME, EMULATOR (emulate's arguments: a
# scenario, or --from CAPTURE), SCRIPT (a script, or the capture itself), SPEED, TIMING, EXPECTED
# (the timeline the host checks against); $WORK/scripts/NAME.args, if any: more replay arguments,
# one a line (--set for a capture's redacted secrets).
start_emulator() {  # start_emulator LOGNAME ARGS...: gattlab emulate ARGS --hci ${EMU_HCI:-$P}, until it listens
  local log=$OUT/emulate-$1.log; shift
  "$GATTLAB" emulate "$@" --hci "${EMU_HCI:-$P}" > "$log" 2>&1 & PID_EMU=$!
  local deadline=$(( $(cut -d. -f1 /proc/uptime) + 60 ))
  while [ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ]; do
    grep -q '^listening on' "$log" && return 0; kill -0 $PID_EMU 2>/dev/null || break; sleep 0.2
  done
  fail "gattlab emulate $* --hci ${EMU_HCI:-$P} did not start: $(tail -1 "$log")"
}
stop_emulator() {
  [ -n "$PID_EMU" ] || return
  kill -TERM "$PID_EMU" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$PID_EMU" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$PID_EMU" 2>/dev/null; wait "$PID_EMU" 2>/dev/null; PID_EMU=""
}
now() { date +%s.%N; }
# During the replays, gattlab capture's other paths as well: through btmon (--via btmon), the
# central only (--index), into a ring of small files (--max-size), printing the timeline live.
nice -n -15 "$GATTLAB" capture --via btmon --index "${C#hci}" -o "$OUT/ring.btsnoop" --max-size 20k --force --live --timeline \
  > "$OUT/ring-live.txt" 2> "$OUT/ring.log" & PID_RING=$!
sleep 1
note "ring_start=$(now)"
n=0
while IFS=$'\t' read -r name emu script speed timing _; do
  [ -n "$name" ] || continue
  n=$((n + 1))
  extra=(); [ -f "$WORK/scripts/$name.args" ] && mapfile -t extra < "$WORK/scripts/$name.args"
  # shellcheck disable=SC2086  # EMULATOR is words (paths without spaces: vm-test.sh checks)
  start_emulator "$name" $emu --speed "$speed"
  t=$(now)
  timeout 120 "$GATTLAB" replay run "$script" --target "bluez:$C/$PERIPHERAL_ADDR" --allow-writes \
    --timing "$timing" --speed "$speed" --format json "${extra[@]}" < /dev/null > "$OUT/replay-$name.json" 2> "$OUT/replay-$name.log"
  rc=$?
  t2=$(now)
  stop_emulator
  # Start and end (wall clock, as the captures stamp records) cut this session out of the captures.
  note "session=$name $rc $t $t2"
  say "replayed $name against emulated $emu (speed $speed, timing $timing): exit $rc, $(awk -v a="$t2" -v b="$t" 'BEGIN{printf "%.1f", a-b}') s; emulator: $(tail -n +2 "$OUT/emulate-$name.log" | tr '\n' ';')"
done < "$WORK/sessions.tsv"
note "sessions=$n"
sleep 1  # btmon's lag
kill -INT "$PID_RING" 2>/dev/null; for _ in $(seq 200); do kill -0 "$PID_RING" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID_RING" 2>/dev/null && { say "gattlab capture --via btmon did not stop within 20 s of SIGINT; killed"; kill -KILL "$PID_RING"; }
wait "$PID_RING"; note "ring_rc=$?"
say "ring capture: $(tail -1 "$OUT/ring.log")"

# Write round trips: a script of Write Requests (made on the host), replayed as fast as the link goes.
if [ -f "$WORK/bench-writes.json" ]; then
  start_emulator bench speaker-ota
  say "write round-trip benchmark"
  timeout 120 "$GATTLAB" replay run "$WORK/bench-writes.json" --target "bluez:$C/$PERIPHERAL_ADDR" \
    --allow-writes --timing fast --format json > "$OUT/bench.json" 2> "$OUT/bench.log"
  note "bench_rc=$?"
  stop_emulator
fi

# Google's Bumble as the independent peer (Tests/Bumble/peer.py): a Bumble controller attached
# through /dev/vhci (a third kernel controller, found by its address) on a Bumble LocalLink with
# Bumble hosts: two peripherals (speaker + sensor; Just Works and Passkey Entry) and a central.
# Started after the replays and the benchmark, so its Python work under TCG cannot shift their timing.
BUMBLE_ADDR=00:AA:01:02:00:02
PID_PEER=""
if [ -f "$WORK/bumble-sessions.tsv" ]; then
  mkfifo /run/peer.ctl && exec 7<> /run/peer.ctl   # read-write: opening never blocks
  nice -n -5 "$REPO/.venv-bumble/bin/python" "$REPO/Tests/Bumble/peer.py" --control /run/peer.ctl \
    > "$OUT/bumble-peer.jsonl" 2> "$OUT/bumble-peer.log" & PID_PEER=$!
fi

# Bumble over the kernel link. The kernel's central is the Bumble controller's hciN (B): replays
# against the Bumble peripherals, pairing through the kernel's SMP when the replay's encrypt step
# raises the socket's security (Just Works; Passkey Entry with the peer that asks for MITM, the
# kernel's passkey typed by peer.py's mgmt agent), re-encryption with the bond on reconnection, and a
# deliberate fault (the sensor leaves END off) that must diverge. Then B is the peripheral:
# `gattlab emulate --hci B`, driven by the Bumble central, which writes its own verdict.
# $WORK/bumble-sessions.tsv (made on the host): NAME, ADDRESS, SCRIPT, SECURITY, FAULT, EXPECT, BOND
# (unpair: the kernel forgets its bond with the peer first, so the replay's --security pairs at connect).
wait_for() {  # wait_for SECONDS COMMAND...: until the command succeeds
  local deadline=$(( $(cut -d. -f1 /proc/uptime) + $1 )); shift
  until "$@"; do [ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ] || return 1; sleep 0.3; done
}
bumble_controller() { hciconfig 2>/dev/null | awk -v a="$BUMBLE_ADDR" '/^hci/ {d = $1; sub(":", "", d)} /BD Address/ && $3 == a {print d}'; }
if [ -n "$PID_PEER" ]; then
  B=""
  wait_for 90 grep -q '"event": "ready"' "$OUT/bumble-peer.jsonl" && wait_for 20 test -n "$(bumble_controller)" && B=$(bumble_controller)
  if [ -z "$B" ]; then
    say "Bumble peer not ready: $(tail -2 "$OUT/bumble-peer.log" | tr '\n' ' ')"; note "bumble_fail=the Bumble peer did not start (bumble-peer.log)"
  else
    note "bumble_controller=$B"
    # A keyboard (Passkey Entry: the kernel's side types what the Bumble peer displays), bonding,
    # Secure Connections. No bluetoothd: peer.py answers the kernel's passkey requests.
    for c in "le on" "io-cap 2" "bondable on" "sc on" "power on"; do
      timeout 20 btmgmt -i "$B" $c > /dev/null 2>> "$OUT/bumble-btmgmt.log" || echo "btmgmt -i $B $c failed" >> "$OUT/bumble-btmgmt.log"
    done
    say "Bumble controller $B ($BUMBLE_ADDR): $(btmgmt -i "$B" info 2>/dev/null | awk '/current settings/{$1=$2=""; print}')"
    while IFS=$'\t' read -r name addr script security fault expect bond; do
      [ -n "$name" ] || continue
      [ "$fault" = - ] || echo "fault $fault on" >&7
      if [ "$bond" = unpair ]; then  # LE public address (type 1); its answer is kept for the check
        timeout 20 btmgmt -i "$B" unpair -t 1 "$addr" > "$OUT/unpair-$name.log" 2>&1
        note "bumble_unpair=$name $? $(now)"
      fi
      t=$(now)
      timeout 120 "$GATTLAB" replay run "$script" --target "bluez:$B/$addr" --allow-writes --timing fast --security "$security" \
        --att-timeout 8 --format json < /dev/null > "$OUT/replay-$name.json" 2> "$OUT/replay-$name.log"
      rc=$?
      t2=$(now)
      [ "$fault" = - ] || echo "fault $fault off" >&7
      note "bumble=$name $rc $t $t2 $expect $security $addr ${bond:-keep}"
      say "replayed $name against Bumble $addr (security $security, fault $fault): exit $rc, $(awk -v a="$t2" -v b="$t" 'BEGIN{printf "%.1f", a-b}') s"
      sleep 0.5
    done < "$WORK/bumble-sessions.tsv"
    for kind in speaker sensor; do
      EMU_HCI=$B start_emulator "bumble-central-$kind" "$kind" --speed 10
      t=$(now)
      echo "central $kind $OUT/bumble-central-$kind.json" >&7
      wait_for 90 test -f "$OUT/bumble-central-$kind.json"
      t2=$(now)
      stop_emulator
      note "bumble_central=$kind $t $t2"
      say "Bumble central against gattlab emulate $kind --hci $B: $(grep -o '"verdict": "[a-z]*"' "$OUT/bumble-central-$kind.json" 2>/dev/null || echo 'no verdict')"
    done
  fi
  echo quit >&7
  wait_for 10 sh -c "! kill -0 $PID_PEER 2>/dev/null" || kill "$PID_PEER" 2>/dev/null
  PID_PEER=""
fi

# Black-box fuzzing through the kernel stack (`fuzz run device`: discovery, then inputs aimed by
# UUID; a new LE link for each input that needs a fresh one, ended with an HCI Disconnect). The healthy speaker and sensor (nothing to find), then each with a
# planted bug: ssid-overflow (a long SSID crashes the speaker's firmware, which resets and drops
# the link) and split-line-loss (the sensor loses a network split across notifications, so its
# SCAN answer depends on the MTU).
fuzz_campaign() {  # fuzz_campaign NAME TARGET RUNS EMULATOR-ARGS...
  local name=$1 target=$2 runs=$3; shift 3
  start_emulator "fuzz-$name" "$@" --speed "$FUZZ_SPEED"
  say "black-box fuzzing $target over bluez:$C/$PERIPHERAL_ADDR: $* ($runs runs at most)"
  local t u; t=$(now); u=$(cut -d' ' -f1 /proc/uptime)
  timeout 150 "$GATTLAB" fuzz run "$target" --target "bluez:$C/$PERIPHERAL_ADDR" --seed 1 --runs "$runs" \
    --speed "$FUZZ_SPEED" --max-pdus "$FUZZ_MAX_PDUS" --findings "$OUT/fuzz-$name" --format json --quiet \
    < /dev/null > "$OUT/fuzz-$name.json" 2> "$OUT/fuzz-$name.log"
  local rc=$?
  note "fuzz=$name $rc $t $(now)"
  note "fuzz_uptime=$name $u $(cut -d' ' -f1 /proc/uptime)"  # the console's kernel messages are stamped with uptime
  stop_emulator
  say "fuzz $name: exit $rc; emulator: $(grep -c '^client' "$OUT/emulate-fuzz-$name.log") clients, $(grep -c 'firmware crash' "$OUT/emulate-fuzz-$name.log") firmware crashes"
}
FUZZ_SPEED=10
FUZZ_MAX_PDUS=32  # ~10 ms a PDU here with three captures: an input stays under a second
if [ ! -f "$WORK/fuzz.off" ]; then  # VM_FUZZ=0 leaves them out (a quicker run while working on the harness)
  # `device`: the campaign discovers the table and aims by UUID, as against any device.
  fuzz_campaign speaker-healthy device 150 speaker
  fuzz_campaign speaker-ssid-overflow device 300 speaker --quirk ssid-overflow
  fuzz_campaign sensor-healthy device 40 sensor
  fuzz_campaign sensor-split-line-loss device 300 sensor --quirk split-line-loss
fi

sleep 1
stop_all
note "guest_done=1"
tail -n 500 /run/btmon.log > "$OUT/btmon.log" 2>/dev/null  # its decode of the whole run is large; the file is what is checked
say "done"
