"""A small ATT/GATT server core for independent test devices.

Written from the Core Specification (Vol 3 Part F, ATT; Part G, GATT) and
PROTOCOLS.md section 2, not from GATTLab's emulator. Standard library only.

Transport: an AF_UNIX SOCK_SEQPACKET listener. One accepted connection is one
BLE link; one message is one ATT PDU (no L2CAP header). A message whose first
byte is 0x00 is a control message: 0x00 + b"encrypt" marks the link encrypted.

The server is single-threaded (selectors + a timer heap), serves any number of
links at once and keeps the application (device) state across links, like
firmware does. Per link: MTU (starts at 23), CCCD values, prepare queue,
encryption, one indication in flight.

Applications raise `Crash` or `Hang` from their handlers to model a firmware
fault: a crash drops every link, resets the device to power-on and refuses
connections while it "boots" (with `going_down`, it first takes links for a while
and drops them at the reset); a hang stops answering ATT until the client that
hung it disconnects, then the device reboots the same way.
"""

import heapq
import itertools
import os
import selectors
import socket
import struct
import sys
import time
from collections import deque

# ---------------------------------------------------------------------------
# ATT constants

OP_ERROR_RSP = 0x01
OP_MTU_REQ = 0x02
OP_MTU_RSP = 0x03
OP_FIND_INFO_REQ = 0x04
OP_FIND_INFO_RSP = 0x05
OP_FIND_BY_TYPE_REQ = 0x06
OP_FIND_BY_TYPE_RSP = 0x07
OP_READ_BY_TYPE_REQ = 0x08
OP_READ_BY_TYPE_RSP = 0x09
OP_READ_REQ = 0x0A
OP_READ_RSP = 0x0B
OP_READ_BLOB_REQ = 0x0C
OP_READ_BLOB_RSP = 0x0D
OP_READ_MULTI_REQ = 0x0E
OP_READ_MULTI_RSP = 0x0F
OP_READ_BY_GROUP_REQ = 0x10
OP_READ_BY_GROUP_RSP = 0x11
OP_WRITE_REQ = 0x12
OP_WRITE_RSP = 0x13
OP_PREPARE_WRITE_REQ = 0x16
OP_PREPARE_WRITE_RSP = 0x17
OP_EXECUTE_WRITE_REQ = 0x18
OP_EXECUTE_WRITE_RSP = 0x19
OP_NOTIFY = 0x1B
OP_INDICATE = 0x1D
OP_CONFIRM = 0x1E
OP_READ_MULTI_VAR_REQ = 0x20
OP_READ_MULTI_VAR_RSP = 0x21
OP_MULTI_NOTIFY = 0x23
OP_WRITE_CMD = 0x52
OP_SIGNED_WRITE_CMD = 0xD2

# PDUs only a server sends: a client sending one is ignored, not refused.
SERVER_TO_CLIENT = {
    OP_ERROR_RSP, OP_MTU_RSP, OP_FIND_INFO_RSP, OP_FIND_BY_TYPE_RSP,
    OP_READ_BY_TYPE_RSP, OP_READ_RSP, OP_READ_BLOB_RSP, OP_READ_MULTI_RSP,
    OP_READ_BY_GROUP_RSP, OP_WRITE_RSP, OP_PREPARE_WRITE_RSP,
    OP_EXECUTE_WRITE_RSP, OP_NOTIFY, OP_INDICATE, OP_READ_MULTI_VAR_RSP,
    OP_MULTI_NOTIFY,
}

ERR_INVALID_HANDLE = 0x01
ERR_READ_NOT_PERMITTED = 0x02
ERR_WRITE_NOT_PERMITTED = 0x03
ERR_INVALID_PDU = 0x04
ERR_INSUFFICIENT_AUTHENTICATION = 0x05
ERR_REQUEST_NOT_SUPPORTED = 0x06
ERR_INVALID_OFFSET = 0x07
ERR_PREPARE_QUEUE_FULL = 0x09
ERR_ATTRIBUTE_NOT_FOUND = 0x0A
ERR_ATTRIBUTE_NOT_LONG = 0x0B
ERR_INVALID_ATTRIBUTE_VALUE_LENGTH = 0x0D
ERR_UNLIKELY = 0x0E
ERR_INSUFFICIENT_ENCRYPTION = 0x0F
ERR_UNSUPPORTED_GROUP_TYPE = 0x10
ERR_VALUE_NOT_ALLOWED = 0x13
ERR_CCCD_IMPROPERLY_CONFIGURED = 0xFD

DEFAULT_MTU = 23
MAX_ATTR_LEN = 512

# GATT declarations and descriptors
UUID_PRIMARY = 0x2800
UUID_SECONDARY = 0x2801
UUID_INCLUDE = 0x2802
UUID_CHARACTERISTIC = 0x2803
UUID_USER_DESCRIPTION = 0x2901
UUID_CCCD = 0x2902

