"""An independent Nordic nRF7 Wi-Fi provisioning device (PROTOCOLS.md section 5, proto2).

GATT table (this firmware's own handles):
  0x0001 GAP 0x1800: Device Name, Appearance
  0x0006 GATT 0x1801: Service Changed (indicate, CCCD)
  0x000a Device Information 0x180A: Manufacturer, Model, Firmware Revision
  0x0018 Nordic UART Service 6e400001-b5a3-f393-e0a9-e50e24dcca9e (extra): RX (write, write
         without response), TX (notify, CCCD): a tiny shell ("version", "status", else echo)
  0x0020 Wi-Fi provisioning 14387800-130c-49e7-b877-2881c89cb258:
         Info ...801 (read: Info{version=1}), Control Point ...802 (write + indicate, CCCD),
         Data Out ...803 (notify, CCCD)

Security: the Control Point value and both CCCDs need an encrypted link; until the client
sends the unix: control message 0x00 "encrypt" they answer Insufficient Encryption (0x0F).
A Control Point write from a link that has not enabled its indications is refused with 0xFD
(CCCD improperly configured): the Response would have nowhere to go.

Responses and Results longer than MTU-3 are not sent (as Zephyr does), so at MTU 23 the scan
records and a connected GET_STATUS never arrive.
"""

import struct

from att_server import (AttError, Crash, Device, PROP_INDICATE, PROP_NOTIFY, PROP_READ,
                        PROP_WRITE, PROP_WRITE_NO_RSP, ERR_CCCD_IMPROPERLY_CONFIGURED)
from world import BAND_24, BAND_5, World

BASE = "14387%03x-130c-49e7-b877-2881c89cb258"
NUS = "6e40000%d-b5a3-f393-e0a9-e50e24dcca9e"

# OpCode
RESERVED, GET_STATUS, START_SCAN, STOP_SCAN, SET_CONFIG, FORGET_CONFIG = range(6)
# Status
SUCCESS, INVALID_ARGUMENT, INVALID_PROTO, INTERNAL_ERROR = range(4)
# ConnectionState
DISCONNECTED, AUTHENTICATION, ASSOCIATION, OBTAINING_IP, CONNECTED, CONNECTION_FAILED = range(6)
# failure reasons
AUTH_ERROR, NETWORK_NOT_FOUND, TIMEOUT, FAIL_IP, FAIL_CONN = range(5)

T_RESPONSE = 0.002
T_SCAN = 0.12
T_RECORD = 0.008
T_AUTH = 0.02
T_ASSOC = 0.02
T_IP = 0.03
T_NOT_FOUND = 0.1
T_HANDSHAKE_FAIL = 0.08
T_DHCP_FAIL = 0.2

PASSPHRASE_BUF = 64     # char passphrase[64] in the buggy firmware (see psk-64-overflow)

# ---------------------------------------------------------------------------
# A tiny protobuf codec (proto2 wire format)


class PbError(Exception):
    pass


class PbOverrun(PbError):
    """A length-delimited field whose length runs past the end of its buffer."""


def enc_varint(n):
    if n < 0:
        n += 1 << 64            # int32/int64/enum negatives: ten bytes, two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_field(field, value):
    """value: int (varint), bool, bytes/str (length-delimited), or Msg (nested)."""
    if isinstance(value, bool):
        return enc_varint(field << 3) + enc_varint(int(value))
    if isinstance(value, int):
        return enc_varint(field << 3) + enc_varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, Msg):
        value = value.encode()
    return enc_varint(field << 3 | 2) + enc_varint(len(value)) + bytes(value)


class Msg:
    """An ordered list of (field, value); None values are left out."""

    def __init__(self, *fields):
        self.fields = [(f, v) for f, v in fields if v is not None]

    def encode(self):
        return b"".join(enc_field(f, v) for f, v in self.fields)


def dec_varint(buf, i):
    n = 0
    shift = 0
    while True:
        if i >= len(buf):
            raise PbError("varint runs past the end")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7
        if shift >= 70:
            raise PbError("varint longer than 10 bytes")


