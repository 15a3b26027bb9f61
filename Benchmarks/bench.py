#!/usr/bin/env python3
"""GATTLab decoding speed against tshark, side by side, in one run (`make bench`).

Builds a btsnoop of N records (1,000,000, and 4,000,000 for memory) from the bundled captures
(every session of Captures/ in turn, timestamps rising 100 us apart, over and over: a test
rack's day of reconnecting devices of every protocol), then runs each job on it, best of 3,
beside tshark reading the same file in the same run, and prints seconds, records/s, the ratio
to tshark and peak RSS (the child's ru_maxrss from wait4: measured, not guessed).
`--source FILE` builds it from one capture instead (a real one from the field, say).

Aims (issue 20), as ratios to `tshark -r F -T fields -e frame.number -e btatt.opcode`: info
>= 100x; timeline and audit (JSON) >= 50x; decode --format json >= 30x; decode text >= 10x;
peak RSS < 64 MB at 1M and 4M records.

Field captures (--field-only; the full run includes it): the bundled captures are all btsnoop
that GATTLab's emulator made. The same jobs beside tshark on 1,000,000 records of each kind of
file the field brings, built by repeating a real capture of ../shared/captures/real (or
GATTLAB_REAL_CAPTURES; skipped in one line without them): an nRF Sniffer pcapng (sniffed link
layer, mostly advertising), an HCI pcap (DLT 201, a scanning host), a phone's btsnoop (GATT).

Issue 6: a full OTA session (Captures/emulated/speaker-ota-mtu247.btsnoop) replayed in fast mode
against the in-process emulator and against an emulator process over unix: (a fresh device per
session, device time 1000x and 10000x the wall clock), sessions per second.

Issue 4: `gattlab timeline` on a folder of many captures (the real captures and Captures/,
linked several times over): captures/s on one core (--jobs 1) and on all cores, the speed-up,
and tshark reading the same files for the link story (one process per file, serial and with
xargs -P on all cores) side by side.

Issue 7 (--fuzz-only): fuzzing speed. Executions per second of every in-process target in the
release build without sanitizers (aims: status >= 1M/s, scan >= 200k/s); fuzz-status and
fuzz-scan under libFuzzer with ASan (Scripts/libfuzzer.sh's build, each with its codec alone
instrumented; libFuzzer's own exec/s; aims: status >= 100k/s, scan >= 30k/s); and
ATT operations per second against an emulator process over unix: (Read Requests of the device
name, handle 0x0003, one at a time; aim >= 20k/s).
"""
import argparse
import json
import os
import re
import shutil
import socket
import struct
import tempfile
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUNDLED = "bundled"  # every capture of Captures/ (the default --source)
EPOCH = 0x00DCDDB30F2F8000


def read_btsnoop(path):
    """The header and (flags, payload) records of a btsnoop file."""
    data = open(path, "rb").read()
    if data[:8] != b"btsnoop\0":
        sys.exit(f"{path}: not a btsnoop file")
    records, offset = [], 16
    while offset + 24 <= len(data):
        _orig, incl, flags, _drops, _ts = struct.unpack(">IIIIq", data[offset:offset + 24])
        if offset + 24 + incl > len(data):
            break
        records.append((flags, data[offset + 24:offset + 24 + incl]))
        offset += 24 + incl
    return data[:16], records


def bundled_captures():
    """Every btsnoop of Captures/ (the demo and each emulator scenario), in name order."""
    found = []
    for d in (os.path.join(ROOT, "Captures"), os.path.join(ROOT, "Captures", "emulated")):
        found += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".btsnoop")]
    return found


def build_capture(source, path, count):
    """Repeats the source's records (the bundled captures' one after another) until `count`,
    timestamps rising 100 us apart. Kept when already built."""
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    sources = bundled_captures() if source == BUNDLED else [source]
    header, records = None, []
    for f in sources:
        h, r = read_btsnoop(f)
        if h[8:16] != b"\x00\x00\x00\x01\x00\x00\x03\xea":
            continue  # only HCI UART (H4) captures, so that one header fits all
        header = header or h
        records += r
    if not records:
        sys.exit(f"{source}: no records")
    ts = EPOCH + 1_700_000_000_000_000
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        written = 0
        while written < count:
            for flags, payload in records:
                if written == count:
                    break
                f.write(struct.pack(">IIIIq", len(payload), len(payload), flags, 0, ts))
                f.write(payload)
                ts += 100
                written += 1
    os.replace(tmp, path)