PROP_BROADCAST = 0x01
PROP_READ = 0x02
PROP_WRITE_NO_RSP = 0x04
PROP_WRITE = 0x08
PROP_NOTIFY = 0x10
PROP_INDICATE = 0x20


def uuid_bytes(u):
    """A UUID (int 16-bit or text 128-bit) as its little-endian wire form."""
    if isinstance(u, int):
        return struct.pack("<H", u)
    if isinstance(u, bytes):
        return u
    hexs = u.replace("-", "")
    if len(hexs) == 4:
        return struct.pack("<H", int(hexs, 16))
    raw = bytes.fromhex(hexs)
    if len(raw) != 16:
        raise ValueError("bad UUID %r" % u)
    return raw[::-1]


def _b128(wire16):
    # 0000XXXX-0000-1000-8000-00805F9B34FB, little-endian: base reversed with XXXX at bytes 12..13
    base = bytearray(bytes.fromhex("0000000000001000800000805f9b34fb")[::-1])
    base[12:14] = wire16
    return bytes(base)


def uuid128_of(wire):
    if len(wire) == 16:
        return bytes(wire)
    return _b128(bytes(wire))


def uuid_text(wire):
    if len(wire) == 2:
        return "0x%04x" % struct.unpack("<H", wire)[0]
    h = wire[::-1].hex()
    return "%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


class AttError(Exception):
    """An ATT error a handler answers with (code, and optionally the handle)."""

    def __init__(self, code, handle=None):
        super().__init__("ATT error 0x%02x" % code)
        self.code = code
        self.handle = handle


class Crash(Exception):
    """A firmware fault: the watchdog resets the device."""

    def __init__(self, bug, detail=""):
        super().__init__("%s: %s" % (bug, detail))
        self.bug = bug
        self.detail = detail


class Hang(Exception):
    """A firmware fault: the device stops answering until the link goes."""

    def __init__(self, bug, detail=""):
        super().__init__("%s: %s" % (bug, detail))
        self.bug = bug
        self.detail = detail


# ---------------------------------------------------------------------------
# The attribute database


class Attribute:
    __slots__ = ("handle", "type", "value", "readable", "writable", "read_enc",
                 "write_enc", "max_len", "on_read", "on_write", "group_end",
                 "char", "is_cccd")

    def __init__(self, handle, type_wire, value=b"", readable=True, writable=False,
                 read_enc=False, write_enc=False, max_len=MAX_ATTR_LEN,
                 on_read=None, on_write=None):
        self.handle = handle
        self.type = type_wire
        self.value = value
        self.readable = readable
        self.writable = writable
        self.read_enc = read_enc
        self.write_enc = write_enc
        self.max_len = max_len
        self.on_read = on_read      # (link, offset) -> full value bytes
        self.on_write = on_write    # (link, value, how) ; how: "req"|"cmd"|"exec"
        self.group_end = None       # services: last handle of the group
        self.char = None            # CCCD: its Characteristic
        self.is_cccd = False

    def type128(self):
        return uuid128_of(self.type)


class Characteristic:
    def __init__(self, uuid, props):
        self.uuid = uuid_bytes(uuid)
        self.props = props
        self.decl_handle = None
        self.value_handle = None
        self.cccd_handle = None
        self.name = uuid_text(self.uuid)

    def __repr__(self):
        return "<char %s value 0x%04x>" % (self.name, self.value_handle or 0)


