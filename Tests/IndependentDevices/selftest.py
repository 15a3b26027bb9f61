#!/usr/bin/env python3
"""Self-test of the independent devices over their unix: sockets.

For every device: ATT conformance checks, a healthy session with every planted bug
turned on (no fault may happen), and each planted bug's trigger, once with the bug
on (the crash, hang or defect must happen and be logged) and once with it off (the
device must answer as a careful firmware does). Also: reboot timing (connections
refused while booting), state loss on a crash, and throughput.

  python3 Tests/IndependentDevices/selftest.py            # everything
  python3 Tests/IndependentDevices/selftest.py speaker -v # one device, verbose
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from nrf7 import Msg, decode, get_bytes, get_int, get_msg  # noqa: E402  (codec only)

VERBOSE = "-v" in sys.argv

OTA = "0000000%d-1234-5678-9abc-def012345678"
SCAN = "12345678-9abc-def0-1234-000000000008"
NRF = "14387%03x-130c-49e7-b877-2881c89cb258"
PRESET = "7d2e0004-5c1a-4a8f-b3e6-9d40c0ffee01"
PASSWORD = b"Tr0ub4dor&3"


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    if VERBOSE:
        print("      ok: " + what)


# ---------------------------------------------------------------------------
# a small ATT client


class Closed(Exception):
    """The device ended the link."""


class NoAnswer(Exception):
    pass


def uuid_wire(text):
    h = text.replace("-", "")
    return bytes.fromhex(h)[::-1]


def uuid_from_wire(w):
    if len(w) == 2:
        v = struct.unpack("<H", w)[0]
        return "%08x-0000-1000-8000-00805f9b34fb" % v
    h = w[::-1].hex()
    return "%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:])


class Client:
    def __init__(self, path, timeout=1.0):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.mtu = 23
        self.notes = []          # (opcode, handle, value) of notifications and indications
        self.max_pdu = 0         # the longest PDU received
        self.chars = {}          # uuid -> dict(decl, value, props, cccd)

    def close(self):
        self.s.close()

    def send(self, pdu):
        self.s.send(pdu)

    def _recv(self, timeout):
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(4096)
        except socket.timeout:
            raise NoAnswer()
        except ConnectionResetError:
            raise Closed()
        if not d:
            raise Closed()
        self.max_pdu = max(self.max_pdu, len(d))
        return d

    def pump(self, seconds):
        """Collect notifications for a while (or until the link ends)."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                d = self._recv(left)
            except NoAnswer:
                return
            self._note(d)

    def _note(self, d):
        if d[0] in (0x1B, 0x1D):
            self.notes.append((d[0], struct.unpack_from("<H", d, 1)[0], d[3:]))
            if d[0] == 0x1D:
                self.send(b"\x1e")
            return True
        return False

    def request(self, pdu, timeout=1.0):
        self.send(pdu)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise NoAnswer()
            d = self._recv(left)
            if not self._note(d):
                return d

    def wait_note(self, handle, pred=lambda v: True, timeout=2.0):
        end = time.monotonic() + timeout
        while True:
            for i, (op, h, v) in enumerate(self.notes):
                if h == handle and pred(v):
                    del self.notes[:i + 1]
                    return v
            left = end - time.monotonic()
            if left <= 0:
                raise NoAnswer()
            try:
                d = self._recv(left)
            except NoAnswer:
                continue
            self._note(d)

    # GATT
    def exchange_mtu(self, mtu):
        r = self.request(struct.pack("<BH", 0x02, mtu))
        assert r[0] == 0x03, r.hex()
        self.mtu = max(23, min(mtu, struct.unpack_from("<H", r, 1)[0]))
        return struct.unpack_from("<H", r, 1)[0]

    def discover(self):
        services = []
        start = 1
        while start <= 0xFFFF:
            r = self.request(struct.pack("<BHHH", 0x10, start, 0xFFFF, 0x2800))
            if r[0] == 0x01:
                break
            ln = r[1]
            for i in range(2, len(r), ln):
                s, e = struct.unpack_from("<HH", r, i)
                services.append((s, e, r[i + 4:i + ln]))
                last = e
            start = last + 1
        for s, e, _ in services:
            h = s
            decls = []
            while h <= e:
                r = self.request(struct.pack("<BHHH", 0x08, h, e, 0x2803))
                if r[0] == 0x01:
                    break
                ln = r[1]
                for i in range(2, len(r), ln):
                    dh = struct.unpack_from("<H", r, i)[0]
                    props, vh = struct.unpack_from("<BH", r, i + 2)
                    decls.append((dh, props, vh, uuid_from_wire(r[i + 5:i + ln])))
                    h = dh + 1
            for k, (dh, props, vh, u) in enumerate(decls):
                end = decls[k + 1][0] - 1 if k + 1 < len(decls) else e
                info = {"decl": dh, "props": props, "value": vh, "cccd": None}
                if vh < end:
                    r = self.request(struct.pack("<BHH", 0x04, vh + 1, end))
                    if r[0] == 0x05:
                        step = 4 if r[1] == 1 else 18
                        for i in range(2, len(r), step):
                            dh2 = struct.unpack_from("<H", r, i)[0]
                            if r[1] == 1 and struct.unpack_from("<H", r, i + 2)[0] == 0x2902:
                                info["cccd"] = dh2
                self.chars[u] = info
        self.services = services
        return self.chars

    def h(self, uuid):
        return self.chars[uuid.lower()]["value"]

    def cccd(self, uuid):
        return self.chars[uuid.lower()]["cccd"]

    def write(self, handle, value, timeout=1.0):
        return self.request(struct.pack("<BH", 0x12, handle) + value, timeout)

    def write_long(self, handle, value):
        off = 0
        chunk = self.mtu - 5
        while off < len(value) or off == 0:
            part = value[off:off + chunk]
            r = self.request(struct.pack("<BHH", 0x16, handle, off) + part)
            if r[0] != 0x17:
                return r
            off += len(part)
            if not part:
                break
        return self.request(b"\x18\x01")

    def write_any(self, handle, value):
        if len(value) <= self.mtu - 3:
            return self.write(handle, value)
        return self.write_long(handle, value)

    def read(self, handle):
        return self.request(struct.pack("<BH", 0x0A, handle))

    def subscribe(self, uuid, value=1):
        return self.write(self.cccd(uuid), struct.pack("<H", value))


