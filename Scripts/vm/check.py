#!/usr/bin/env python3
"""Host-side checks of a VM harness run (Scripts/vm/vm-test.sh): prints one PASS or FAIL line per
check with its figures (details indented below it); the exit status is the number of failed
checks. What the guest did is in OUT/guest-status (key=value lines, see guest.sh)."""
import argparse, json, os, re, struct, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--gattlab", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--expected", required=True, help="folder of the recorded sessions' NAME.timeline.json")
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


def detail(msg):
    print("    " + msg)


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
    except Exception:  # noqa: BLE001
        return None


def last_line(path):
    try:
        lines = open(path).read().strip().splitlines()
        return lines[-1] if lines else "no output"
    except OSError:
        return "no output"


status = {}
sessions, fuzz, fuzz_uptime = [], {}, []
for line in open(os.path.join(out, "guest-status")):
    key, _, value = line.rstrip("\n").partition("=")
    if key == "session":
        name, rc, t0, t1 = value.split()
        sessions.append({"name": name, "rc": rc, "start": float(t0), "end": float(t1)})
    elif key == "fuzz":
        name, rc, t0, t1 = value.split()
        fuzz[name] = {"rc": rc, "start": float(t0), "end": float(t1)}
    elif key == "fuzz_uptime":
        name, u0, u1 = value.split()
        fuzz_uptime.append((name, float(u0), float(u1)))
    else:
        status[key] = value
central_index = int(status.get("central", "hci0")[3:])

# 0. The guest kernel stayed healthy: any oops fails the run. One exception, a kernel bug the
# fuzzing finds: during the black-box campaigns (a new LE link every few hundred ms, each ended
# with HCI Disconnect) Linux 6.1 oopses in its own channel bookkeeping ("list_del corruption" in
# hci_chan_del from l2cap_sock_release); on 6.1 those are reported with their count (NOTE)
# rather than failing the run. vm-test boots 6.12 where apt has it, which does not oops.
try:
    console = open(os.path.join(out, "console.log"), errors="replace").read().replace("\r", "")
except OSError:
    console = ""
pattern = r"kernel BUG|Oops|general protection fault|list_del corruption|WARNING: CPU|BUG: KASAN"
reports = []
for line in console.splitlines():
    m = re.match(r"\[\s*(\d+\.\d+)\]\s*(.*)", line)
    if m and re.search(pattern, m.group(2)):
        t = float(m.group(1))
        during = next((n for n, u0, u1 in fuzz_uptime if u0 <= t <= u1 + 2), None)
        reports.append((t, during, m.group(2)))
known_bug = status.get("kernel", "").startswith("6.1.")
outside = [r for r in reports if r[1] is None or not known_bug]
inside = [r for r in reports if r[1] is not None and known_bug]
if outside:
    bad(f"the guest kernel ({status.get('kernel', '?')}) reported {len(outside)} oops/BUG line(s); first at {outside[0][0]:.1f} s: "
        f"{outside[0][2][:120]} (console.log)")
else:
    ok(f"the guest kernel ({status.get('kernel', '?')}) reported no oops, BUG or warning"
       + (" while gattlab replayed, captured and benchmarked" if known_bug else ""))
if inside:
    campaigns = sorted({r[1] for r in inside})
    print(f"NOTE: the kernel reported {len(inside)} oops/BUG line(s) during the fuzz campaigns ({', '.join(campaigns)}); "
          f"first: {inside[0][2][:100]} (Linux {status.get('kernel', '')} Bluetooth bug under rapid LE connect/disconnect; console.log)")

# 1. Every recorded session replayed over the kernel link is equivalent.
equivalent, figures = 0, []
for s in sessions:
    rep = load(os.path.join(out, f"replay-{s['name']}.json"))
    seconds = s["end"] - s["start"]
    if rep is None:
        log = os.path.join(out, "replay-" + s["name"] + ".log")
        bad(f"replay of {s['name']}: no report (exit status {s['rc']}): {last_line(log)}")
        continue
    steps = rep.get("steps", [])
    line = f"{s['name']}: {len(steps)} steps, {rep.get('verdict')}, {seconds:.1f} s"
    if rep.get("verdict") == "equivalent" and s["rc"] == "0":
        equivalent += 1
        figures.append(line)
    else:
        bad(f"replay of {s['name']} over the kernel LE link: {rep.get('verdict')} (exit status {s['rc']}), {len(steps)} steps, {seconds:.1f} s")
        for st in steps:
            if st.get("status") != "ok":
                detail(f"step {st.get('step')} {st.get('action')} {st.get('name') or ''}: {st.get('status')}; "
                       + "; ".join(st.get("differences", []) + st.get("observed", [])))
