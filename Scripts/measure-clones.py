#!/usr/bin/env python3
"""Measures clones of real captures (issue 17): for every capture in DIR and every device in it
with ATT traffic (each peer address, and each connection whose peer is unknown, as in sniffer
captures), `gattlab replay run FILE --peer ADDR|--connection H --target emu:recorded` with the
recorded timing and with --timing fast.

    Scripts/measure-clones.py GATTLAB DIR OUT.tsv [JOBS]

GATTLAB is the binary (.build/debug/gattlab or .build/release/gattlab), DIR a folder of
captures (../shared/captures/real), OUT.tsv the table: capture, selector, device (`first` for
the one `replay run FILE` takes, `other`), steps and both verdicts (`error` where the capture
cannot be cloned, e.g. no discovery). A summary of equivalent clones goes to stdout.
Python 3 standard library only.
"""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

if len(sys.argv) < 4:
    sys.exit(__doc__)
G, D, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
JOBS = int(sys.argv[4]) if len(sys.argv) > 4 else 1


def run(args):
    p = subprocess.run([os.path.abspath(G)] + args, cwd=D, capture_output=True, text=True, timeout=1800)
    return p.returncode, p.stdout + p.stderr


def devices(f):
    """The devices of capture f, and the source of the script `replay run f` takes."""
    # An unknown connection's error names those with ATT traffic.
    _, o = run(["replay", "run", f, "--connection", "0xzz", "--target", "emu:recorded"])
    m = re.search(r"it has: (.*) \(", o)
    if not m or m.group(1) == "none":
        return [], None
    rc, o = run(["replay", "extract", f])
    first = json.loads(o)["source"] if rc == 0 else None
    peers, lone = [], []
    for c in (c.strip() for c in m.group(1).split(",")):
        rc, o = run(["replay", "extract", f, "--connection", c])
        if rc != 0:
            continue
        p = json.loads(o)["source"].get("peer")
        if p and p not in peers:
            peers.append(p)
        elif not p:
            lone.append(c)
    return [("--peer", p) for p in peers] + [("--connection", c) for c in lone], first


def verdict(o):
    for line in reversed(o.strip().splitlines()):
        m = re.match(r"(equivalent|diverged|failed)\S*: ", line)
        if m:
            n = re.search(r"of (\d+) steps|(\d+) steps", line)
            return m.group(1), next(g for g in n.groups() if g) if n else "?", line
        if line.startswith("gattlab: error"):
            return "error", "-", line
    return "?", "?", ""


def measure(f):
    rows = []
    units, first = devices(f)
    for opt, val in units:
        is_first = first is not None and (
            (opt == "--peer" and first.get("peer") == val)
            or (opt == "--connection" and not first.get("peer") and val in first.get("connections", [])))
        res = [verdict(run(["replay", "run", f, opt, val, "--target", "emu:recorded", "--timing", t])[1])
               for t in ("recorded", "fast")]
        rows.append([f, opt, val, "first" if is_first else "other", res[0][1], res[0][0], res[1][0], res[0][2], res[1][2]])
    return rows


files = sorted(f for f in os.listdir(D) if f != "MANIFEST.tsv" and not f.startswith("."))
with ThreadPoolExecutor(JOBS) as ex:
    rows = [r for rs in ex.map(measure, files) for r in rs]
with open(OUT, "w") as fh:
    fh.write("capture\tselector\tvalue\tdevice\tsteps\tdefault\tfast\tdefault_line\tfast_line\n")
    for r in rows:
        fh.write("\t".join(r) + "\n")
for kind in ("first", "other"):
    rs = [r for r in rows if r[3] == kind]
    clonable = [r for r in rs if r[5] != "error"]
    print(f"{kind}: {len(clonable)} clonable of {len(rs)} devices; equivalent: default {sum(r[5] == 'equivalent' for r in rs)}, "
          f"fast {sum(r[6] == 'equivalent' for r in rs)}")