class GattDatabase:
    def __init__(self):
        self.attrs = []          # sorted by handle
        self.by_handle = {}
        self.next_handle = 1
        self._service = None

    def _add(self, attr):
        self.attrs.append(attr)
        self.by_handle[attr.handle] = attr
        if self._service is not None:
            self._service.group_end = attr.handle
        self.next_handle = attr.handle + 1
        return attr

    def skip_to(self, handle):
        """Leave a gap in the handle space (stacks often do)."""
        if handle < self.next_handle:
            raise ValueError("handle 0x%04x already used" % handle)
        self.next_handle = handle

    def service(self, uuid, primary=True):
        h = self.next_handle
        attr = Attribute(h, uuid_bytes(UUID_PRIMARY if primary else UUID_SECONDARY),
                         value=uuid_bytes(uuid))
        self._service = None
        self._add(attr)
        attr.group_end = h
        self._service = attr
        return attr

    def characteristic(self, uuid, props, value=b"", on_read=None, on_write=None,
                       max_len=MAX_ATTR_LEN, read_enc=False, write_enc=False,
                       cccd_enc=False, description=None, name=None):
        ch = Characteristic(uuid, props)
        if name:
            ch.name = name
        decl = Attribute(self.next_handle, uuid_bytes(UUID_CHARACTERISTIC))
        self._add(decl)
        ch.decl_handle = decl.handle
        ch.value_handle = decl.handle + 1
        decl.value = struct.pack("<BH", props, ch.value_handle) + ch.uuid
        val = Attribute(ch.value_handle, ch.uuid, value=value,
                        readable=bool(props & PROP_READ),
                        writable=bool(props & (PROP_WRITE | PROP_WRITE_NO_RSP)),
                        read_enc=read_enc, write_enc=write_enc, max_len=max_len,
                        on_read=on_read, on_write=on_write)
        self._add(val)
        if props & (PROP_NOTIFY | PROP_INDICATE):
            c = Attribute(self.next_handle, uuid_bytes(UUID_CCCD), readable=True,
                          writable=True, write_enc=cccd_enc, max_len=2)
            c.is_cccd = True
            c.char = ch
            self._add(c)
            ch.cccd_handle = c.handle
        if description is not None:
            self._add(Attribute(self.next_handle, uuid_bytes(UUID_USER_DESCRIPTION),
                                value=description.encode()))
        return ch

    def descriptor(self, uuid, value=b"", **kw):
        return self._add(Attribute(self.next_handle, uuid_bytes(uuid), value=value, **kw))

    def end_service(self):
        self._service = None

    def range(self, start, end):
        for a in self.attrs:
            if a.handle < start:
                continue
            if a.handle > end:
                break
            yield a

    def dump(self):
        lines = []
        for a in self.attrs:
            extra = ""
            if a.group_end is not None:
                extra = " .. 0x%04x %s" % (a.group_end, uuid_text(a.value))
            elif a.type == uuid_bytes(UUID_CHARACTERISTIC):
                props, vh = struct.unpack("<BH", a.value[:3])
                extra = " props 0x%02x value 0x%04x %s" % (props, vh, uuid_text(a.value[3:]))
            lines.append("0x%04x %s%s" % (a.handle, uuid_text(a.type), extra))
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Links


class Link:
    _ids = itertools.count(1)

    def __init__(self, sock):
        self.id = next(Link._ids)
        self.sock = sock
        self.mtu = DEFAULT_MTU
        self.mtu_exchanged = False
        self.encrypted = False
        self.cccd = {}            # cccd handle -> value
        self.prepare = []         # (handle, offset, bytes)
        self.prepare_bytes = 0
        self.indication_in_flight = False
        self.indications = deque()
        self.outq = deque()
        self.closed = False
        self.close_after_flush = False
        self.want_write = False
        self.hung = False
        self.fileno = -1
        self.user = {}            # per-link application data

    def subscribed(self, ch, bit):
        if ch.cccd_handle is None:
            return False
        return bool(self.cccd.get(ch.cccd_handle, 0) & bit)


# ---------------------------------------------------------------------------
# The device base class


class Device:
    """Base class of an application. Subclasses build `self.db` in build_gatt()."""

    name = "device"
    server_mtu = 247
    bugs = {}                 # name -> one-line description
    prepare_queue_entries = 30
    prepare_queue_bytes = 600
    oversize = "drop"         # notifications longer than MTU-3: "drop" or "truncate"
    # what an encrypted-only attribute answers on a plain link: 0x0F Insufficient Encryption
    # (the central holds a key, Core Vol 3 Part C 10.3.1), or 0x05 Insufficient
    # Authentication (no bond yet: device.py --no-bond)
    security_error = ERR_INSUFFICIENT_ENCRYPTION

    def __init__(self, enabled_bugs=(), seed=1, time_scale=1.0, log=None):
        unknown = set(enabled_bugs) - set(self.bugs)
        if unknown:
            raise ValueError("unknown bug(s) for %s: %s (known: %s)" % (
                self.name, ", ".join(sorted(unknown)), ", ".join(sorted(self.bugs))))
        self.enabled = set(enabled_bugs)
        self.seed = seed
        self.time_scale = time_scale
        self.server = None
        self.db = GattDatabase()
        self.log = log or (lambda msg: None)
        self.build_gatt()
        self.power_on("boot")

    def bug(self, name):
        return name in self.enabled

    # hooks for subclasses
    def build_gatt(self):
        raise NotImplementedError

    def power_on(self, cause):
        """Reset application state to what the firmware has at boot.
        cause: "boot" (first power-up), "reboot" (a commanded reset), "fault" (watchdog)."""

    def link_up(self, link):
        pass

    def link_down(self, link):
        pass

    def cccd_written(self, link, ch, value):
        """A CCCD write was accepted (value already stored)."""

    def cccd_check(self, link, ch, value):
        """Validate a CCCD value before it is stored; raise AttError/Crash/Hang."""
        allowed = (1 if ch.props & PROP_NOTIFY else 0) | (2 if ch.props & PROP_INDICATE else 0)
        if value & ~allowed:
            raise AttError(ERR_VALUE_NOT_ALLOWED)

    # helpers for subclasses
    def later(self, delay, fn, *args):
        return self.server.call_later(delay * self.time_scale, fn, *args, app=True)

    def cancel(self, timer):
        if timer is not None:
            self.server.cancel(timer)

    def notify(self, ch, value, link=None, raw=False):
        self.server.send_value(ch, value, OP_NOTIFY, link, raw)

    def indicate(self, ch, value, link=None, raw=False):
        self.server.send_value(ch, value, OP_INDICATE, link, raw)

    def links(self):
        return list(self.server.links.values()) if self.server else []