def is_error(r, code=None, req=None):
    return r[0] == 0x01 and (code is None or r[4] == code) and (req is None or r[1] == req)


# ---------------------------------------------------------------------------
# device processes


class DeviceProc:
    def __init__(self, device, bugs=(), extra=()):
        self.dir = tempfile.mkdtemp(prefix="indie-")
        self.path = os.path.join(self.dir, device + ".sock")
        self.log = os.path.join(self.dir, "stderr.log")
        args = [sys.executable, os.path.join(HERE, "device.py"), device, "--listen", self.path]
        for b in bugs:
            args += ["--bug", b]
        args += list(extra)
        self.err = open(self.log, "w")
        self.p = subprocess.Popen(args, stderr=self.err, stdout=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.path):
                break
            time.sleep(0.01)
        else:
            raise Fail("device did not start")

    def connect(self, retry=2.0, timeout=1.0):
        end = time.monotonic() + retry
        while True:
            try:
                return Client(self.path, timeout)
            except (ConnectionRefusedError, FileNotFoundError):
                if time.monotonic() > end:
                    raise
                time.sleep(0.01)

    def stderr(self):
        self.err.flush()
        with open(self.log) as f:
            return f.read()

    def faults(self):
        return [l for l in self.stderr().splitlines() if "CRASH bug=" in l or "HANG bug=" in l]

    def stop(self):
        self.p.terminate()
        self.p.wait(5)
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def expect_crash(dev, cli, action, bug):
    """action() must make the device drop the link; stderr must name the bug."""
    try:
        r = action()
        cli.pump(0.3)
    except Closed:
        r = None
    else:
        raise Fail("expected a crash (%s), the link stayed up; last answer %s" % (
            bug, r.hex() if isinstance(r, bytes) else r))
    time.sleep(0.02)
    check(any("CRASH bug=%s" % bug in l for l in dev.faults()), "stderr logs CRASH bug=%s" % bug)
    # booting: connections are refused for about 50 ms, then accepted again
    try:
        Client(dev.path).close()
        refused = False
    except ConnectionRefusedError:
        refused = True
    check(refused, "connections refused right after the crash (booting)")
    c = dev.connect()
    c.close()
    check(True, "accepts connections again after the boot")


def expect_hang(dev, cli, action, bug):
    try:
        action()
    except NoAnswer:
        pass
    else:
        raise Fail("expected a hang (%s), got an answer" % bug)
    try:
        r = cli.request(struct.pack("<BH", 0x0A, 1), timeout=0.3)
        raise Fail("a hung device answered %s" % r.hex())
    except NoAnswer:
        pass
    check(any("HANG bug=%s" % bug in l for l in dev.faults()), "stderr logs HANG bug=%s" % bug)
    other = dev.connect()
    try:
        r = other.read(1)
        raise Fail("a second link to a hung device was answered: %s" % r.hex())
    except NoAnswer:
        check(True, "a second link gets no answer either")
    other.close()
    cli.close()
    time.sleep(0.1)
    c = dev.connect()
    r = c.read(1)
    check(r[0] == 0x0B, "answers again after the client left and the device rebooted")
    c.close()


def no_faults(dev, what):
    check(dev.faults() == [], "no fault logged (%s)" % what)


# ---------------------------------------------------------------------------
# generic ATT conformance


