"""An independent room sensor that scans Wi-Fi for the phone (PROTOCOLS.md section 4).

GATT table (this firmware's own handles):
  0x0001 GAP 0x1800: Device Name, Appearance
  0x0006 GATT 0x1801: Service Changed (indicate, CCCD)
  0x0010 Device Information 0x180A: Manufacturer, Model, Firmware Revision
  0x0018 Battery 0x180F: Battery Level (read, notify, CCCD)
  0x0030 Sensor service 12345678-9abc-def0-1234-0000000000a0:
         Beacon minor ...0003 (read/write, u16), Room name ...0004 (read/write, 1-24 bytes),
         Wi-Fi scan 12345678-9ABC-DEF0-1234-000000000008 (write + notify, CCCD)
  0x0040 Environmental Sensing 0x181A: Temperature 0x2A6E (read, notify, CCCD)

Scan: write "SCAN" (a trailing NUL, LF or CR LF is tolerated; anything else is answered
with application error 0x80; over 20 bytes 0x0D). After about 0.15 s the answer goes, as
notifications to the link that asked (only while it is subscribed), one line per network
`SSID,RSSI\\n`, 2.4 GHz networks only, strongest first, at most 10.

Chunking convention of this firmware: each notification carries at most MTU-3 bytes. Whole
lines are packed; when the next line (with room for a marker) no longer fits, the chunk is
closed with the line `MORE`; the last chunk ends with the line `END`. A line too long for an
empty chunk (small MTUs) is split: the chunk is filled to MTU-3 bytes with no marker and the
line continues in the next one. Every marker is glued to the end of a chunk; none is sent alone.
A new SCAN while an answer is pending restarts the scan (the old answer stays without END).
"""

import struct