def decode(buf):
    """{field: [(wire type, value), ...]}; LEN values are bytes."""
    out = {}
    i = 0
    n = len(buf)
    while i < n:
        key, i = dec_varint(buf, i)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise PbError("field number 0")
        if wt == 0:
            v, i = dec_varint(buf, i)
        elif wt == 1:
            if i + 8 > n:
                raise PbError("fixed64 runs past the end")
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = dec_varint(buf, i)
            if i + ln > n:
                raise PbOverrun("field %d: length %d with %d bytes left" % (field, ln, n - i))
            v = bytes(buf[i:i + ln])
            i += ln
        elif wt == 5:
            if i + 4 > n:
                raise PbError("fixed32 runs past the end")
            v = buf[i:i + 4]
            i += 4
        else:
            raise PbError("wire type %d" % wt)
        out.setdefault(field, []).append((wt, v))
    return out


def get_int(msg, field, default=None):
    vals = msg.get(field)
    if not vals:
        return default
    wt, v = vals[-1]            # proto2: the last one wins
    if wt != 0:
        raise PbError("field %d: wire type %d for a varint" % (field, wt))
    if v >= 1 << 63:
        v -= 1 << 64
    return v


def get_bytes(msg, field, default=None):
    vals = msg.get(field)
    if not vals:
        return default
    wt, v = vals[-1]
    if wt != 2:
        raise PbError("field %d: wire type %d for bytes" % (field, wt))
    return v


def get_msg(msg, field):
    """A nested message: proto2 merges repeated occurrences (concatenation decodes as a merge)."""
    vals = msg.get(field)
    if not vals:
        return None
    parts = []
    for wt, v in vals:
        if wt != 2:
            raise PbError("field %d: wire type %d for a message" % (field, wt))
        parts.append(v)
    return decode(b"".join(parts))


def wifi_info_msg(net=None, ssid=None, bssid=None, band=None, channel=None, auth=None):
    if net is not None:
        ssid, bssid, band, channel, auth = net.ssid_bytes, net.bssid, net.band, net.channel, net.auth
    return Msg((1, ssid), (2, bssid), (3, band), (4, channel), (5, auth))


# ---------------------------------------------------------------------------