def att_conformance(dev, name):
    c = dev.connect()
    srv = c.exchange_mtu(517)
    check(srv != 517 and 23 <= srv < 517, "%s: server Rx MTU %d (not 517)" % (name, srv))
    r = c.request(struct.pack("<BH", 0x02, 100))
    check(is_error(r, 0x06, 0x02), "second Exchange MTU refused (Request Not Supported)")
    c.discover()
    r = c.request(b"\x3f\x01\x00")
    check(is_error(r, 0x06, 0x3f), "unknown request -> Request Not Supported with its opcode")
    c.send(b"\x7f\x01\x00")            # an unknown command is ignored
    r = c.read(0xFFF0)
    check(is_error(r, 0x01, 0x0A) and struct.unpack_from("<H", r, 2)[0] == 0xFFF0,
          "Read of a missing handle -> Invalid Handle with that handle")
    r = c.request(struct.pack("<BHH", 0x04, 0, 5))
    check(is_error(r, 0x01, 0x04), "Find Information from handle 0 -> Invalid Handle")
    r = c.request(struct.pack("<BHH", 0x04, 0xFF00, 0xFFFF))
    check(is_error(r, 0x0A, 0x04), "Find Information past the table -> Attribute Not Found")
    r = c.request(struct.pack("<BHHH", 0x10, 1, 0xFFFF, 0x2803))
    check(is_error(r, 0x10), "Read By Group Type of 0x2803 -> Unsupported Group Type")
    r = c.request(struct.pack("<BHH", 0x08, 1, 0xFFFF))
    check(is_error(r, 0x04), "a short Read By Type -> Invalid PDU")
    # Find By Type Value: the GAP service
    r = c.request(struct.pack("<BHHHH", 0x06, 1, 0xFFFF, 0x2800, 0x1800))
    check(r[0] == 0x07 and struct.unpack_from("<H", r, 1)[0] == 1, "Find By Type Value finds GAP at 0x0001")
    # Read Multiple and Read Multiple Variable over the GAP values
    gap = [v["value"] for u, v in c.chars.items() if u.startswith("00002a0")][:2]
    r = c.request(struct.pack("<BHH", 0x0E, *gap))
    check(r[0] == 0x0F, "Read Multiple answered")
    r = c.request(struct.pack("<BHH", 0x20, *gap))
    check(r[0] == 0x21, "Read Multiple Variable answered")
    # a characteristic declaration is read-only
    decl = next(iter(c.chars.values()))["decl"]
    r = c.write(decl, b"\x00")
    check(is_error(r, 0x03, 0x12), "write to a declaration -> Write Not Permitted")
    r = c.request(b"\x18\x02")
    check(is_error(r, 0x04, 0x18), "Execute Write with reserved flags -> Invalid PDU")
    # prepare queue bound
    target = None
    for u, v in c.chars.items():
        if v["props"] & 0x08 and not u.startswith("14387802") and not u.startswith("00000007") \
                and not u.startswith("12345678-9abc-def0-1234-000000000008") \
                and not u.startswith("00000005"):
            target = v["value"]
    full = None
    for i in range(200):
        r = c.request(struct.pack("<BHH", 0x16, target, 0) + b"x")
        if r[0] != 0x17:
            full = r
            break
    check(full is not None and is_error(full, 0x09, 0x16), "prepare queue bounded (Prepare Queue Full after %d)" % i)
    r = c.request(b"\x18\x00")
    check(r == b"\x19", "Execute Write cancel empties the queue")
    # Read Blob beyond a value -> Invalid Offset
    r = c.request(struct.pack("<BHH", 0x0C, 3, 200))
    check(is_error(r, 0x07, 0x0C), "Read Blob past the end -> Invalid Offset")
    # a request longer than the MTU
    r = c.request(struct.pack("<BH", 0x12, target) + b"y" * (c.mtu + 5))
    check(is_error(r, 0x04), "a Write Request longer than the MTU -> Invalid PDU")
    check(c.max_pdu <= c.mtu, "no PDU exceeded the MTU (%d)" % c.mtu)
    c.close()
    # MTU 23 stays 23 and responses fit
    c = dev.connect()
    c.discover()
    check(c.max_pdu <= 23, "discovery at MTU 23 fits 23 bytes")
    c.close()
    # a client that hangs up at once, many times
    t0 = time.monotonic()
    n = 0
    while n < 1500:
        c = dev.connect(retry=0)
        c.read(3)
        c.close()
        n += 1
    dt = time.monotonic() - t0
    check(True, "%d connect/read/close in %.2f s (%.0f /s)" % (n, dt, n / dt))
    c = dev.connect()
    t0 = time.monotonic()
    for _ in range(5000):
        c.read(3)
    dt = time.monotonic() - t0
    c.close()
    check(5000 / dt > 1000, "%.0f request/response round trips per second" % (5000 / dt))
    no_faults(dev, "conformance")


# ---------------------------------------------------------------------------
# speaker


def status(v):
    return v[0], v[1], v[2]


def speaker_session(dev, ssid=b"HomeNet", password=PASSWORD, mtu=185,
                    url=b"https://fw.chaoticvolt.example/speaker/v2.4.1.bin"):
    c = dev.connect()
    c.exchange_mtu(mtu)
    c.discover()
    st = c.h(OTA % 8)
    r = c.subscribe(OTA % 8)
    check(r == b"\x13", "subscribe OTA_STATUS")
    r = c.write_any(c.h(OTA % 5), ssid + b"\x00" + password)
    check(r in (b"\x13", b"\x19"), "credentials accepted")
    check(c.wait_note(st)[0] == 1, "CREDS_RECEIVED")
    r = c.write_any(c.h(OTA % 6), url)
    check(r in (b"\x13", b"\x19"), "URL accepted")
    check(c.wait_note(st)[0] == 2, "URL_RECEIVED")
    return c, st


