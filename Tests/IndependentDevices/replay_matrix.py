#!/usr/bin/env python3
"""Replay GATTLab's captures against the independent devices and tabulate the verdicts.

  python3 Tests/IndependentDevices/replay_matrix.py [--gattlab .build/debug/gattlab]
          [--captures Captures] [--aligned] [--only PATTERN] [--timing fast]

Each capture gets a fresh device process (device state persists across connections, so
one capture's end would be the next one's start). Speaker captures whose recorded join
succeeded (speaker and nRF7) get `--set password=` with this world's HomeNet password; the
others keep the recorded (wrong) one. `--aligned` puts the devices in the recorded Wi-Fi world
(worlds/recorded-*.json), at server MTU 247 and answering 0x05 as an unbonded Zephyr
does, to show that what remains is the device's own behaviour.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PASSWORD = "Tr0ub4dor&3"
# recordings whose password must stay the recorded one (a refused or invalid one)
KEEP_PASSWORD = ("wrong-password", "5ghz", "invalid-passphrase", "network-not-found")


def run(gattlab, capture, device, aligned, timing):
    tmp = tempfile.mkdtemp(prefix="indie-rep-")
    sock = os.path.join(tmp, device + ".sock")
    dargs = [sys.executable, os.path.join(HERE, "device.py"), device, "--listen", sock]
    if aligned:
        dargs += ["--mtu", "247", "--no-bond"]
        w = os.path.join(HERE, "worlds", "recorded-%s.json" % device)
        if os.path.exists(w):
            dargs += ["--world", w]
    dev = subprocess.Popen(dargs, stderr=open(os.path.join(tmp, "device.log"), "w"))
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.01)
    name = os.path.basename(capture)
    rargs = [gattlab, "replay", "run", capture, "--target", "unix:" + sock, "--allow-writes",
             "--format", "json", "--timing", timing]
    if device in ("speaker", "nrf7") and not any(k in name for k in KEEP_PASSWORD) and not aligned:
        rargs += ["--set", "password=" + PASSWORD]
    t0 = time.monotonic()
    p = subprocess.run(rargs, capture_output=True, text=True, timeout=600)
    dt = time.monotonic() - t0
    dev.terminate()
    dev.wait(5)
    with open(os.path.join(tmp, "device.log")) as f:
        log = f.read()
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        return name, "error", p.stderr.strip().splitlines()[-1:] , dt
    notes = []
    for s in rep.get("steps", []):
        if s.get("status") not in ("ok", "not run") and s.get("status") is not None:
            notes.append("step %s %s %s: %s" % (s.get("step"), s.get("action"), s.get("name", ""),
                                                "; ".join(s.get("differences", []) or s.get("observed", []))))
    if rep.get("verdict") == "target-failed":
        notes.append("device log: " + " | ".join(log.splitlines()[-6:]))
    return name, rep.get("verdict"), notes, dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gattlab", default="/work/main/.build/debug/gattlab")
    ap.add_argument("--captures", default="/work/main/Captures")
    ap.add_argument("--aligned", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--timing", default="fast")
    args = ap.parse_args()
    caps = sorted(glob.glob(os.path.join(args.captures, "emulated", "*.btsnoop")))
    caps += [os.path.join(args.captures, "speaker-ota-demo.btsnoop")]
    counts = {}
    for cap in caps:
        name = os.path.basename(cap)
        device = name.split("-")[0]
        if device not in ("speaker", "sensor", "nrf7") or args.only not in name:
            continue
        timing = args.timing
        if "reboot" in name or "rollback" in name:
            timing = "10"      # the reconnection must come after the device's boot
        name, verdict, notes, dt = run(args.gattlab, cap, device, args.aligned, timing)
        counts[verdict] = counts.get(verdict, 0) + 1
        print("%-44s %-13s %5.1fs" % (name, verdict, dt))
        for n in notes:
            print("      " + n[:300])
        sys.stdout.flush()
    print(counts)


if __name__ == "__main__":
    main()