if sessions and equivalent == len(sessions):
    total = sum(s["end"] - s["start"] for s in sessions)
    ok(f"{equivalent} of {len(sessions)} recorded sessions replayed equivalent over the kernel LE link "
       f"({total:.1f} s of replays, target {status.get('central', '?')} -> emulated peripheral on {status.get('peripheral', '?')})")
    for f in figures:
        detail(f)
elif not sessions:
    bad("no session was replayed (guest-status has no session= lines)")

# 2. tshark reads every capture; 3. they agree on the ATT layer record for record.
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

    # Record for record on each controller: the kernel hands a controller's packets to every
    # monitor socket in one order (one ordered workqueue per controller), but two controllers'
    # packets, handled on two CPUs at once, can reach two sockets interleaved differently.
    def per_adapter(lines):
        streams = {}
        for line in lines:
            streams.setdefault(line.split("\t")[0], []).append(line)
        return streams

    b = per_adapter(att["btmon"])
    for other in ["tcpdump", "gattlab capture"]:
        t = per_adapter(att[other])
        agree, problems = 0, []
        for adapter in sorted(set(b) | set(t)):
            x, y = b.get(adapter, []), t.get(adapter, [])
            same = sum(1 for p, q in zip(x, y) if p == q)
            agree += same
            if x != y:
                first = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
                problems.append(f"controller {adapter}: {len(x)} vs {len(y)} ATT PDUs, {same} identical, first difference at its "
                                f"ATT PDU {first + 1}: {x[first] if first < len(x) else '-'} | {y[first] if first < len(y) else '-'}")
        n = len(att["btmon"])
        if not problems and n:
            ok(f"btmon and {other} agree on the ATT layer record for record on each controller: {agree} of {n} ATT PDUs identical "
               f"(adapter, monitor opcode, ATT opcode, handle, value); all records: {totals['btmon']} vs {totals[other]}")
        else:
            bad(f"btmon and {other} differ on the ATT layer: {n} vs {len(att[other])} ATT PDUs")
            for p in problems:
                detail(p)
    # Both controllers are in the capture: each PDU once sent (monitor opcode 4, ACL TX) and once received (5).
    tx = sum(1 for line in att["btmon"] if line.split("\t")[1:2] == ["4"])
    rx = sum(1 for line in att["btmon"] if line.split("\t")[1:2] == ["5"])
    detail(f"ATT PDUs in the btmon capture: {tx} sent, {rx} received (two controllers: each PDU appears once each way)")

# 3a. gattlab capture --via btmon --index C into a ring of files, during the replays: several files,
# each within its size and readable by tshark, together a stretch of btmon's own capture of that
# controller, record for record (HCI commands, events and ACL data; an ATT PDU fragmented across
# two files is whole in neither, so the comparison is of records); and its live timeline saw the
# sessions.
def monitor_records(path, index):
    """(opcode, payload) of the records of controller `index` in a btsnoop monitor file (2001),
    commands, events and ACL data only (opcodes 2 to 5)."""
    data = open(path, "rb").read()
    records, pos = [], 16
    while pos + 24 <= len(data):
        _, incl, flags, _, _ = struct.unpack(">IIIIq", data[pos:pos + 24])
        if flags >> 16 == index and 2 <= flags & 0xFFFF <= 5:
            records.append((flags & 0xFFFF, data[pos + 24:pos + 24 + incl]))
        pos += 24 + incl
    return records


ring = sorted((f for f in os.listdir(out) if re.fullmatch(r"ring\.btsnoop\.\d+", f)), key=lambda f: int(f.rsplit(".", 1)[1]))
if not ring:
    bad(f"gattlab capture --via btmon wrote no ring files (exit {status.get('ring_rc')}): {last_line(os.path.join(out, 'ring.log'))}")