from att_server import (AttError, Crash, Device, PROP_INDICATE, PROP_NOTIFY, PROP_READ,
                        PROP_WRITE, ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
from world import BAND_24, World

SCAN_UUID = "12345678-9ABC-DEF0-1234-000000000008"
SENSOR_SERVICE = "12345678-9abc-def0-1234-0000000000a0"
APP_INVALID = 0x80

T_SCAN = 0.15       # the radio's scan
T_GAP = 0.003       # between notifications
MAX_NETWORKS = 10
MAX_RESULTS_ARRAY = 12


def scan_lines(world):
    nets = [n for n in world.visible((BAND_24,))][:MAX_NETWORKS]
    return [n.ssid_bytes + b"," + str(n.rssi).encode() + b"\n" for n in nets]


def chunk_answer(lines, payload, end_room_bug=False):
    """The notifications of one answer for a payload of `payload` (= MTU-3) bytes."""
    out = []
    cur = b""
    queue = list(lines)
    while queue:
        line = queue.pop(0)
        if not line:
            continue
        last = not queue
        if last:
            # "END\n" is 4 bytes; the buggy firmware reserves strlen("END") only
            reserve = 3 if end_room_bug else 4
        else:
            reserve = 5     # "MORE\n"
        if len(cur) + len(line) + reserve <= payload:
            cur += line
            continue
        if cur:
            out.append(cur + b"MORE\n")
            cur = b""
            queue.insert(0, line)
            continue
        out.append(line[:payload])          # a line longer than a chunk: split it
        queue.insert(0, line[payload:])
    out.append(cur + b"END\n")
    return out


class Sensor(Device):
    name = "sensor"
    server_mtu = 247
    oversize = "drop"
    bugs = {
        "end-marker-room": "the last chunk reserves 3 bytes for \"END\\n\" (strlen, not sizeof-1+1): at "
                           "MTUs where the last chunk has exactly that room the notification is MTU-2 "
                           "bytes, one over the MTU",
        "rescan-overflow": "a SCAN while the previous SCAN's answer is pending (before its END) skips "
                           "the reset of the result count and writes past results[12] -> crash",
    }

    def build_gatt(self):
        db = self.db
        db.service(0x1800)
        db.characteristic(0x2A00, PROP_READ, value=b"Robo Room Sensor")
        db.characteristic(0x2A01, PROP_READ, value=struct.pack("<H", 0x0540))
        db.service(0x1801)
        db.characteristic(0x2A05, PROP_INDICATE)
        db.skip_to(0x0010)
        db.service(0x180A)
        db.characteristic(0x2A29, PROP_READ, value=b"Robo Labs")
        db.characteristic(0x2A24, PROP_READ, value=b"RB-S1")
        db.characteristic(0x2A26, PROP_READ, value=b"0.9.4")
        db.skip_to(0x0018)
        db.service(0x180F)
        db.characteristic(0x2A19, PROP_READ | PROP_NOTIFY, on_read=lambda l, o: bytes([self.battery]))
        db.skip_to(0x0030)
        db.service(SENSOR_SERVICE)
        db.characteristic("12345678-9abc-def0-1234-000000000003", PROP_READ | PROP_WRITE,
                          on_read=lambda l, o: struct.pack("<H", self.minor),
                          on_write=self.write_minor, max_len=2, name="Beacon minor")
        db.characteristic("12345678-9abc-def0-1234-000000000004", PROP_READ | PROP_WRITE,
                          on_read=lambda l, o: self.room, on_write=self.write_room, max_len=24,
                          name="Room name")
        self.scan = db.characteristic(SCAN_UUID, PROP_WRITE | PROP_NOTIFY, on_write=self.write_scan,
                                      max_len=20, name="Wi-Fi scan")
        db.skip_to(0x0040)
        db.service(0x181A)
        self.temp = db.characteristic(0x2A6E, PROP_READ | PROP_NOTIFY,
                                      on_read=lambda l, o: struct.pack("<h", self.temperature))

    def power_on(self, cause):
        self.world = World(self.seed)
        self.battery = 92
        self.minor = 1
        self.room = b"Unassigned"
        self.temperature = 2137
        self.result_count = 0        # entries in results[MAX_RESULTS_ARRAY]
        self.pending = None          # (link, [timers]) of the answer in progress

    def write_minor(self, link, value, how):
        if len(value) != 2:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        self.minor = struct.unpack("<H", value)[0]

    def write_room(self, link, value, how):
        if not value:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise AttError(APP_INVALID)
        self.room = value

    def write_scan(self, link, value, how):
        if value not in (b"SCAN", b"SCAN\x00", b"SCAN\n", b"SCAN\r\n"):
            raise AttError(APP_INVALID)
        if self.pending is not None:
            if self.bug("rescan-overflow"):
                # scan_start() skips "result_count = 0" when a scan is already pending and
                # re-queues the pending scan's results behind the ones already counted
                count = max(self.result_count, MAX_NETWORKS) + len(scan_lines(self.world))
                raise Crash("rescan-overflow",
                            "SCAN while an answer is pending: results[%d] written at index %d"
                            % (MAX_RESULTS_ARRAY, count - 1))
            self._abort()
        self.result_count = 0
        timers = [self.later(T_SCAN, self.scan_done, link)]
        self.pending = (link, timers)

    def _abort(self):
        if self.pending is not None:
            for t in self.pending[1]:
                self.cancel(t)
        self.pending = None

    def scan_done(self, link):
        lines = scan_lines(self.world)
        self.result_count = len(lines)
        if link.closed:
            self.pending = None
            return
        chunks = chunk_answer(lines, link.mtu - 3, self.bug("end-marker-room"))
        timers = []
        for i, c in enumerate(chunks):
            timers.append(self.later(T_GAP * (i + 1), self.send_chunk, link, c, i == len(chunks) - 1))
        self.pending = (link, timers)

    def send_chunk(self, link, chunk, last):
        if not link.closed:
            # raw: the firmware hands the buffer to the stack as it computed it
            self.notify(self.scan, chunk, link=link, raw=True)
        if last:
            self.pending = None

    def link_down(self, link):
        if self.pending is not None and self.pending[0] is link:
            self._abort()