# ---------------------------------------------------------------------------
# The server


class Server:
    BOOT_TIME = 0.05

    def __init__(self, device, path, quiet=False, max_connections=None):
        self.device = device
        device.server = self
        self.path = path
        self.quiet = quiet
        self.sel = selectors.DefaultSelector()
        self.links = {}           # fileno -> Link
        self.listener = None
        self.timers = []
        self.cancelled = set()
        self.seq = itertools.count()
        self.boot_gen = 0
        self.hung_link = None
        self.running = True
        self.crashes = []
        self.connections_served = 0
        self.max_connections = max_connections
        self.booting = False
        # Seconds the radio goes on accepting links after a crash, each dropped at the reset
        # (0: it stops at once).
        self.going_down = 0.0
        self.going_down_until = 0.0

    # -- logging
    def info(self, msg):
        if not self.quiet:
            sys.stderr.write("[%s] %s\n" % (self.device.name, msg))
            sys.stderr.flush()

    def fault(self, msg):
        sys.stderr.write("[%s] %s\n" % (self.device.name, msg))
        sys.stderr.flush()

    # -- timers
    def call_later(self, delay, fn, *args, app=False):
        t = (time.monotonic() + max(0.0, delay), next(self.seq), self.boot_gen, fn, args, app)
        heapq.heappush(self.timers, t)
        return t[1]

    def cancel(self, timer_id):
        self.cancelled.add(timer_id)

    def _run_timers(self):
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, tid, gen, fn, args, app = heapq.heappop(self.timers)
            if tid in self.cancelled:
                self.cancelled.discard(tid)
                continue
            if app and (gen != self.boot_gen or self.hung_link is not None):
                # a rebooted firmware forgot its timers; a hung one runs none
                continue
            self._guard(fn, *args)

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except Crash as c:
            self.crash(c.bug, c.detail)
        except Hang as h:
            self.hang(None, h.bug, h.detail)

    # -- listening
    def _open_listener(self):
        if self.listener is not None:
            return
        tmp = self.path + ".boot"
        for p in (tmp,):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(tmp)
        s.listen(64)
        s.setblocking(False)
        os.rename(tmp, self.path)    # atomic: no moment without a socket file
        self.listener = s
        self.sel.register(s, selectors.EVENT_READ, None)
        self.booting = False

    def _close_listener(self):
        if self.listener is not None:
            try:
                self.sel.unregister(self.listener)
            except Exception:
                pass
            self.listener.close()     # the file stays: connect() is refused
            self.listener = None

    def start(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._open_listener()
        self.info("listening on %s (server MTU %d%s)" % (
            self.path, self.device.server_mtu,
            ", bugs: " + ", ".join(sorted(self.device.enabled)) if self.device.enabled else ""))

    def stop(self):
        self.running = False
        for link in list(self.links.values()):
            self._close_link(link, notify_device=False)
        self._close_listener()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def serve_forever(self):
        self.start()
        try:
            while self.running:
                timeout = None
                if self.timers:
                    timeout = max(0.0, self.timers[0][0] - time.monotonic())
                events = self.sel.select(timeout)
                for key, mask in events:
                    if key.data is None:
                        if self.listener is not None and key.fileobj is self.listener:
                            self._accept()
                        continue
                    link = key.data
                    if link.closed:
                        continue
                    if mask & selectors.EVENT_WRITE:
                        self._flush(link)
                    if mask & selectors.EVENT_READ and not link.closed:
                        self._readable(link)
                self._run_timers()
        finally:
            self.stop()

    def _accept(self):
        while self.listener is not None:
            try:
                s, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            s.setblocking(False)
            link = Link(s)
            link.fileno = s.fileno()
            # a hung firmware answers nobody, nor one going down
            link.hung = self.hung_link is not None or time.monotonic() < self.going_down_until
            self.links[link.fileno] = link
            self.sel.register(s, selectors.EVENT_READ, link)
            self.connections_served += 1
            try:
                if self.hung_link is None and not link.hung:
                    self.device.link_up(link)
            except Crash as c:
                self.crash(c.bug, c.detail)
            except Hang as h:
                self.hang(link, h.bug, h.detail)

    def _readable(self, link):
        for _ in range(64):
            try:
                data = link.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.info("link %d: recv failed (%s): closed" % (link.id, e))
                self._close_link(link)
                self._after_close(link)
                return
            if not data:
                self.info("link %d: the client disconnected" % link.id)
                self._close_link(link)
                self._after_close(link)
                return
            self._pdu(link, data)
            if link.closed:
                return

    def _after_close(self, link):
        if self.hung_link is link:
            self.hung_link = None
            self.reboot("hang: the link went, the watchdog resets the device")
        if self.max_connections is not None and self.connections_served >= self.max_connections \
                and not self.links:
            self.running = False

    def _close_link(self, link, notify_device=True):
        if link.closed:
            return
        link.closed = True
        try:
            self.sel.unregister(link.sock)
        except Exception:
            pass
        try:
            link.sock.close()
        except OSError:
            pass
        if self.links.get(link.fileno) is link:
            del self.links[link.fileno]
        if notify_device and self.hung_link is None:
            try:
                self.device.link_down(link)
            except Crash as c:
                self.crash(c.bug, c.detail)
            except Hang:
                pass

    def drop_link(self, link, after_flush=True):
        """The device ends a link (after what is queued to it has gone)."""
        if after_flush and link.outq:
            link.close_after_flush = True
            return
        self._close_link(link)

    # -- sending
    def _send(self, link, pdu):
        if link.closed:
            return
        if link.outq:
            if len(link.outq) > 4096:
                return  # the controller's buffers are full: drop
            link.outq.append(pdu)
            return
        try:
            link.sock.send(pdu)
        except (BlockingIOError, InterruptedError):
            link.outq.append(pdu)
            self._want_write(link, True)
        except OSError as e:
            self.info("link %d: send failed (%s): closed" % (link.id, e))
            self._close_link(link)
            self._after_close(link)

    def _want_write(self, link, on):
        if link.closed or link.want_write == on:
            return
        link.want_write = on
        ev = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        self.sel.modify(link.sock, ev, link)

    def _flush(self, link):
        while link.outq:
            try:
                link.sock.send(link.outq[0])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.info("link %d: send failed (%s): closed" % (link.id, e))
                self._close_link(link)
                self._after_close(link)
                return
            link.outq.popleft()
        self._want_write(link, False)
        if link.close_after_flush:
            self._close_link(link)

    def send_value(self, ch, value, op, only=None, raw=False):
        """Notify (op 0x1B) or indicate (0x1D) a value to subscribed links."""
        bit = 1 if op == OP_NOTIFY else 2
        targets = [only] if only is not None else list(self.links.values())
        for link in targets:
            if link.closed or link.hung or not link.subscribed(ch, bit):
                continue
            v = value
            if not raw and 3 + len(v) > link.mtu:
                if self.device.oversize == "truncate":
                    v = v[:link.mtu - 3]
                else:
                    self.info("link %d: %d-byte value for %s does not fit MTU %d: not sent" % (
                        link.id, len(v), ch.name, link.mtu))
                    continue
            pdu = bytes([op]) + struct.pack("<H", ch.value_handle) + v
            if op == OP_NOTIFY:
                self._send(link, pdu)
            else:
                if link.indication_in_flight:
                    if len(link.indications) < 16:
                        link.indications.append(pdu)
                    continue
                link.indication_in_flight = True
                self._send(link, pdu)

    # -- faults
    def crash(self, bug, detail=""):
        self.crashes.append(bug)
        self.fault("CRASH bug=%s: %s -> watchdog reset, link dropped, rebooting" % (bug, detail))
        self.reboot("crash %s" % bug, fault=True)

    def hang(self, link, bug, detail=""):
        self.crashes.append(bug)
        self.fault("HANG bug=%s: %s -> no more answers until the link goes, then reboot" % (bug, detail))
        if link is None:
            link = next(iter(self.links.values()), None)
        if link is None:
            self.reboot("hang %s" % bug, fault=True)
            return
        self.hung_link = link
        for l in self.links.values():
            l.hung = True

    def reboot(self, why, fault=False):
        """Drop every link, reset the device, refuse connections while booting."""
        self.info("reboot (%s)" % why)
        for link in list(self.links.values()):
            link.hung = True          # nothing more is processed from it
            if fault:
                self._close_link(link, notify_device=False)
            else:
                self.drop_link(link)
        self.hung_link = None
        self.boot_gen += 1
        self.timers = [t for t in self.timers if not t[5]]
        heapq.heapify(self.timers)
        if fault and self.going_down > 0 and self.listener is not None:
            # The radio still accepts while the firmware goes down: a link taken meanwhile is
            # dropped when the reset reaches it (see --going-down).
            self.going_down_until = time.monotonic() + self.going_down
            self.call_later(self.going_down, self._gone_down, fault, True)
            return
        self._gone_down(fault)

    def _gone_down(self, fault, late=False):
        if late:
            for link in list(self.links.values()):     # the links taken while going down
                self._close_link(link, notify_device=False)
            self.going_down_until = 0.0
        self._close_listener()
        self.booting = True
        try:
            self.device.power_on("fault" if fault else "reboot")
        except Exception as e:  # a boot must not kill the process
            self.fault("boot failed: %r" % e)
        self.call_later(self.BOOT_TIME, self._open_listener)

    # -- ATT
    def _error(self, link, req, handle, code):
        self._send(link, struct.pack("<BBHB", OP_ERROR_RSP, req, handle, code))

    def _pdu(self, link, pdu):
        if not pdu:
            return
        if pdu[0] == 0x00:
            if pdu[1:] == b"encrypt":
                link.encrypted = True
                self.info("link %d encrypted" % link.id)
            return
        if link.hung:
            return
        op = pdu[0]
        try:
            self._att(link, op, pdu)
        except AttError as e:
            if op & 0x40 or op in SERVER_TO_CLIENT or op == OP_CONFIRM:
                return
            self._error(link, op, e.handle or 0, e.code)
        except Crash as c:
            self.crash(c.bug, c.detail)
        except Hang as h:
            self.hang(link, h.bug, h.detail)

    def _att(self, link, op, pdu):
        handler = self._handlers.get(op)
        if handler is not None:
            if len(pdu) > link.mtu and op != OP_CONFIRM:
                if op & 0x40:
                    return      # an over-long command is dropped
                raise AttError(ERR_INVALID_PDU, 0)
            handler(self, link, pdu)
            return
        if op == OP_CONFIRM:
            if len(pdu) != 1:
                return
            self._confirmed(link)
            return
        if op & 0x40:
            return              # unknown commands (Signed Write without a key too) are ignored
        if op in SERVER_TO_CLIENT:
            return
        raise AttError(ERR_REQUEST_NOT_SUPPORTED, 0)

    def _confirmed(self, link):
        if not link.indication_in_flight:
            return
        link.indication_in_flight = False
        if link.indications:
            link.indication_in_flight = True
            self._send(link, link.indications.popleft())
        self.device_confirmed(link)

    def device_confirmed(self, link):
        f = getattr(self.device, "confirmed", None)
        if f:
            f(link)

    # permission checks
    def _check_read(self, link, attr):
        if not attr.readable:
            raise AttError(ERR_READ_NOT_PERMITTED, attr.handle)
        if attr.read_enc and not link.encrypted:
            raise AttError(self.device.security_error, attr.handle)

    def _check_write(self, link, attr):
        if not attr.writable:
            raise AttError(ERR_WRITE_NOT_PERMITTED, attr.handle)
        if attr.write_enc and not link.encrypted:
            raise AttError(self.device.security_error, attr.handle)

    def _value(self, link, attr, offset=0):
        if attr.is_cccd:
            return struct.pack("<H", link.cccd.get(attr.handle, 0))
        if attr.on_read is not None:
            return attr.on_read(link, offset)
        return attr.value

    def _read_checked(self, link, attr, offset=0):
        self._check_read(link, attr)
        try:
            return self._value(link, attr, offset)
        except AttError as e:
            if e.handle is None:
                e.handle = attr.handle
            raise

    @staticmethod
    def _range(pdu):
        start, end = struct.unpack_from("<HH", pdu, 1)
        if start == 0 or start > end:
            raise AttError(ERR_INVALID_HANDLE, start)
        return start, end

    def h_mtu(self, link, pdu):
        if len(pdu) != 3:
            raise AttError(ERR_INVALID_PDU, 0)
        if link.mtu_exchanged:
            # the client shall send it once per connection (Vol 3 Part F 3.4.2.1)
            raise AttError(ERR_REQUEST_NOT_SUPPORTED, 0)
        client = struct.unpack_from("<H", pdu, 1)[0]
        link.mtu_exchanged = True
        self._send(link, struct.pack("<BH", OP_MTU_RSP, self.device.server_mtu))
        link.mtu = max(DEFAULT_MTU, min(client, self.device.server_mtu))

    def h_find_info(self, link, pdu):
        if len(pdu) != 5:
            raise AttError(ERR_INVALID_PDU, 0)
        start, end = self._range(pdu)
        fmt = None
        out = bytearray()
        for a in self.db.range(start, end):
            f = 1 if len(a.type) == 2 else 2
            if fmt is None:
                fmt = f
            elif f != fmt:
                break
            entry = struct.pack("<H", a.handle) + a.type
            if 2 + len(out) + len(entry) > link.mtu:
                break
            out += entry
        if fmt is None:
            raise AttError(ERR_ATTRIBUTE_NOT_FOUND, start)
        self._send(link, bytes([OP_FIND_INFO_RSP, fmt]) + bytes(out))

    def h_find_by_type(self, link, pdu):
        if len(pdu) < 7:
            raise AttError(ERR_INVALID_PDU, 0)
        start, end = self._range(pdu)
        atype = struct.unpack_from("<H", pdu, 5)[0]
        want = pdu[7:]
        grouping = atype in (UUID_PRIMARY, UUID_SECONDARY)
        out = bytearray()
        for a in self.db.range(start, end):
            if a.type != struct.pack("<H", atype):
                continue
            if a.is_cccd or a.on_read is not None or not a.readable:
                continue    # only static, readable values compare
            v = a.value
            match = v == want
            if not match and grouping and len(want) in (2, 16) and len(v) in (2, 16):
                match = uuid128_of(v) == uuid128_of(want)
            if not match:
                continue
            gend = a.group_end if grouping and a.group_end is not None else a.handle
            if 1 + len(out) + 4 > link.mtu:
                break
            out += struct.pack("<HH", a.handle, gend)
        if not out:
            raise AttError(ERR_ATTRIBUTE_NOT_FOUND, start)
        self._send(link, bytes([OP_FIND_BY_TYPE_RSP]) + bytes(out))

    def h_read_by_type(self, link, pdu):
        if len(pdu) not in (7, 21):
            raise AttError(ERR_INVALID_PDU, 0)
        start, end = self._range(pdu)
        want = uuid128_of(pdu[5:])
        items = []
        size = None
        for a in self.db.range(start, end):
            if a.type128() != want:
                continue
            try:
                v = self._read_checked(link, a)
            except AttError as e:
                if not items:
                    raise
                break
            v = v[:min(link.mtu - 4, 253)]
            if size is None:
                size = len(v)
            elif len(v) != size:
                break
            if 2 + (len(items) + 1) * (2 + size) > link.mtu:
                break
            items.append(struct.pack("<H", a.handle) + v)
        if not items:
            raise AttError(ERR_ATTRIBUTE_NOT_FOUND, start)
        self._send(link, bytes([OP_READ_BY_TYPE_RSP, size + 2]) + b"".join(items))

    def _attr(self, handle):
        a = self.db.by_handle.get(handle)
        if a is None:
            raise AttError(ERR_INVALID_HANDLE, handle)
        return a

    def h_read(self, link, pdu):
        if len(pdu) != 3:
            raise AttError(ERR_INVALID_PDU, 0)
        h = struct.unpack_from("<H", pdu, 1)[0]
        v = self._read_checked(link, self._attr(h))
        self._send(link, bytes([OP_READ_RSP]) + v[:link.mtu - 1])

    def h_read_blob(self, link, pdu):
        if len(pdu) != 5:
            raise AttError(ERR_INVALID_PDU, 0)
        h, off = struct.unpack_from("<HH", pdu, 1)
        v = self._read_checked(link, self._attr(h), off)
        if off > len(v):
            raise AttError(ERR_INVALID_OFFSET, h)
        self._send(link, bytes([OP_READ_BLOB_RSP]) + v[off:off + link.mtu - 1])

    def h_read_multi(self, link, pdu):
        if len(pdu) < 5 or (len(pdu) - 1) % 2:
            raise AttError(ERR_INVALID_PDU, 0)
        out = bytearray()
        for i in range(1, len(pdu), 2):
            h = struct.unpack_from("<H", pdu, i)[0]
            out += self._read_checked(link, self._attr(h))
        self._send(link, bytes([OP_READ_MULTI_RSP]) + bytes(out[:link.mtu - 1]))

    def h_read_multi_var(self, link, pdu):
        if len(pdu) < 5 or (len(pdu) - 1) % 2:
            raise AttError(ERR_INVALID_PDU, 0)
        out = bytearray()
        for i in range(1, len(pdu), 2):
            h = struct.unpack_from("<H", pdu, i)[0]
            v = self._read_checked(link, self._attr(h))
            out += struct.pack("<H", len(v)) + v
        self._send(link, bytes([OP_READ_MULTI_VAR_RSP]) + bytes(out[:link.mtu - 1]))

    def h_read_by_group(self, link, pdu):
        if len(pdu) not in (7, 21):
            raise AttError(ERR_INVALID_PDU, 0)
        start, end = self._range(pdu)
        want = uuid128_of(pdu[5:])
        if want not in (uuid128_of(uuid_bytes(UUID_PRIMARY)), uuid128_of(uuid_bytes(UUID_SECONDARY))):
            raise AttError(ERR_UNSUPPORTED_GROUP_TYPE, start)
        items = []
        size = None
        for a in self.db.range(start, end):
            if a.type128() != want:
                continue
            v = a.value[:min(link.mtu - 6, 251)]
            if size is None:
                size = len(v)
            elif len(v) != size:
                break
            if 2 + (len(items) + 1) * (4 + size) > link.mtu:
                break
            items.append(struct.pack("<HH", a.handle, a.group_end) + v)
        if not items:
            raise AttError(ERR_ATTRIBUTE_NOT_FOUND, start)
        self._send(link, bytes([OP_READ_BY_GROUP_RSP, size + 4]) + b"".join(items))

    def _write_value(self, link, attr, value, how):
        if len(value) > attr.max_len:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH, attr.handle)
        if attr.is_cccd:
            if len(value) != 2:
                raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH, attr.handle)
            v = struct.unpack("<H", value)[0]
            try:
                self.device.cccd_check(link, attr.char, v)
            except AttError as e:
                if e.handle is None:
                    e.handle = attr.handle
                raise
            link.cccd[attr.handle] = v
            self.device.cccd_written(link, attr.char, v)
            return
        if attr.on_write is not None:
            try:
                attr.on_write(link, bytes(value), how)
            except AttError as e:
                if e.handle is None:
                    e.handle = attr.handle
                raise
        else:
            attr.value = bytes(value)

    def h_write(self, link, pdu):
        if len(pdu) < 3:
            raise AttError(ERR_INVALID_PDU, 0)
        h = struct.unpack_from("<H", pdu, 1)[0]
        a = self._attr(h)
        self._check_write(link, a)
        self._write_value(link, a, pdu[3:], "req")
        if not link.closed and not link.hung:
            self._send(link, bytes([OP_WRITE_RSP]))
            f = getattr(self.device, "after_write_response", None)
            if f:
                f(link, a)

    def h_write_cmd(self, link, pdu):
        if len(pdu) < 3:
            return
        h = struct.unpack_from("<H", pdu, 1)[0]
        a = self.db.by_handle.get(h)
        if a is None:
            return
        try:
            self._check_write(link, a)
            self._write_value(link, a, pdu[3:], "cmd")
        except AttError:
            return
        f = getattr(self.device, "after_write_response", None)
        if f and not link.closed and not link.hung:
            f(link, a)

    def h_prepare(self, link, pdu):
        if len(pdu) < 5:
            raise AttError(ERR_INVALID_PDU, 0)
        h, off = struct.unpack_from("<HH", pdu, 1)
        a = self._attr(h)
        self._check_write(link, a)
        part = bytes(pdu[5:])
        dev = self.device
        if len(link.prepare) >= dev.prepare_queue_entries or \
                link.prepare_bytes + len(part) > dev.prepare_queue_bytes:
            raise AttError(ERR_PREPARE_QUEUE_FULL, h)
        link.prepare.append((h, off, part))
        link.prepare_bytes += len(part)
        self._send(link, bytes([OP_PREPARE_WRITE_RSP]) + pdu[1:])

    def h_execute(self, link, pdu):
        if len(pdu) != 2:
            raise AttError(ERR_INVALID_PDU, 0)
        flags = pdu[1]
        queue, link.prepare, link.prepare_bytes = link.prepare, [], 0
        if flags == 0x00:
            self._send(link, bytes([OP_EXECUTE_WRITE_RSP]))
            return
        if flags != 0x01:
            raise AttError(ERR_INVALID_PDU, 0)
        # assemble each attribute's value, checking offsets and lengths first
        order = []
        values = {}
        for h, off, part in queue:
            buf = values.get(h)
            if buf is None:
                buf = values[h] = bytearray()
                order.append(h)
            if off > len(buf):
                raise AttError(ERR_INVALID_OFFSET, h)
            buf[off:off + len(part)] = part
        for h in order:
            a = self._attr(h)
            if len(values[h]) > a.max_len:
                raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH, h)
        for h in order:
            a = self._attr(h)
            self._check_write(link, a)
            self._write_value(link, a, bytes(values[h]), "exec")
            if link.closed or link.hung:
                return
        self._send(link, bytes([OP_EXECUTE_WRITE_RSP]))
        f = getattr(self.device, "after_write_response", None)
        if f:
            for h in order:
                if link.closed or link.hung:
                    break
                f(link, self._attr(h))

    @property
    def db(self):
        return self.device.db

    _handlers = {
        OP_MTU_REQ: h_mtu,
        OP_FIND_INFO_REQ: h_find_info,
        OP_FIND_BY_TYPE_REQ: h_find_by_type,
        OP_READ_BY_TYPE_REQ: h_read_by_type,
        OP_READ_REQ: h_read,
        OP_READ_BLOB_REQ: h_read_blob,
        OP_READ_MULTI_REQ: h_read_multi,
        OP_READ_MULTI_VAR_REQ: h_read_multi_var,
        OP_READ_BY_GROUP_REQ: h_read_by_group,
        OP_WRITE_REQ: h_write,
        OP_WRITE_CMD: h_write_cmd,
        OP_PREPARE_WRITE_REQ: h_prepare,
        OP_EXECUTE_WRITE_REQ: h_execute,
    }