def measure(argv):
    """Wall time and peak RSS of one run, output discarded."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode(errors="replace")
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed ({code}): {err.strip()}")
    return elapsed, usage.ru_maxrss / 1024.0


def best_of(argv, runs):
    results = [measure(argv) for _ in range(runs)]
    return min(r[0] for r in results), max(r[1] for r in results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gattlab", default=os.path.join(ROOT, ".build", "release", "gattlab"))
    ap.add_argument("--source", default=BUNDLED, help="a btsnoop to repeat instead of the bundled captures")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--large", type=int, default=4_000_000, help="records of the large file (RSS check); 0 skips it")
    ap.add_argument("--runs", type=int, default=3, help="GATTLab runs per case (best time is kept)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench-out"))
    ap.add_argument("--timeline-only", action="store_true", help="only the timeline folder benchmark")
    ap.add_argument("--copies", type=int, default=4, help="times each capture appears in the timeline folder")
    ap.add_argument("--replay-only", action="store_true", help="only the replay sessions/s benchmark")
    ap.add_argument("--sessions", type=int, default=2000, help="sessions replayed in-process (a tenth of it over unix:)")
    ap.add_argument("--fuzz-only", action="store_true", help="only the fuzzing exec/s and emulator ATT op/s benchmark")
    ap.add_argument("--fuzz-seconds", type=float, default=3.0, help="about how long each fuzz measurement runs")
    ap.add_argument("--decode-only", action="store_true", help="only the jobs on the 1M/4M file beside tshark")
    ap.add_argument("--field-only", action="store_true", help="only the jobs on 1M records of each real capture format beside tshark")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    if args.fuzz_only:
        fuzz_speed(args)
        return
    if args.replay_only:
        replay_sessions(args)
        return
    if args.timeline_only:
        timeline_folder(args)
        return
    if args.field_only:
        field_captures(args)
        return
    tag = "bundled" if args.source == BUNDLED else os.path.splitext(os.path.basename(args.source))[0]
    small = os.path.join(args.out, f"bench-{tag}-{args.records}.btsnoop")
    print(f"building {small} ...", file=sys.stderr)
    build_capture(args.source, small, args.records)
    size_mb = os.path.getsize(small) / 1e6

    g = args.gattlab
    # (job, arguments before the file, aim as a ratio to tshark)
    jobs = [
        ("info", ["info"], 100),
        ("timeline --format json", ["timeline", "--format", "json"], 50),
        ("audit --format json", ["audit", "--format", "json"], 50),
        ("decode --format json", ["decode", "--format", "json"], 30),
        ("decode (text)", ["decode"], 10),
        # Not in issue 20's aims, but what a field engineer runs on the same day's capture: the
        # default timeline (text) and a shareable copy (redact, without its tshark check, which
        # is tshark's time twice).
        ("timeline (text)", ["timeline"], None),
        ("redact --no-tshark", ["redact", "--no-tshark", "--force", "-o", os.path.join(args.out, "redacted.btsnoop")], None),
    ]
    tshark = ["tshark", "-r", small, "-T", "fields", "-e", "frame.number", "-e", "btatt.opcode"]
    print("running tshark ...", file=sys.stderr)
    t_sec, t_rss = best_of(tshark, args.runs)
    rows = []
    for name, argv, aim in jobs:
        print(f"running gattlab {name} ...", file=sys.stderr)
        seconds, rss = best_of([g] + argv + [small], args.runs)
        rows.append({"job": "gattlab " + name, "records": args.records, "seconds": round(seconds, 3),
                     "records_per_s": round(args.records / seconds), "x_tshark": round(t_sec / seconds, 1),
                     "aim": aim, "peak_rss_mb": round(rss, 1)})
    rows.append({"job": " ".join(tshark[:1] + tshark[3:]).replace(small, "F"), "records": args.records, "seconds": round(t_sec, 3),
                 "records_per_s": round(args.records / t_sec), "x_tshark": 1.0, "aim": None, "peak_rss_mb": round(t_rss, 1)})
    large_rows = []
    if args.large:
        large = os.path.join(args.out, f"bench-{tag}-{args.large}.btsnoop")
        print(f"building {large} ...", file=sys.stderr)
        build_capture(args.source, large, args.large)
        for name, argv, _ in jobs:
            print(f"running gattlab {name} on {args.large:,} records ...", file=sys.stderr)
            seconds, rss = best_of([g] + argv + [large], 1)
            large_rows.append({"job": "gattlab " + name, "records": args.large, "seconds": round(seconds, 3),
                               "records_per_s": round(args.large / seconds), "peak_rss_mb": round(rss, 1)})

    source = "the bundled captures (Captures/)" if args.source == BUNDLED else os.path.basename(args.source)
    print(f"\n{args.records:,} records, {size_mb:.1f} MB, from {source}; {os.cpu_count()} cores; best of {args.runs}, "
          f"tshark included\n")
    print("| job | seconds | records/s | x tshark | aim | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        aim = f">= {r['aim']}x" + ("" if r["x_tshark"] >= r["aim"] else " (not met)") if r["aim"] else ""
        print(f"| {r['job']} | {r['seconds']} | {r['records_per_s']:,} | {r['x_tshark']} | {aim} | {r['peak_rss_mb']} |")
    if large_rows:
        print(f"\nPeak RSS from {args.records:,} to {args.large:,} records (aim < 64 MB, flat):\n")
        print(f"| job | RSS MB at {args.records // 1_000_000}M | RSS MB at {args.large // 1_000_000}M | records/s at {args.large // 1_000_000}M |")
        print("|---|---:|---:|---:|")
        for small_row, big in zip(rows, large_rows):
            # Flat: at most a tenth more at four times the records (allocator noise aside).
            small, large = small_row["peak_rss_mb"], big["peak_rss_mb"]
            flag = " (not met)" if max(small, large) >= 64 else "" if large <= small * 1.1 else " (under 64 MB, not flat)"
            print(f"| {big['job']} | {small_row['peak_rss_mb']} | {big['peak_rss_mb']}{flag} | {big['records_per_s']:,} |")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"records": rows, "large": large_rows}, f, indent=2)
    if args.decode_only:
        return
    field_captures(args)
    timeline_folder(args)
    replay_sessions(args)
    fuzz_speed(args)


# (real capture, what it stands for): one of each kind of file the field brings.
FIELD_CAPTURES = [
    ("TesiBLE__capture.pcapng", "nRF Sniffer pcapng (DLT 272): sniffed link layer, mostly advertising"),
    ("btpcaptest__bluetooth.pcap", "HCI pcap (DLT 201): a host scanning, LE advertising reports"),
    ("blefun__btsnoop_hci.log", "a phone's btsnoop (H4): GATT discovery, writes and notifications"),
]


def real_captures_folder():
    folder = os.environ.get("GATTLAB_REAL_CAPTURES") or os.path.join(ROOT, "..", "shared", "captures", "real")
    return folder if os.path.isfile(os.path.join(folder, "MANIFEST.tsv")) else None


def repeat_capture(source, path, count, gattlab):
    """`count` records (or just over) of a real capture, repeated: btsnoop with build_capture,
    pcap and pcapng with mergecap -a (Wireshark's, beside tshark). Kept when already built."""
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    if source.endswith((".log", ".btsnoop", ".cfa")):
        build_capture(source, path, count)
        return
    info = json.loads(subprocess.run([gattlab, "info", "--format", "json", source], capture_output=True, check=True).stdout)
    copies = -(-count // info["records"])
    tmp = path + ".tmp" + os.path.splitext(path)[1]
    subprocess.run(["mergecap", "-a", "-F", "pcapng" if source.endswith(".pcapng") else "pcap", "-w", tmp] + [source] * copies, check=True)
    os.replace(tmp, path)


def field_captures(args):
    """The decode jobs beside tshark on 1M records of each real capture format (FIELD_CAPTURES)."""
    folder = real_captures_folder()
    if folder is None:
        print("\nfield captures: skipped (no real captures: ../shared/captures/real or GATTLAB_REAL_CAPTURES)", file=sys.stderr)
        return
    if shutil.which("mergecap") is None:
        print("\nfield captures: skipped (mergecap, from Wireshark, is not installed)", file=sys.stderr)
        return
    g = args.gattlab
    jobs = [("info", ["info"]), ("decode (text)", ["decode"]), ("decode --format json", ["decode", "--format", "json"]),
            ("timeline --format json", ["timeline", "--format", "json"]), ("audit --format json", ["audit", "--format", "json"])]
    tables = []
    for name, what in FIELD_CAPTURES:
        source = os.path.join(folder, name)
        path = os.path.join(args.out, f"field-{args.records}-{name}")
        print(f"building {path} ...", file=sys.stderr)
        repeat_capture(source, path, args.records, g)
        records = json.loads(subprocess.run([g, "info", "--format", "json", path], capture_output=True, check=True).stdout)["records"]
        print(f"running tshark on {name} ...", file=sys.stderr)
        t_sec, t_rss = best_of(["tshark", "-r", path, "-T", "fields", "-e", "frame.number", "-e", "btatt.opcode"], args.runs)
        rows = []
        for job, argv in jobs:
            print(f"running gattlab {job} on {name} ...", file=sys.stderr)
            seconds, rss = best_of([g] + argv + [path], args.runs)
            rows.append((job, seconds, rss))
        tables.append((name, what, records, os.path.getsize(path) / 1e6, t_sec, t_rss, rows))
    print(f"\nField captures: {args.records:,} records of each, a real capture repeated; best of {args.runs}, tshark in the same run\n")
    print("| capture | job | seconds | records/s | x tshark | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|")
    for name, what, records, size, t_sec, t_rss, rows in tables:
        for job, seconds, rss in rows:
            print(f"| {name} | gattlab {job} | {seconds:.3f} | {round(records / seconds):,} | {t_sec / seconds:.1f} | {rss:.1f} |")
        print(f"| {name} | tshark -T fields | {t_sec:.3f} | {round(records / t_sec):,} | 1.0 | {t_rss:.1f} |")
    print()
    for name, what, records, size, *_ in tables:
        print(f"- {name}: {what}; {records:,} records, {size:.1f} MB")


def fuzz_speed(args):
    """Issue 7: exec/s in-process and under libFuzzer+ASan, and ATT op/s of the emulator over unix:."""
    targets = [line.split()[0] for line in subprocess.run([args.gattlab, "fuzz", "list"], capture_output=True,
                                                          text=True, check=True).stdout.splitlines() if line.strip()]
    targets = [t for t in targets if t != "device"]  # black-box: measured against an emulator below
    rows = []
    scratch = tempfile.mkdtemp(prefix="gattlab-bench-fuzz-")
    try:
        for t in targets:
            # A short calibration run, then one of about --fuzz-seconds.
            runs = 2000
            while True:
                corpus = os.path.join(scratch, t, str(runs))
                argv = [args.gattlab, "fuzz", t, "--runs", str(runs), "--format", "json", "--quiet", "--seed", "1",
                        "--corpus", corpus, "--findings", os.path.join(scratch, "findings")]
                seed = os.path.join(ROOT, "Corpus", t)
                if os.path.isdir(seed):
                    shutil.copytree(seed, corpus, dirs_exist_ok=True)
                out = subprocess.run(argv, capture_output=True, text=True)
                if out.returncode not in (0, 1):
                    sys.exit(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr[-500:]}")
                summary = json.loads(out.stdout)
                if summary["seconds"] >= args.fuzz_seconds / 3 or runs >= 50_000_000:
                    break
                runs = int(runs * max(2.0, args.fuzz_seconds / max(summary["seconds"], 1e-3)))
            print(f"fuzz {t}: {summary['execsPerSecond']:,.0f} exec/s", file=sys.stderr)
            rows.append((f"gattlab fuzz {t} (in-process, release)", summary["runs"], summary["seconds"],
                         summary["execsPerSecond"], len(summary["findings"])))
        for t in ("status", "scan"):
            print(f"libFuzzer fuzz-{t} (ASan) ...", file=sys.stderr)
            rate, runs, sec = libfuzzer_rate(args, t, scratch)
            if rate is not None:
                rows.append((f"fuzz-{t} under libFuzzer + ASan", runs, sec, rate, 0))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    aims = {"status": 1_000_000, "scan": 200_000}
    print("\n| fuzz target | runs | seconds | exec/s | aim |")
    print("|---|---:|---:|---:|---|")
    # Issue 20's aims under libFuzzer with ASan (the target's codec alone instrumented).
    libfuzzer_aims = {"status": 100_000, "scan": 30_000}
    for name, runs, sec, rate, _ in rows:
        if name.startswith("gattlab fuzz"):
            t = name.split()[2]
            goal = aims.get(t) if "in-process" in name else None
        else:
            goal = libfuzzer_aims.get(name.split()[0].removeprefix("fuzz-"))
        aim = f">= {goal:,}" + ("" if rate >= goal else " (not met)") if goal else ""
        print(f"| {name} | {runs:,} | {sec:.2f} | {rate:,.0f} | {aim} |")
    att = emulator_att_ops(args)
    print("\n| emulator over unix: | requests | seconds | ATT op/s | aim |")
    print("|---|---:|---:|---:|---|")
    print(f"| Read Request 0x0003 (device name), one at a time | {att[0]:,} | {att[1]:.2f} | {att[0] / att[1]:,.0f} | >= 20,000 |")
    bb = black_box_ops(args)
    print("\n| black-box campaign (gattlab fuzz device) | inputs | seconds | ATT op/s | aim |")
    print("|---|---:|---:|---:|---|")
    print(f"| against gattlab emulate speaker over unix: (seed 1) | {bb['runs']:,} | {bb['seconds']:.2f} | {bb['ops_per_s']:,.0f} | >= 20,000 |")
    with open(os.path.join(args.out, "fuzz-results.json"), "w") as f:
        json.dump({"targets": [{"case": r[0], "runs": r[1], "seconds": r[2], "execs_per_s": r[3]} for r in rows],
                   "emulator_att_ops_per_s": att[0] / att[1], "black_box": bb}, f, indent=2)


def black_box_ops(args):
    """Issue 18: ATT PDUs per second of a black-box campaign (discovery, flows, mutations, a link
    kept between inputs where it is as a fresh one, every answer awaited and checked) against an
    emulator process."""
    scratch = tempfile.mkdtemp(prefix="gattlab-bench-bb-")
    sock_path = os.path.join(scratch, "emu.sock")
    emulator = start_emulator(args, sock_path, "--speed", "1000")
    try:
        runs = max(10000, int(args.fuzz_seconds * 5000))
        argv = [args.gattlab, "fuzz", "device", "--target", f"unix:{sock_path}", "--speed", "1000", "--seed", "1", "--runs", str(runs),
                "--format", "json", "--quiet", "--findings", os.path.join(scratch, "findings")]
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode not in (0, 1):
            sys.exit(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr[-500:]}")
        summary = json.loads(out.stdout)
        return {"runs": summary["runs"], "seconds": summary["seconds"], "operations": summary["blackBox"]["operations"],
                "ops_per_s": summary["blackBox"]["operationsPerSecond"], "findings": len(summary["findings"])}
    finally:
        emulator.terminate()
        emulator.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def libfuzzer_rate(args, target, scratch):
    """Builds and runs fuzz-TARGET with libFuzzer and ASan; its last `exec/s:` figure."""
    env = dict(os.environ, GATTLAB=args.gattlab)
    out_dir = os.path.join(scratch, "libfuzzer-" + target)
    seconds = max(3, int(round(args.fuzz_seconds)))
    p = subprocess.run([os.path.join(ROOT, "Scripts", "libfuzzer.sh"), target, str(seconds), out_dir],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    text = p.stdout + p.stderr
    if p.returncode != 0:
        print(f"fuzz-{target} under libFuzzer failed ({p.returncode}):\n{text[-1500:]}", file=sys.stderr)
        return None, 0, 0
    rates = re.findall(r"exec/s: (\d+)", text)
    runs = re.findall(r"stat::number_of_executed_units: (\d+)", text)
    done = re.findall(r"Done (\d+) runs in (\d+) second", text)
    total = int(runs[-1]) if runs else (int(done[-1][0]) if done else 0)
    return (int(rates[-1]) if rates else None), total, float(done[-1][1]) if done else float(seconds)


def start_emulator(args, sock_path, *extra):
    """`gattlab emulate speaker --listen unix:SOCK_PATH`, once its socket exists (at most 5 s)."""
    emulator = subprocess.Popen([args.gattlab, "emulate", "speaker", "--listen", f"unix:{sock_path}", "--quiet", *extra],
                                stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.exists(sock_path):
            break
        time.sleep(0.01)
    return emulator


def emulator_att_ops(args):
    """Read Requests over AF_UNIX SOCK_SEQPACKET to `gattlab emulate speaker`, answer by answer."""
    sock_path = os.path.join(tempfile.mkdtemp(prefix="gattlab-bench-emu-"), "emu.sock")
    emulator = start_emulator(args, sock_path)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(sock_path)
        request = bytes([0x0A, 0x03, 0x00])
        s.send(request)
        answer = s.recv(1024)
        if not answer or answer[0] != 0x0B:
            sys.exit(f"emulator answered {answer.hex()} to a Read Request of 0x0003")
        n, start = 0, time.perf_counter()
        deadline = start + args.fuzz_seconds
        while True:
            for _ in range(256):
                s.send(request)
                if s.recv(1024)[:1] != b"\x0b":
                    sys.exit("emulator stopped answering Read Requests")
            n += 256
            now = time.perf_counter()
            if now >= deadline:
                break
        s.close()
        return n, now - start
    finally:
        emulator.terminate()
        emulator.wait()
        shutil.rmtree(os.path.dirname(sock_path), ignore_errors=True)


def replay_sessions(args):
    """Issue 6: sessions/s of a full OTA replay, in-process and through an emulator process."""
    capture = os.path.join(ROOT, "Captures", "emulated", "speaker-ota-mtu247.btsnoop")
    base = [args.gattlab, "replay", "run", capture, "--timing", "fast"]

    def sessions(argv, n, wall_clock=False):
        """Seconds for n sessions, and how many matched the recording. In-process (virtual
        time) every one must; over unix: the device's timers run on the wall clock sped up, so
        on a loaded machine a pause of a few ms is an ATT timeout of the device's seconds and a
        session may diverge: counted and said, not fatal, unless none matched."""
        start = time.perf_counter()
        out = subprocess.run(argv + ["--repeat", str(n)], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        summary = re.search(r"sessions in .*?: (\d+) equivalent", out.stdout + out.stderr)
        equivalent = int(summary.group(1)) if summary else (n if out.returncode == 0 else 0)
        if out.returncode != 0 and not (wall_clock and equivalent > 0):
            sys.exit(f"{' '.join(argv)} failed ({out.returncode}): {out.stdout[-500:]} {out.stderr[-500:]}")
        if equivalent < n:
            print(f"  {n - equivalent} of {n} sessions did not match the recording: at this device speed the machine's load "
                  f"delays answers past the device's timeouts (the rows over unix: need a quiet machine)", file=sys.stderr)
        return elapsed, equivalent

    rows = []
    n = args.sessions
    print(f"\nreplaying {os.path.basename(capture)} {n} times in-process ...", file=sys.stderr)
    rows.append(("in-process emulator (emu:speaker-ota), protocol progress", n, *sessions(base + ["--target", "emu:speaker-ota"], n), "virtual"))
    rows.append(("in-process emulator (emu:speaker-ota), --strict", n, *sessions(base + ["--target", "emu:speaker-ota", "--strict"], n), "virtual"))
    for speed in (1000, 10000):
        sock = os.path.join(args.out, f"replay-{speed}.sock")
        emulator = subprocess.Popen([args.gattlab, "emulate", "speaker-ota", "--listen", f"unix:{sock}", "--speed", str(speed),
                                     "--fresh-device", "--quiet"], stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(sock):
                    break
                time.sleep(0.02)
            m = max(10, n // 10)
            print(f"replaying it {m} times through unix: at {speed}x ...", file=sys.stderr)
            rows.append((f"emulator process over unix: ({speed}x device time)", m,
                         *sessions(base + ["--target", f"unix:{sock}", "--speed", str(speed)], m, wall_clock=True), f"{speed}x"))
        finally:
            emulator.terminate()
            emulator.wait()
    print("\n| replay of a full OTA session, fast | sessions | seconds | sessions/s | matched the recording | device time |")
    print("|---|---:|---:|---:|---:|---|")
    for name, count, sec, matched, clock in rows:
        print(f"| {name} | {count} | {sec:.2f} | {count / sec:,.1f} | {matched} | {clock} |")
    print("\n(over unix: the session takes 15 s of device time: at 1000x that alone is 15 ms per session)")
    with open(os.path.join(args.out, "replay-results.json"), "w") as f:
        json.dump([{"case": r[0], "sessions": r[1], "seconds": r[2], "sessions_per_s": r[1] / r[2], "matched": r[3]} for r in rows], f, indent=2)


def timeline_folder(args):
    """Issue 4: timelines of a folder of many captures, one core against all, beside tshark."""
    real = os.path.join(ROOT, "..", "shared", "captures", "real")
    sources = sorted(os.path.join(real, f) for f in os.listdir(real) if not f.endswith(".tsv"))
    for d, _, files in os.walk(os.path.join(ROOT, "Captures")):
        sources += sorted(os.path.join(d, f) for f in files if f.endswith(".btsnoop"))
    folder = os.path.join(args.out, "timeline-folder")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    links = []
    for copy in range(args.copies):
        for src in sources:
            base = os.path.basename(src)
            stem, ext = os.path.splitext(base)
            link = os.path.join(folder, f"{copy}-{stem}{ext if ext else '.log'}")
            os.symlink(os.path.abspath(src), link)
            links.append(link)
    n = len(links)
    total_mb = sum(os.path.getsize(s) for s in sources) * args.copies / 1e6
    cores = os.cpu_count() or 1
    print(f"\ntimeline on a folder of {n} captures ({len(sources)} distinct x {args.copies}, {total_mb:.1f} MB), {cores} cores",
          file=sys.stderr)
    one, rss1 = best_of([args.gattlab, "timeline", "--format", "json", "--jobs", "1", folder], args.runs)
    all_, rss = best_of([args.gattlab, "timeline", "--format", "json", folder], args.runs)
    fields = ["-T", "fields", "-e", "bthci_evt.code", "-e", "bthci_evt.reason", "-e", "btatt.server_rx_mtu",
              "-e", "btle.control_opcode"]
    distinct = links[:len(sources)]  # tshark reads one copy; its rate is per capture
    t_serial, _ = best_of(["sh", "-c", " ".join(["tshark -r '%s' %s >/dev/null 2>&1;" % (f, " ".join(fields)) for f in distinct])], 1)
    t_par, _ = best_of(["sh", "-c", "printf '%s\\0' " + " ".join("'%s'" % f for f in distinct)
                        + f" | xargs -0 -P {cores} -I{{}} sh -c \"tshark -r '{{}}' {' '.join(fields)} >/dev/null 2>&1\""], 1)
    rows = [("gattlab timeline --jobs 1", n, one, rss1), (f"gattlab timeline (all {cores} cores)", n, all_, rss),
            ("tshark link-story fields, one file at a time", len(distinct), t_serial, None),
            (f"tshark link-story fields, xargs -P {cores}", len(distinct), t_par, None)]
    print("\n| case | captures | seconds | captures/s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, count, sec, r in rows:
        print(f"| {name} | {count} | {sec:.2f} | {count / sec:,.0f} | {'' if r is None else round(r, 1)} |")
    print(f"\ntimeline speed-up over one core: {one / all_:.2f}x on {cores} cores; "
          f"{(n / all_) / (len(distinct) / t_par):.0f}x tshark's captures/s (both on all cores)")
    with open(os.path.join(args.out, "timeline-results.json"), "w") as f:
        json.dump({"captures": n, "cores": cores, "one_core_s": one, "all_cores_s": all_, "speedup": one / all_,
                   "tshark_serial_s": t_serial, "tshark_parallel_s": t_par, "tshark_captures": len(distinct)}, f, indent=2)


if __name__ == "__main__":
    main()