def speaker_tests(results):
    bugs_all = ["all"]
    # healthy session with every bug on: update, reboot, validate; long writes at MTU 23
    dev = DeviceProc("speaker", bugs_all)
    try:
        c, st = speaker_session(dev, mtu=23)
        c.write(c.h(OTA % 7), b"\x10\x00")
        states = []
        t0 = time.monotonic()
        while not states or states[-1] not in (7, 0xFF):
            states.append(c.wait_note(st, timeout=3)[0])
        dt = time.monotonic() - t0
        check(states[0] == 3 and states[-1] == 7 and 5 in states and 6 in states,
              "OTA to SUCCESS (%s) in %.2f s" % (states, dt))
        check(dt < 1.0, "download compressed (< 1 s)")
        r = c.read(c.h(PRESET))
        check(r == b"\x0bFlat", "preset name reads as written")
        r = c.write(c.h(OTA % 7), b"\x12\x00")
        check(r == b"\x13", "REBOOT answered")
        try:
            c.pump(0.5)
            raise Fail("REBOOT did not drop the link")
        except Closed:
            pass
        time.sleep(0.1)
        c = dev.connect()
        c.discover()
        c.subscribe(OTA % 8)
        check(c.read(c.h(OTA % 8))[1] == 8, "PENDING_VERIFY after reboot")
        check(c.read(c.chars["00002a26-0000-1000-8000-00805f9b34fb"]["value"])[1:] == b"2.4.1",
              "new firmware revision 2.4.1")
        c.write(c.h(OTA % 7), b"\x15\x00")
        check(c.wait_note(c.h(OTA % 8))[0] == 0, "VALIDATE -> IDLE")
        c.close()
        # errors a careful firmware gives
        c = dev.connect()
        c.exchange_mtu(185)
        c.discover()
        w = lambda u, v: c.write(c.h(OTA % u), v)
        check(is_error(w(5, b"HomeNet"), 0x80), "credentials without NUL -> 0x80")
        check(is_error(w(5, b"\x00pw"), 0x0D), "empty SSID -> 0x0D")
        check(is_error(w(5, b"A" * 33 + b"\x00pw"), 0x0D), "33-byte SSID -> 0x0D")
        check(is_error(w(5, b"A\x00" + b"p" * 65), 0x0D), "65-byte password -> 0x0D")
        check(is_error(c.write_long(c.h(OTA % 5), b"A" * 20 + b"\x00" + b"p" * 80), 0x0D),
              "99-byte credentials (long write) -> 0x0D")
        check(is_error(w(5, b"\xff\xfe\x00pw"), 0x80), "non-UTF-8 SSID -> 0x80")
        check(is_error(w(6, b"ftp://x/y.bin"), 0x80), "non-http URL -> 0x80")
        check(is_error(c.write_long(c.h(OTA % 6), b"https://a/" + b"b" * 250), 0x0D),
              "URL over 256 bytes -> 0x0D")
        check(is_error(w(7, b"\x10"), 0x0D), "1-byte control -> 0x0D")
        check(is_error(w(7, b"\x10\x00\x00"), 0x0D), "3-byte control -> 0x0D")
        check(is_error(w(7, b"\x42\x00"), 0x80), "unknown command -> 0x80")
        c.subscribe(OTA % 8)
        w(7, b"\x10\x00")
        v = c.wait_note(c.h(OTA % 8))
        check(v[0] == 0xFF and v[1] == 7, "START without credentials -> ERROR NO_CREDENTIALS")
        w(5, b"HomeNet\x00" + PASSWORD)
        c.wait_note(c.h(OTA % 8))
        w(7, b"\x10\x00")
        v = c.wait_note(c.h(OTA % 8))
        check(v[0] == 0xFF and v[1] == 8, "START without URL -> ERROR NO_URL")
        c.close()
        no_faults(dev, "healthy speaker sessions with every bug on")
    finally:
        dev.stop()

    for mtu, ssid, pw, url, err in ((185, b"HomeNet", b"wrong", b"https://x.example/a.bin", 1),
                                    (185, b"HomeNet-5G", PASSWORD, b"https://x.example/a.bin", 1),
                                    (185, b"HomeNet", PASSWORD, b"https://fw.invalid/a.bin", 2),
                                    (185, b"HomeNet", PASSWORD, b"https://x.example/404.bin", 3),
                                    (185, b"HomeNet", PASSWORD, b"https://x.example/stall.bin", 4),
                                    (185, b"HomeNet", PASSWORD, b"https://x.example/corrupt.bin", 5)):
        dev = DeviceProc("speaker")
        try:
            c, st = speaker_session(dev, ssid, pw, mtu, url)
            c.write(c.h(OTA % 7), b"\x10\x00")
            v = c.wait_note(st, lambda v: v[0] in (7, 0xFF), timeout=3)
            check(v[0] == 0xFF and v[1] == err, "%s/%s -> ERROR %d" % (ssid, url, err))
        finally:
            dev.stop()

    # --- ssid-exact-32
    for on in (True, False):
        dev = DeviceProc("speaker", ["ssid-exact-32"] if on else [])
        try:
            c = dev.connect()
            c.exchange_mtu(185)
            c.discover()
            ok = c.write(c.h(OTA % 5), b"B" * 31 + b"\x00pw")
            check(ok == b"\x13", "31-byte SSID accepted")
            act = lambda: c.write(c.h(OTA % 5), b"TheNetworkNameIsThirtyTwoBytes!!\x00thirty-two")
            if on:
                expect_crash(dev, c, act, "ssid-exact-32")
            else:
                check(act() == b"\x13", "32-byte SSID accepted (bug off)")
                no_faults(dev, "ssid-exact-32 off")
        finally:
            dev.stop()
    results.append("speaker ssid-exact-32")

    # --- start-slot-index
    for on in (True, False):
        dev = DeviceProc("speaker", ["start-slot-index"] if on else [])
        try:
            c = dev.connect()
            c.exchange_mtu(185)
            c.discover()
            c.subscribe(OTA % 8)
            c.write(c.h(OTA % 5), b"HomeNet\x00" + PASSWORD)
            r = c.write(c.h(OTA % 7), b"\x10\x07")
            if on:
                check(r == b"\x13", "START 7 before the URL: no crash (fails as NO_URL)")
                v = c.wait_note(c.h(OTA % 8), lambda v: v[0] == 0xFF)
                check(v[1] == 8, "ERROR NO_URL")
            else:
                check(is_error(r, 0x80), "START parameter 7 -> 0x80 (bug off)")
            c.write(c.h(OTA % 6), b"https://fw.example/s.bin")
            act = lambda: c.write(c.h(OTA % 7), b"\x10\x07")
            if on:
                expect_crash(dev, c, act, "start-slot-index")
                c = dev.connect()
                c.discover()
                check(c.read(c.h(OTA % 8))[1] == 0, "after the crash the speaker is IDLE (power-on)")
            else:
                check(is_error(act(), 0x80), "START 7 in URL_RECEIVED -> 0x80 (bug off)")
                check(c.write(c.h(OTA % 7), b"\x10\x02") == b"\x13", "START 2 accepted")
                no_faults(dev, "start-slot-index off")
        finally:
            dev.stop()
    results.append("speaker start-slot-index")

    # --- --going-down: after a crash the radio takes links for a while and drops them
    dev = DeviceProc("speaker", ["start-slot-index"], ["--going-down", "30"])
    try:
        c = dev.connect()
        c.exchange_mtu(185)
        c.discover()
        c.write(c.h(OTA % 5), b"HomeNet\x00" + PASSWORD)
        c.write(c.h(OTA % 6), b"https://fw.example/s.bin")
        status_handle = c.h(OTA % 8)
        c.send(b"\x12" + struct.pack("<H", c.h(OTA % 7)) + b"\x10\x07")
        try:
            r = c._recv(1.0)
            raise Fail("START 7 in URL_RECEIVED answered (expected the crash): %s" % r.hex())
        except Closed:
            pass
        c.close()
        taken = Client(dev.path, 1.0)      # within the 30 ms: accepted...
        try:
            r = taken.read(status_handle)
            raise Fail("a link taken while going down was answered: %s" % r.hex())
        except (Closed, NoAnswer):
            check(True, "a link taken while the device goes down is not answered")
        taken.close()
        c = dev.connect()
        check(c.read(status_handle)[1] == 0, "after going down and the boot the speaker is IDLE")
        c.close()
    finally:
        dev.stop()
    results.append("speaker --going-down")

    # --- status-cccd-index
    for on in (True, False):
        dev = DeviceProc("speaker", ["status-cccd-index"] if on else [])
        try:
            c = dev.connect()
            c.discover()
            check(c.subscribe(OTA % 8, 1) == b"\x13", "CCCD 0x0001 accepted")
            check(c.subscribe(OTA % 8, 0) == b"\x13", "CCCD 0x0000 accepted")
            act = lambda: c.request(struct.pack("<BHH", 0x12, c.cccd(OTA % 8), 0x0003), timeout=0.5)
            if on:
                expect_hang(dev, c, act, "status-cccd-index")
            else:
                r = act()
                check(is_error(r, 0x13), "CCCD 0x0003 on a notify-only characteristic -> 0x13")
                r = c.subscribe(OTA % 8, 0xFFFF)
                check(is_error(r, 0x13), "CCCD 0xFFFF -> 0x13")
                no_faults(dev, "status-cccd-index off")
        finally:
            dev.stop()
    results.append("speaker status-cccd-index")

    # --- preset-blob-leak
    for on in (True, False):
        dev = DeviceProc("speaker", ["preset-blob-leak"] if on else [])
        try:
            c = dev.connect()
            c.discover()
            c.write_long(c.h(OTA % 5), b"HomeNet\x00" + PASSWORD)
            ph = c.h(PRESET)
            check(c.read(ph) == b"\x0bFlat", "Read of the preset name")
            r = c.request(struct.pack("<BHH", 0x0C, ph, 20 + 33))
            if on:
                check(r[0] == 0x0D and r[1:1 + len(PASSWORD)] == PASSWORD,
                      "Read Blob at offset 53 returns the Wi-Fi password (%r)" % r[1:])
                r = c.request(struct.pack("<BHH", 0x0C, ph, 20))
                check(r[1:8] == b"HomeNet", "Read Blob at offset 20 returns the SSID")
            else:
                check(is_error(r, 0x07), "Read Blob past the name -> Invalid Offset (bug off)")
            check(c.max_pdu <= c.mtu, "no PDU over the MTU")
        finally:
            dev.stop()
    results.append("speaker preset-blob-leak")