elif os.path.exists(caps["btmon"]):
    pieces, sizes, unreadable, att_pdus = [], [], [], 0
    for f in ring:
        path = os.path.join(out, f)
        sizes.append(os.path.getsize(path))
        rc, so, se = run(["tshark", "-r", path, "-Y", "btatt", "-T", "fields", "-e", "frame.number"])
        if rc != 0:
            unreadable.append(f)
        att_pdus += len(so.splitlines())
        pieces += monitor_records(path, central_index)
    mine = monitor_records(caps["btmon"], central_index)
    first = pieces[0] if pieces else None
    start = next((i for i, r in enumerate(mine) if r == first and mine[i:i + len(pieces)] == pieces), None)
    live = open(os.path.join(out, "ring-live.txt"), errors="replace").read() if os.path.exists(os.path.join(out, "ring-live.txt")) else ""
    successes, scans = live.count("SUCCESS"), live.count("networks")
    over = [f for f, n in zip(ring, sizes) if n > 20_000]
    if unreadable or over or start is None or len(ring) < 2 or status.get("ring_rc") != "0" or not successes or not scans:
        bad(f"gattlab capture --via btmon --index {central_index} --max-size 20k (exit {status.get('ring_rc')}): {len(ring)} files, "
            f"{len(unreadable)} unreadable by tshark, {len(over)} over 20 kB, {len(pieces)} records "
            + ("found in" if start is not None else "NOT a stretch of") + f" btmon's controller {central_index}; live timeline: "
            f"{successes} SUCCESS, {scans} scan results")
    else:
        ok(f"gattlab capture --via btmon --index {central_index} --max-size 20k during the replays: {len(ring)} ring files "
           f"({min(sizes)}-{max(sizes)} bytes, tshark reads each: {att_pdus} ATT PDUs), their {len(pieces)} HCI records the same, "
           f"in order, as btmon's of controller {central_index} from its record {start + 1}; the live timeline printed "
           f"{successes} OTA SUCCESS and {scans} scan-result lines")

# 3b. gattlab's own decoder agrees with tshark on every ATT PDU of its live capture: the same
# frames, on the same controller, with the same opcode (fuzz inputs included).
cap = caps["gattlab capture"]
if os.path.exists(cap):
    rc, so, se = run(["tshark", "-r", cap, "-Y", "btatt", "-T", "fields", "-e", "frame.number", "-e", "hci_mon.adapter_id",
                      "-e", "btatt.opcode"])
    rc2, so2, se2 = run([a.gattlab, "decode", "--format", "json", cap], timeout=300)
    if rc != 0 or rc2 not in (0, 1):
        bad(f"tshark (exit {rc}) or gattlab decode (exit {rc2}) could not read {cap}: {(se or se2).strip().splitlines()[-1:]}")
    else:
        theirs = {}
        for line in so.splitlines():
            frame, adapter, opcode = (line.split("\t") + ["", "", ""])[:3]
            theirs[int(frame)] = (int(adapter or -1), int(opcode.split(",")[0], 16) if opcode else -1)
        ours = {}
        for line in so2.splitlines():
            d = json.loads(line)
            if d.get("type") == "att":
                ours[d["frame"]] = (d.get("controller", -1), d.get("opcode", -1))
        same = sum(1 for f, v in ours.items() if theirs.get(f) == v)
        if ours and same == len(ours) == len(theirs):
            ok(f"gattlab decode and tshark agree on every ATT PDU of gattlab capture's file: {same} of {len(theirs)} "
               "(frame, controller, opcode)")
        else:
            only_t = sorted(set(theirs) - set(ours))[:3]
            only_o = sorted(set(ours) - set(theirs))[:3]
            differ = [f for f in sorted(set(ours) & set(theirs)) if ours[f] != theirs[f]][:3]
            bad(f"gattlab decode and tshark disagree on gattlab capture's ATT PDUs: {len(ours)} vs {len(theirs)}, {same} the same; "
                f"only tshark: frames {only_t}; only gattlab: frames {only_o}; different: "
                + ", ".join(f"frame {f} {ours[f]} vs {theirs[f]}" for f in differ))

# 4. The live captures, cut into the replayed sessions (the central's side, the session's time),
# decode to the timelines the recordings have: same outcome, protocols, phases, findings and
# protocol events, by meaning (RSSI, progress and times vary with the run).
BTSNOOP_EPOCH = 0x00DCDDB30F2F8000  # btsnoop timestamps count microseconds from year 0
VOLATILE = {"rssi", "progress", "downloadedKB"}