class Nrf7(Device):
    name = "nrf7"
    server_mtu = 244
    oversize = "drop"
    bugs = {
        "pb-len-overrun": "the hand-rolled Request decoder trusts a length-delimited field's length: "
                          "a length running past the end of the written value (at any nesting "
                          "level) reads out of bounds -> crash",
        "rescan-band-index": "START_SCAN while a scan is active takes the restart path, which indexes "
                             "band_channels[3] with scan_params.band unchecked: band >= 3 -> crash",
        "psk-64-overflow": "SET_CONFIG copies the passphrase into char passphrase[64] with its NUL: "
                           "a 64-byte passphrase (a valid raw PSK) -> crash",
    }

    def build_gatt(self):
        db = self.db
        db.service(0x1800)
        db.characteristic(0x2A00, PROP_READ, value=b"nRF7 Wi-Fi Prov")
        db.characteristic(0x2A01, PROP_READ, value=struct.pack("<H", 0x0000))
        db.service(0x1801)
        db.characteristic(0x2A05, PROP_INDICATE)
        db.service(0x180A)
        db.characteristic(0x2A29, PROP_READ, value=b"Nordic Semiconductor ASA")
        db.characteristic(0x2A24, PROP_READ, value=b"nRF7002 DK")
        db.characteristic(0x2A26, PROP_READ, value=b"2.6.99-indie")
        db.skip_to(0x0018)
        db.service(NUS % 1)
        db.characteristic(NUS % 2, PROP_WRITE | PROP_WRITE_NO_RSP, on_write=self.write_nus,
                          max_len=128, name="NUS RX")
        self.nus_tx = db.characteristic(NUS % 3, PROP_NOTIFY, name="NUS TX")
        db.skip_to(0x0020)
        db.service(BASE % 0x800)
        db.characteristic(BASE % 0x801, PROP_READ, value=Msg((1, 1)).encode(), name="Info")
        self.cp = db.characteristic(BASE % 0x802, PROP_WRITE | PROP_INDICATE, on_write=self.write_cp,
                                    write_enc=True, cccd_enc=True, max_len=512, name="Control Point")
        self.data_out = db.characteristic(BASE % 0x803, PROP_NOTIFY, cccd_enc=True, name="Data Out")

    def power_on(self, cause):
        self.world = World(self.seed)
        self.config = None           # dict ssid, bssid, band, channel, auth, passphrase, volatile
        self.conn_state = DISCONNECTED
        self.ip = None
        self.scan_params = None      # the last ScanParams (as a Msg) for DeviceStatus.scan_info
        self.scanning = False
        self.scan_timers = []
        self.join_timers = []
        self.scan_link = None

    # -- helpers
    def result(self, link, msg):
        if link is not None and not link.closed:
            self.notify(self.data_out, msg.encode(), link=link)

    def respond(self, link, op, status, device_status=None):
        msg = Msg((1, op), (2, status), (10, device_status))
        self.later(T_RESPONSE, self._indicate, link, msg.encode())

    def _indicate(self, link, value):
        if not link.closed:
            self.indicate(self.cp, value, link=link)

    def _cancel(self, timers):
        for t in timers:
            self.cancel(t)
        del timers[:]

    # -- NUS shell
    def write_nus(self, link, value, how):
        cmd = value.strip().decode("utf-8", "replace")
        if cmd == "version":
            out = b"nrf7-prov indie 2.6.99\n"
        elif cmd == "status":
            out = ("state %d ip %s\n" % (self.conn_state, self.ip or "-")).encode()
        else:
            out = b"> " + value[:60] + b"\n"
        self.notify(self.nus_tx, out, link=link)

    # -- Control Point
    def write_cp(self, link, value, how):
        if not link.subscribed(self.cp, 2):
            raise AttError(ERR_CCCD_IMPROPERLY_CONFIGURED)
        try:
            req = decode(value)
            op = get_int(req, 1)
            scan = get_msg(req, 10)
            cfg = get_msg(req, 11)
            if cfg is not None:
                wifi = get_msg(cfg, 1)
        except PbOverrun as e:
            if self.bug("pb-len-overrun"):
                raise Crash("pb-len-overrun", "Request decoder read past the %d-byte buffer (%s)"
                            % (len(value), e))
            self.respond(link, None, INVALID_PROTO)
            return
        except PbError:
            self.respond(link, None, INVALID_PROTO)
            return
        try:
            if op == GET_STATUS:
                self.respond(link, op, SUCCESS, self.device_status())
            elif op == START_SCAN:
                self.start_scan(link, scan)
            elif op == STOP_SCAN:
                self.stop_scan()
                self.respond(link, op, SUCCESS)
            elif op == SET_CONFIG:
                self.set_config(link, cfg)
            elif op == FORGET_CONFIG:
                self._cancel(self.join_timers)
                self.config = None
                self.conn_state = DISCONNECTED
                self.ip = None
                self.respond(link, op, SUCCESS)
            else:
                self.respond(link, op, INVALID_ARGUMENT)
        except PbError:
            self.respond(link, op, INVALID_PROTO)

    def device_status(self):
        prov = None
        if self.config is not None:
            c = self.config
            prov = wifi_info_msg(ssid=c["ssid"], bssid=c["bssid"], band=c["band"],
                                 channel=c["channel"], auth=c["auth"])
        conn = Msg((1, self.ip)) if self.conn_state == CONNECTED and self.ip else None
        return Msg((1, self.conn_state), (10, prov), (11, conn), (12, self.scan_params))

    # -- scanning
    def start_scan(self, link, scan):
        band = passive = period = group = None
        if scan is not None:
            band = get_int(scan, 1)
            passive = get_int(scan, 2)
            period = get_int(scan, 3)
            group = get_int(scan, 4)
        if self.scanning and self.bug("rescan-band-index") and band is not None and band >= 3:
            raise Crash("rescan-band-index",
                        "START_SCAN restart path: band_channels[%d] of 3" % band)
        if band is not None and not 0 <= band <= 2:
            self.respond(link, START_SCAN, INVALID_ARGUMENT)
            return
        if period is not None and not 0 <= period <= 60000:
            self.respond(link, START_SCAN, INVALID_ARGUMENT)
            return
        self._cancel(self.scan_timers)
        self.scan_params = Msg((1, band if band is not None else 0),
                               (2, bool(passive) if passive is not None else False),
                               (3, period if period is not None else 100),
                               (4, group if group is not None else 0))
        self.scanning = True
        self.scan_link = link
        self.respond(link, START_SCAN, SUCCESS)
        bands = {0: (BAND_24, BAND_5), 1: (BAND_24,), 2: (BAND_5,)}[band or 0]
        nets = self.world.visible(bands)
        for i, n in enumerate(nets):
            self.scan_timers.append(self.later(T_SCAN + i * T_RECORD, self.scan_record, link, n))

    def scan_record(self, link, net):
        rec = Msg((1, wifi_info_msg(net)), (2, net.rssi))
        self.result(link, Msg((1, rec)))

    def stop_scan(self):
        self._cancel(self.scan_timers)
        self.scanning = False
        self.scan_link = None

    # -- provisioning
    def set_config(self, link, cfg):
        if cfg is None:
            self.respond(link, SET_CONFIG, INVALID_ARGUMENT)
            return
        wifi = get_msg(cfg, 1)
        passphrase = get_bytes(cfg, 2, b"")
        volatile = get_int(cfg, 3, 0)
        if wifi is None:
            self.respond(link, SET_CONFIG, INVALID_ARGUMENT)
            return
        ssid = get_bytes(wifi, 1, b"")
        bssid = get_bytes(wifi, 2)
        band = get_int(wifi, 3)
        channel = get_int(wifi, 4)
        auth = get_int(wifi, 5)
        bad = (not 1 <= len(ssid) <= 32 or len(passphrase) > 64
               or (bssid is not None and len(bssid) != 6)
               or (band is not None and not 0 <= band <= 2)
               or (channel is not None and not 0 <= channel <= 233)
               or (auth is not None and not 0 <= auth <= 12)
               or volatile not in (0, 1))
        if not bad and len(passphrase) == PASSPHRASE_BUF and self.bug("psk-64-overflow"):
            raise Crash("psk-64-overflow", "strcpy of a 64-byte passphrase into passphrase[64]")
        if bad:
            self.respond(link, SET_CONFIG, INVALID_ARGUMENT)
            return
        self._cancel(self.join_timers)
        self.config = {"ssid": ssid, "bssid": bssid, "band": band, "channel": channel,
                       "auth": auth, "passphrase": passphrase, "volatile": bool(volatile)}
        self.conn_state = DISCONNECTED
        self.ip = None
        self.respond(link, SET_CONFIG, SUCCESS)
        bands = {None: (BAND_24, BAND_5), 0: (BAND_24, BAND_5), 1: (BAND_24,), 2: (BAND_5,)}[band]
        outcome, net = self.world.join(ssid, passphrase, bands)
        t0 = T_RESPONSE * 2
        if outcome == "not-found":
            self._step(link, t0 + T_NOT_FOUND, CONNECTION_FAILED, NETWORK_NOT_FOUND)
            return
        self._step(link, t0 + T_AUTH, AUTHENTICATION)
        self._step(link, t0 + T_AUTH + T_ASSOC, ASSOCIATION)
        if outcome == "auth":
            self._step(link, t0 + T_AUTH + T_ASSOC + T_HANDSHAKE_FAIL, CONNECTION_FAILED, AUTH_ERROR)
            return
        self._step(link, t0 + T_AUTH + T_ASSOC + 0.01, OBTAINING_IP)
        if outcome == "no-ip":
            self._step(link, t0 + T_AUTH + T_ASSOC + 0.01 + T_DHCP_FAIL, CONNECTION_FAILED, FAIL_IP)
            return
        self.ip = bytes([192, 168, 1, self.world.ip_last])
        self._step(link, t0 + T_AUTH + T_ASSOC + 0.01 + T_IP, CONNECTED)

    def _step(self, link, delay, state, reason=None):
        self.join_timers.append(self.later(delay, self._enter, link, state, reason))

    def _enter(self, link, state, reason):
        self.conn_state = state
        self.result(link, Msg((2, state), (3, reason)))

    # -- links
    def link_down(self, link):
        if self.scan_link is link:
            self.stop_scan()