# ---------------------------------------------------------------------------
# sensor


def scan_once(c, timeout=2.0):
    h = c.h(SCAN)
    chunks = []
    r = c.write(h, b"SCAN")
    check(r == b"\x13", "SCAN accepted")
    while True:
        v = c.wait_note(h, timeout=timeout)
        chunks.append(v)
        if v.endswith(b"END\n"):
            break
    text = b"".join(chunks)
    lines = [l for l in text.split(b"\n") if l and l not in (b"MORE", b"END")]
    return chunks, [(l.rsplit(b",", 1)[0].decode(), int(l.rsplit(b",", 1)[1])) for l in lines]


def sensor_tests(results):
    dev = DeviceProc("sensor", ["all"])
    try:
        ref = None
        for mtu in (23, 185, 247, 517, 24, 100):
            c = dev.connect()
            c.exchange_mtu(mtu)
            c.discover()
            c.subscribe(SCAN)
            chunks, nets = scan_once(c)
            check(all(len(x) <= c.mtu - 3 for x in chunks) and c.max_pdu <= c.mtu,
                  "MTU %d: %d notifications, each within MTU-3" % (c.mtu, len(chunks)))
            if ref is None:
                ref = nets
                check(6 <= len(nets) <= 10, "%d networks" % len(nets))
                check([r for _, r in nets] == sorted([r for _, r in nets], reverse=True), "sorted by RSSI")
                check(any("," in s for s, _ in nets), "an SSID with a comma")
                check(any(len(s.encode()) >= 31 for s, _ in nets), "SSIDs near 32 bytes")
            check(nets == ref, "MTU %d: same networks as at MTU 23" % c.mtu)
            c.close()
        # not subscribed: nothing
        c = dev.connect()
        c.exchange_mtu(100)
        c.discover()
        c.write(c.h(SCAN), b"SCAN")
        c.pump(0.4)
        check(c.notes == [], "no notifications without a subscription")
        check(is_error(c.write(c.h(SCAN), b"scan"), 0x80), "lower-case scan -> 0x80")
        check(is_error(c.write(c.h(SCAN), b"S" * 21), 0x0D), "21 bytes -> 0x0D")
        c.close()
        no_faults(dev, "healthy sensor sessions with every bug on")
    finally:
        dev.stop()

    # --- end-marker-room
    for on in (True, False):
        dev = DeviceProc("sensor", ["end-marker-room"] if on else [])
        try:
            c = dev.connect()
            c.exchange_mtu(29)
            c.discover()
            c.subscribe(SCAN)
            h = c.h(SCAN)
            c.write(h, b"SCAN")
            v = c.wait_note(h, lambda v: v.endswith(b"END\n"))
            if on:
                check(c.max_pdu == c.mtu + 1, "MTU 29: a notification of %d bytes (MTU+1)" % c.max_pdu)
            else:
                check(c.max_pdu <= c.mtu, "MTU 29: every PDU within the MTU (bug off)")
            c.close()
        finally:
            dev.stop()
    results.append("sensor end-marker-room")

    # --- rescan-overflow
    for on in (True, False):
        dev = DeviceProc("sensor", ["rescan-overflow"] if on else [])
        try:
            c = dev.connect()
            c.exchange_mtu(247)
            c.discover()
            c.subscribe(SCAN)
            chunks, nets = scan_once(c)
            check(len(nets) == 10, "a first complete scan")
            chunks, nets = scan_once(c)
            check(len(nets) == 10, "a second SCAN after END: a complete scan, no fault")
            check(c.write(c.h(SCAN), b"SCAN") == b"\x13", "SCAN")
            act = lambda: c.write(c.h(SCAN), b"SCAN")
            if on:
                expect_crash(dev, c, act, "rescan-overflow")
            else:
                check(act() == b"\x13", "a second SCAN while pending restarts the scan (bug off)")
                c.wait_note(c.h(SCAN), lambda v: v.endswith(b"END\n"))
                no_faults(dev, "rescan-overflow off")
        finally:
            dev.stop()
    results.append("sensor rescan-overflow")