def cut(path, windows, prefix):
    """Writes one btsnoop file per (name, start, end) window of `path` (a btsnoop file); returns
    {name: (path, records)}."""
    data = open(path, "rb").read()
    header, pos = data[:16], 16
    files = {name: [header, 0] for name, _, _ in windows}
    while pos + 24 <= len(data):
        _, incl, _, _, ts = struct.unpack(">IIIIq", data[pos:pos + 24])
        record = data[pos:pos + 24 + incl]
        pos += 24 + incl
        t = (ts - BTSNOOP_EPOCH) / 1e6
        for name, start, end in windows:
            if start - 0.2 <= t <= end + 0.5:
                files[name][0] += record
                files[name][1] += 1
    result = {}
    for name, (content, count) in files.items():
        p = f"{prefix}-{name}.btsnoop"
        with open(p, "wb") as f:
            f.write(content)
        result[name] = (p, count)
    return result


def meaning(timeline):
    devices = [(d.get("outcome"), tuple(sorted(d.get("protocols", [])))) for d in timeline.get("devices", [])]
    # Phases as a set: two that start together (SUCCESS and REBOOT in one notification burst) sort
    # either way; their order is in the protocol events.
    phases = sorted(p.get("name") for p in timeline.get("phases", []))
    findings = sorted({f.get("id") for f in timeline.get("findings", [])})
    events = []
    for e in timeline.get("events", []):
        if e.get("lane") == "link":
            continue
        key = (e.get("kind"), json.dumps({k: v for k, v in e.get("fields", {}).items() if k not in VOLATILE}, sort_keys=True))
        if not events or events[-1] != key:  # DOWNLOADING 10 %, 20 %, ... is one step
            events.append(key)
    return {"devices": devices, "connections": len(timeline.get("connections", [])), "phases": phases,
            "findings": findings, "events": events}


windows = [(s["name"], s["start"], s["end"]) for s in sessions]
for name in ["btmon", "gattlab capture"]:
    cap = caps[name]
    if not os.path.exists(cap) or not windows:
        continue
    tag = name.replace(" ", "-")
    central = os.path.join(out, f"central-{tag}.btsnoop")
    rc, so, se = run([a.gattlab, "convert", "--to", "btsnoop", "--index", str(central_index), "--force", cap, central])
    if rc != 0:
        bad(f"gattlab convert --index {central_index} of {name}'s file failed (exit {rc}): {(se.strip().splitlines() or ['-'])[-1]}")
        continue
    os.makedirs(os.path.join(out, "sessions"), exist_ok=True)
    pieces = cut(central, windows, os.path.join(out, "sessions", tag))
    same, lines = 0, []
    for s in sessions:
        piece, records = pieces[s["name"]]
        expected = load(os.path.join(a.expected, s["name"] + ".timeline.json"))
        rc, so, se = run([a.gattlab, "timeline", "--format", "json", "--pretty", piece])
        live = json.loads(so) if rc in (0, 1) and so.strip().startswith("{") else None
        if live is not None:
            with open(piece.replace(".btsnoop", ".timeline.json"), "w") as f:
                f.write(so)
        if expected is None or live is None:
            lines.append(f"{s['name']}: no timeline (expected {'found' if expected else 'missing'}, live exit {rc}: "
                         f"{(se.strip().splitlines() or ['-'])[-1]})")
            continue
        m_live, m_exp = meaning(live), meaning(expected)
        if m_live == m_exp:
            same += 1
            dev = m_live["devices"][0] if m_live["devices"] else ("-", ())
            lines.append(f"{s['name']}: {records} records, {m_live['connections']} connection(s), {dev[0]} "
                         f"({', '.join(dev[1])}), {len(m_live['events'])} protocol events, phases {'/'.join(m_live['phases']) or '-'}"
                         + (f", findings {', '.join(m_live['findings'])}" if m_live["findings"] else ""))
        else:
            diffs = [k for k in m_live if m_live[k] != m_exp[k]]
            lines.append(f"{s['name']}: DIFFERS in {', '.join(diffs)}")
            for k in diffs:
                if k == "events":
                    i = next((i for i, (x, y) in enumerate(zip(m_live[k], m_exp[k])) if x != y), min(len(m_live[k]), len(m_exp[k])))
                    lines.append(f"  events: {len(m_live[k])} live vs {len(m_exp[k])} expected; first difference at {i + 1}: "
                                 f"{m_live[k][i] if i < len(m_live[k]) else '-'} | {m_exp[k][i] if i < len(m_exp[k]) else '-'}")
                else:
                    lines.append(f"  {k}: live {m_live[k]} | expected {m_exp[k]}")
    msg = (f"{name}'s live capture, cut into the {len(sessions)} replayed sessions (central {status.get('central')}), "
           f"decodes to the recorded timelines: {same} of {len(sessions)} the same by meaning")
    (ok if same == len(sessions) else bad)(msg)
    for line in lines:
        detail(line)

