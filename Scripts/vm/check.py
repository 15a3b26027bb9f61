#!/usr/bin/env python3
"""Host-side checks of a VM harness run (Scripts/vm/vm-test.sh): prints one PASS or FAIL line per
check with its figures; the exit status is the number of failed checks."""
import argparse, json, os, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--gattlab", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--replay-rc", default="")
ap.add_argument("--replay-seconds", default="?")
ap.add_argument("--bench-rc", default="")
ap.add_argument("--bench-writes", type=int, default=0)
a = ap.parse_args()
out = a.out
fails = 0


def ok(msg):
    print("PASS: " + msg)


def bad(msg):
    global fails
    fails += 1
    print("FAIL: " + msg)


def run(cmd, timeout=120):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # noqa: BLE001
        return None


# 1. The replay over the real link.
rep = load(os.path.join(out, "replay.json"))
if rep is None:
    err = open(os.path.join(out, "replay.log")).read().strip() if os.path.exists(os.path.join(out, "replay.log")) else ""
    bad(f"replay: no report (exit status {a.replay_rc or '?'}): {err.splitlines()[-1] if err else 'no output'}")
else:
    steps = rep.get("steps", [])
    counts = rep.get("counts", {})
    figures = (f"1 session, {len(steps)} steps ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}), "
               f"replay {rep.get('duration', 0) / 1e6:.1f} s, process {a.replay_seconds} s, target {rep.get('target')}")
    if rep.get("verdict") == "equivalent" and a.replay_rc == "0":
        ok("replay of speaker-ota-mtu247 over the kernel LE link is equivalent: " + figures)
    else:
        bad(f"replay verdict {rep.get('verdict')} (exit status {a.replay_rc}): " + figures)
        for s in steps:
            if s.get("status") != "ok":
                print(f"    step {s.get('step')} {s.get('action')} {s.get('name') or ''}: {s.get('status')}; "
                      + "; ".join(s.get("differences", []) + s.get("observed", [])))

# 2. tshark reads both captures; 3. they agree on the ATT layer record for record.
caps = {"btmon": os.path.join(out, "btmon.btsnoop"), "tcpdump": os.path.join(out, "monitor.pcap"),
        "gattlab capture": os.path.join(out, "gattlab-capture.btsnoop")}
fields = ["hci_mon.adapter_id", "hci_mon.opcode", "btatt.opcode", "btatt.handle", "btatt.value"]
att, totals = {}, {}
for name, path in caps.items():
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        bad(f"{name} capture {path} is missing or empty")
        continue
    rc, so, se = run(["tshark", "-r", path, "-T", "fields", "-e", "frame.number"])
    rc2, so2, se2 = run(["tshark", "-r", path, "-Y", "btatt", "-T", "fields"] + sum((["-e", f] for f in fields), []))
    if rc != 0 or rc2 != 0:
        bad(f"tshark cannot read the {name} capture: {(se or se2).strip().splitlines()[-1:]}")
        continue
    totals[name] = len(so.splitlines())
    att[name] = so2.splitlines()
if len(att) == len(caps):
    ok("tshark reads every capture: " + ", ".join(f"{n} {totals[n]} records ({len(att[n])} ATT)" for n in caps))
    b = att["btmon"]
    for other in ["tcpdump", "gattlab capture"]:
        t = att[other]
        same = sum(1 for x, y in zip(b, t) if x == y)
        if b == t and b:
            ok(f"btmon and {other} agree on the ATT layer record for record: {same} of {len(b)} ATT PDUs identical "
               f"(adapter, monitor opcode, ATT opcode, handle, value); all records: {totals['btmon']} vs {totals[other]}")
        else:
            first = next((i for i, (x, y) in enumerate(zip(b, t)) if x != y), min(len(b), len(t)))
            bad(f"btmon and {other} differ on the ATT layer: {len(b)} vs {len(t)} ATT PDUs, {same} identical, first "
                f"difference at ATT PDU {first + 1}: {b[first] if first < len(b) else '-'} | {t[first] if first < len(t) else '-'}")
    # Both controllers are in the capture: each PDU once sent (monitor opcode 4, ACL TX) and once received (5).
    tx = sum(1 for line in b if line.split("\t")[1:2] == ["4"])
    rx = sum(1 for line in b if line.split("\t")[1:2] == ["5"])
    print(f"    ATT PDUs in the btmon capture: {tx} sent, {rx} received (two controllers: each PDU appears once each way)")

# 4. gattlab's timeline of the btmon capture, and of its own capture, shows the OTA to SUCCESS.
for name in ["btmon", "gattlab capture"]:
    cap = caps[name]
    if not os.path.exists(cap):
        continue
    rc, so, se = run([a.gattlab, "timeline", cap])
    with open(os.path.join(out, f"timeline-{name.replace(' ', '-')}.txt"), "w") as f:
        f.write(so + se)
    lines = [l for l in so.splitlines() if "SUCCESS" in l]
    if rc in (0, 1) and lines:
        ok(f"gattlab timeline of {name}'s file shows the OTA to SUCCESS ({len(so.splitlines())} lines; "
           f"first: {lines[0].strip()[:100]})")
    else:
        bad(f"gattlab timeline of {name}'s file (exit {rc}) shows no SUCCESS; see {out}: "
            + (se.strip().splitlines() or ["-"])[-1])

# 5. Write round trips between the two controllers.
bench = load(os.path.join(out, "bench.json"))
if a.bench_writes and bench is not None:
    subs = [s for s in bench.get("steps", []) if s.get("action") == "subscribe"]
    times = [s["observedAt"] for s in subs if s.get("status") == "ok" and s.get("observedAt") is not None]
    if len(times) >= 2 and times[-1] > times[0]:
        per = (times[-1] - times[0]) / (len(times) - 1)
        ok(f"write round trips: {len(times)} Write Requests answered, {1e6 / per:.1f} round trips/s "
           f"({per / 1000:.2f} ms each) between the two controllers (bench exit {a.bench_rc})")
    else:
        bad(f"write round-trip benchmark: {len(times)} of {len(subs)} writes answered (verdict {bench.get('verdict')}, exit {a.bench_rc})")
elif a.bench_writes:
    bad(f"write round-trip benchmark: no report (exit status {a.bench_rc or 'not run'})")

sys.exit(min(fails, 100))