# ---------------------------------------------------------------------------
# nRF7


def nrf_setup(dev, mtu=244, encrypt=True):
    c = dev.connect()
    c.exchange_mtu(mtu)
    c.discover()
    if encrypt:
        c.send(b"\x00encrypt")
        check(c.subscribe(NRF % 0x802, 2) == b"\x13", "subscribe Control Point indications")
        check(c.subscribe(NRF % 0x803, 1) == b"\x13", "subscribe Data Out")
    return c


def nrf_call(c, req):
    r = c.write(c.h(NRF % 0x802), req.encode() if isinstance(req, Msg) else req)
    check(r == b"\x13", "Control Point write answered")
    v = c.wait_note(c.h(NRF % 0x802))
    return decode(v)


def nrf_results(c, until, timeout=2.0):
    out = []
    h = c.h(NRF % 0x803)
    while True:
        v = decode(c.wait_note(h, timeout=timeout))
        out.append(v)
        if until(v):
            return out


def set_config(ssid, psk, band=None):
    return Msg((1, 4), (11, Msg((1, Msg((1, ssid), (3, band))), (2, psk), (3, False))))


def nrf7_tests(results):
    dev = DeviceProc("nrf7", ["all"])
    try:
        c = nrf_setup(dev, encrypt=False)
        check(c.read(c.h(NRF % 0x801)) == b"\x0b\x08\x01", "Info reads version 1 without encryption")
        r = c.subscribe(NRF % 0x802, 2)
        check(is_error(r, 0x0F), "Control Point CCCD on a plain link -> Insufficient Encryption")
        check(is_error(c.subscribe(NRF % 0x803, 1), 0x0F), "Data Out CCCD -> Insufficient Encryption")
        check(is_error(c.write(c.h(NRF % 0x802), b"\x08\x01"), 0x0F), "Control Point -> Insufficient Encryption")
        c.send(b"\x00encrypt")
        check(is_error(c.write(c.h(NRF % 0x802), b"\x08\x01"), 0xFD),
              "Control Point without indications enabled -> 0xFD")
        c.subscribe(NRF % 0x802, 2)
        c.subscribe(NRF % 0x803, 1)
        resp = nrf_call(c, Msg((1, 1)))
        check(get_int(resp, 1) == 1 and get_int(resp, 2) == 0 and get_int(get_msg(resp, 10), 1) == 0,
              "GET_STATUS: SUCCESS, DISCONNECTED")
        resp = nrf_call(c, Msg((1, 2), (10, Msg((1, 0), (3, 100)))))
        check(get_int(resp, 2) == 0, "START_SCAN SUCCESS")
        recs = []
        h = c.h(NRF % 0x803)
        c.pump(0.4)
        for op, hh, v in c.notes:
            if hh == h:
                recs.append(get_msg(decode(v), 1))
        c.notes = []
        names = [get_bytes(get_msg(r, 1), 1) for r in recs]
        check(len(recs) >= 10 and b"HomeNet" in names and b"HomeNet-5G" in names,
              "%d scan records incl. 5 GHz" % len(recs))
        check(get_int(nrf_call(c, Msg((1, 3))), 2) == 0, "STOP_SCAN SUCCESS")
        resp = nrf_call(c, set_config(b"HomeNet", PASSWORD))
        check(get_int(resp, 2) == 0, "SET_CONFIG SUCCESS")
        states = [get_int(r, 2) for r in nrf_results(c, lambda r: get_int(r, 2) in (4, 5))]
        check(states == [1, 2, 3, 4], "AUTHENTICATION, ASSOCIATION, OBTAINING_IP, CONNECTED")
        resp = nrf_call(c, Msg((1, 1)))
        ds = get_msg(resp, 10)
        check(get_int(ds, 1) == 4 and get_bytes(get_msg(ds, 10), 1) == b"HomeNet"
              and len(get_bytes(get_msg(ds, 11), 1)) == 4, "GET_STATUS: CONNECTED to HomeNet with an IP")
        resp = nrf_call(c, set_config(b"HomeNet", b"not the password"))
        states = [(get_int(r, 2), get_int(r, 3)) for r in nrf_results(c, lambda r: get_int(r, 2) == 5)]
        check(states[-1] == (5, 0), "wrong passphrase -> CONNECTION_FAILED AUTH_ERROR")
        nrf_call(c, set_config(b"Nowhere", b"whatever"))
        states = [(get_int(r, 2), get_int(r, 3)) for r in nrf_results(c, lambda r: get_int(r, 2) == 5)]
        check(states == [(5, 1)], "unknown SSID -> CONNECTION_FAILED NETWORK_NOT_FOUND")
        nrf_call(c, set_config(b"Garage-AP", b"garage1234"))
        states = [(get_int(r, 2), get_int(r, 3)) for r in nrf_results(c, lambda r: get_int(r, 2) == 5)]
        check(states[-1] == (5, 3) and (3, None) in states, "no DHCP -> OBTAINING_IP, FAIL_IP")
        resp = nrf_call(c, set_config(b"HomeNet", b"p" * 65))
        check(get_int(resp, 2) == 1, "65-byte passphrase -> INVALID_ARGUMENT")
        resp = nrf_call(c, b"\x08\x04\x5a\x02\x0a\x00")
        check(get_int(resp, 2) == 1, "empty SSID -> INVALID_ARGUMENT")
        resp = nrf_call(c, b"\x08")
        check(get_int(resp, 2) == 2, "a truncated varint -> INVALID_PROTO")
        resp = nrf_call(c, b"\x0b\x01")
        check(get_int(resp, 2) == 2, "a group wire type -> INVALID_PROTO")
        resp = nrf_call(c, Msg((1, 9)))
        check(get_int(resp, 2) == 1, "unknown op code -> INVALID_ARGUMENT")
        resp = nrf_call(c, Msg((1, 5)))
        check(get_int(resp, 2) == 0, "FORGET_CONFIG SUCCESS")
        ds = get_msg(nrf_call(c, Msg((1, 1))), 10)
        check(get_int(ds, 1) == 0 and get_msg(ds, 10) is None, "forgotten: DISCONNECTED, no config")
        c.close()
        # MTU 23: records longer than 20 bytes are not sent, nothing over the MTU
        c = nrf_setup(dev, mtu=23)
        nrf_call(c, Msg((1, 2)))
        c.pump(0.4)
        check(c.max_pdu <= 23, "MTU 23: nothing over the MTU")
        c.close()
        no_faults(dev, "healthy nRF7 sessions with every bug on")
    finally:
        dev.stop()

    # --- pb-len-overrun (and: a crash loses the stored configuration)
    for on in (True, False):
        dev = DeviceProc("nrf7", ["pb-len-overrun"] if on else [])
        try:
            c = nrf_setup(dev)
            nrf_call(c, set_config(b"HomeNet", PASSWORD))
            nrf_results(c, lambda r: get_int(r, 2) == 4)
            bad = b"\x08\x04\x5a\x39\x0a\x17\x0a\x07HomeNet"     # config claims 57 bytes, has 11
            if on:
                expect_crash(dev, c, lambda: c.write(c.h(NRF % 0x802), bad), "pb-len-overrun")
                c = nrf_setup(dev)
                ds = get_msg(nrf_call(c, Msg((1, 1))), 10)
                check(get_int(ds, 1) == 0 and get_msg(ds, 10) is None,
                      "after the crash: DISCONNECTED, configuration lost")
            else:
                resp = nrf_call(c, bad)
                check(get_int(resp, 2) == 2, "overrunning length -> INVALID_PROTO (bug off)")
                resp = nrf_call(c, b"\x08\x01\x52\x05\x08\x00\x12\x09")   # nested overrun
                check(get_int(resp, 2) == 2, "nested overrun -> INVALID_PROTO (bug off)")
                no_faults(dev, "pb-len-overrun off")
        finally:
            dev.stop()
    results.append("nrf7 pb-len-overrun")

    # --- rescan-band-index
    for on in (True, False):
        dev = DeviceProc("nrf7", ["rescan-band-index"] if on else [])
        try:
            c = nrf_setup(dev)
            bad = Msg((1, 2), (10, Msg((1, 7))))
            resp = nrf_call(c, bad)
            check(get_int(resp, 2) == 1, "START_SCAN band 7 with no scan running -> INVALID_ARGUMENT")
            check(get_int(nrf_call(c, Msg((1, 2), (10, Msg((1, 1))))), 2) == 0, "START_SCAN band 1")
            if on:
                expect_crash(dev, c, lambda: c.write(c.h(NRF % 0x802), bad.encode()), "rescan-band-index")
            else:
                check(get_int(nrf_call(c, bad), 2) == 1, "restart with band 7 -> INVALID_ARGUMENT (bug off)")
                no_faults(dev, "rescan-band-index off")
        finally:
            dev.stop()
    results.append("nrf7 rescan-band-index")

    # --- psk-64-overflow
    for on in (True, False):
        dev = DeviceProc("nrf7", ["psk-64-overflow"] if on else [])
        try:
            c = nrf_setup(dev)
            check(get_int(nrf_call(c, set_config(b"HomeNet", b"q" * 63)), 2) == 0, "63-byte passphrase")
            act = lambda: c.write(c.h(NRF % 0x802), set_config(b"HomeNet", b"a1" * 32).encode())
            if on:
                expect_crash(dev, c, act, "psk-64-overflow")
            else:
                check(act() == b"\x13", "64-byte passphrase accepted (bug off)")
                check(get_int(decode(c.wait_note(c.h(NRF % 0x802))), 2) == 0, "SUCCESS")
                no_faults(dev, "psk-64-overflow off")
        finally:
            dev.stop()
    results.append("nrf7 psk-64-overflow")


def main():
    which = [a for a in sys.argv[1:] if not a.startswith("-")] or ["speaker", "sensor", "nrf7"]
    failures = 0
    for name in which:
        print("== %s" % name)
        for title, fn in (("ATT conformance", lambda: (lambda d: (att_conformance(d, name), d.stop()))(DeviceProc(name))),
                          ("device and planted bugs", lambda: {"speaker": speaker_tests, "sensor": sensor_tests,
                                                               "nrf7": nrf7_tests}[name](results))):
            results = []
            t0 = time.monotonic()
            try:
                fn()
                print("   PASS %s (%.1f s)%s" % (title, time.monotonic() - t0,
                                               (": " + ", ".join(results)) if results else ""))
            except Exception as e:
                failures += 1
                import traceback
                print("   FAIL %s: %s" % (title, e))
                if VERBOSE:
                    traceback.print_exc()
    print("selftest: %s" % ("all passed" if not failures else "%d failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