# 5. Black-box fuzzing through the kernel stack: nothing found in the healthy devices, the
# planted bug found in each device that has one (NAME-healthy, NAME-QUIRK; see guest.sh).
def emulator_log(name):
    try:
        return open(os.path.join(out, f"emulate-fuzz-{name}.log")).read().splitlines()
    except OSError:
        return []


if not fuzz:
    bad("no black-box fuzz campaign ran (guest-status has no fuzz= lines)")
for name, f in fuzz.items():
    s = load(os.path.join(out, f"fuzz-{name}.json"))
    device, _, quirk = name.partition("-")
    log = emulator_log(name)
    clients = sum(1 for l in log if l.startswith("client "))
    crashes = [l for l in log if "firmware crash" in l]
    if s is None:
        bad(f"black-box fuzzing of the {device} ({quirk}): no summary (exit {f['rc']}): {last_line(os.path.join(out, f'fuzz-{name}.log'))}")
        continue
    found = s.get("findings", [])
    links = f"{clients} LE links for {s.get('runs')} inputs"
    if quirk == "healthy":
        if f["rc"] == "0" and not found:
            ok(f"black-box fuzzing over the kernel link finds nothing in the healthy {device}: {s.get('runs')} inputs from seed 1 "
               f"in {s.get('seconds', 0):.1f} s ({s.get('execsPerSecond', 0):.1f} inputs/s; the emulator saw {links})")
        else:
            bad(f"black-box fuzzing of the healthy {device} reported {len(found)} finding(s) (exit {f['rc']}): "
                + "; ".join(f"{x.get('kind')}: {x.get('detail')}" for x in found))
        continue
    # The minimized reproducer, and the exchange that found it as a capture Wireshark opens.
    kept = [x for x in found
            if all(os.path.exists(os.path.join(out, f"fuzz-{name}", os.path.basename(x.get("file", "")) + ext)) for ext in ["", ".btsnoop"])]
    if f["rc"] == "1" and found and kept:
        x = found[0]
        ok(f"black-box fuzzing through the kernel stack finds the {device}'s planted bug ({quirk}): {x.get('kind')} after "
           f"{x.get('afterRuns')} inputs ({s.get('seconds', 0):.1f} s with minimizing; the emulator saw {links}"
           + (f", {len(crashes)} firmware crashes" if crashes else "") + f"), reproducer {x.get('inputLength')} bytes")
        detail(x.get("detail", ""))
        if crashes:
            detail(f"emulator: {crashes[0][:160]}")
        detail(f"reproducer and its exchange: {os.path.join(out, f'fuzz-{name}', os.path.basename(x.get('file', '')))}[.btsnoop]")
    else:
        bad(f"black-box fuzzing did not find the {device}'s planted bug {quirk} (exit {f['rc']}, {len(found)} findings, "
            f"{len(kept)} with their files, {len(crashes)} firmware crashes logged, {s.get('runs')} runs)")

# 6. Write round trips between the two controllers.
bench = load(os.path.join(out, "bench.json"))
if a.bench_writes and bench is not None:
    subs = [s for s in bench.get("steps", []) if s.get("action") == "subscribe"]
    times = [s["observedAt"] for s in subs if s.get("status") == "ok" and s.get("observedAt") is not None]
    if len(times) >= 2 and times[-1] > times[0]:
        per = (times[-1] - times[0]) / (len(times) - 1)
        ok(f"write round trips: {len(times)} Write Requests answered, {1e6 / per:.1f} round trips/s "
           f"({per / 1000:.2f} ms each) between the two controllers (bench exit {status.get('bench_rc')})")
    else:
        bad(f"write round-trip benchmark: {len(times)} of {len(subs)} writes answered (verdict {bench.get('verdict')}, exit {status.get('bench_rc')})")
elif a.bench_writes:
    bad(f"write round-trip benchmark: no report (exit status {status.get('bench_rc') or 'not run'})")

sys.exit(min(fails, 100))
