"""An independent ChaoticVolt-style speaker with Wi-Fi OTA (PROTOCOLS.md section 3).

GATT table (handles are this firmware's own):
  0x0001 GAP 0x1800: Device Name, Appearance, Peripheral Preferred Connection Parameters
  0x0008 GATT 0x1801: Service Changed (indicate, CCCD)
  0x000c Device Information 0x180A: Manufacturer, Model, Firmware Revision, Software Revision
  0x0015 Battery 0x180F: Battery Level (read, notify, CCCD)
  0x0020 DSP service 7d2e0001-5c1a-4a8f-b3e6-9d40c0ffee01 (vendor):
         EQ preset (read/write, 1 byte), Volume (read/write/notify, 1 byte),
         Preset name (read/write, 0-20 bytes, with a 0x2901 description)
  0x0040 OTA service 00000001-1234-5678-9ABC-DEF012345678:
         OTA_CREDENTIALS ...0005 (write), OTA_URL ...0006 (write),
         OTA_CONTROL ...0007 (write), OTA_STATUS ...0008 (read, notify, CCCD)

OTA errors this firmware answers at the ATT level:
  0x0D Invalid Attribute Value Length: credentials over 98 bytes, SSID 0 or over 32 bytes,
       password over 64, URL empty or over 256 bytes, control not exactly 2 bytes
  0x80 invalid value: credentials without the NUL separator, text that is not UTF-8,
       a URL that is not http:// or https://, an unknown command, START's parameter over 2
  0x81 busy: credentials, URL or START while an update runs (WIFI_CONNECTING..VERIFYING)
       or while the new image waits for VALIDATE
"""

import struct

from att_server import (AttError, Crash, Device, Hang, PROP_INDICATE, PROP_NOTIFY,
                        PROP_READ, PROP_WRITE, PROP_WRITE_NO_RSP,
                        ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
from world import BAND_24, World

OTA_BASE = "0000000%d-1234-5678-9ABC-DEF012345678"
DSP_SERVICE = "7d2e0001-5c1a-4a8f-b3e6-9d40c0ffee01"

IDLE, CREDS_RECEIVED, URL_RECEIVED, WIFI_CONNECTING, WIFI_CONNECTED, DOWNLOADING, \
    VERIFYING, SUCCESS, PENDING_VERIFY = range(9)
ERROR = 0xFF
STATE_NAMES = {0: "IDLE", 1: "CREDS_RECEIVED", 2: "URL_RECEIVED", 3: "WIFI_CONNECTING",
               4: "WIFI_CONNECTED", 5: "DOWNLOADING", 6: "VERIFYING", 7: "SUCCESS",
               8: "PENDING_VERIFY", 0xFF: "ERROR"}
E_NONE, E_WIFI_CONNECT, E_HTTP_CONNECT, E_HTTP_RESPONSE, E_DOWNLOAD, E_VERIFY, E_WRITE, \
    E_NO_CREDENTIALS, E_NO_URL, E_INVALID_IMAGE, E_CANCELLED, E_ROLLBACK_FAILED = range(12)

CMD_START, CMD_CANCEL, CMD_REBOOT, CMD_GET_VERSION, CMD_ROLLBACK, CMD_VALIDATE = range(0x10, 0x16)

APP_INVALID = 0x80
APP_BUSY = 0x81

BUSY_STATES = (WIFI_CONNECTING, WIFI_CONNECTED, DOWNLOADING, VERIFYING)

# compressed timing, seconds of wall time (times --time-scale)
T_WIFI = 0.04
T_HTTP = 0.02
T_CHUNK = 0.02          # ten progress steps: the download takes 0.2 s
T_VERIFY = 0.03
ROLLBACK_AFTER = 3.0    # after the first connection to an unvalidated image

IMAGE_KB = 1216
FACTORY_VERSION = "2.3.7"

# the firmware's configuration block, as laid out in RAM (see bug preset-blob-leak)
NAME_SIZE, SSID_SIZE, PASS_SIZE = 20, 33, 65


class Speaker(Device):
    name = "speaker"
    server_mtu = 185
    oversize = "drop"
    bugs = {
        "ssid-exact-32": "credentials: an SSID of exactly 32 bytes overflows ssid[32] with its NUL -> crash",
        "start-slot-index": "START's parameter indexes a 3-entry partition table unchecked once the URL "
                            "was accepted: START with parameter >= 3 in URL_RECEIVED -> crash",
        "status-cccd-index": "OTA_STATUS CCCD value indexes a 3-entry handler table: a value >= 3 "
                             "(0x0003, 0xFFFF) -> hang",
        "preset-blob-leak": "Read Blob of the preset name is bounded by the whole config block, not the "
                            "name: returns the stored Wi-Fi SSID and password",
    }

    def __init__(self, *a, **kw):
        self.flash = {"running": FACTORY_VERSION, "previous": None, "pending_verify": False,
                      "pending_version": None}
        super().__init__(*a, **kw)

    # ------------------------------------------------------------------ GATT
    def build_gatt(self):
        db = self.db
        db.service(0x1800)
        db.characteristic(0x2A00, PROP_READ, value=b"CV Soundbar S42")
        db.characteristic(0x2A01, PROP_READ, value=struct.pack("<H", 0x0841))  # standalone speaker
        db.characteristic(0x2A04, PROP_READ, value=struct.pack("<HHHH", 24, 40, 0, 400))
        db.service(0x1801)
        self.service_changed = db.characteristic(0x2A05, PROP_INDICATE, value=b"")
        db.service(0x180A)
        db.characteristic(0x2A29, PROP_READ, value=b"ChaoticVolt")
        db.characteristic(0x2A24, PROP_READ, value=b"S42")
        db.characteristic(0x2A26, PROP_READ, on_read=lambda l, o: self.flash["running"].encode())
        db.characteristic(0x2A28, PROP_READ, value=b"esp-idf v5.1.2")
        db.skip_to(0x0015)
        db.service(0x180F)
        self.battery = db.characteristic(0x2A19, PROP_READ | PROP_NOTIFY,
                                         on_read=lambda l, o: bytes([self.battery_level]))
        db.skip_to(0x0020)
        db.service(DSP_SERVICE)
        self.eq = db.characteristic("7d2e0002-5c1a-4a8f-b3e6-9d40c0ffee01", PROP_READ | PROP_WRITE,
                                    on_read=lambda l, o: bytes([self.eq_preset]),
                                    on_write=self.write_eq, max_len=1, name="EQ preset")
        self.volume = db.characteristic("7d2e0003-5c1a-4a8f-b3e6-9d40c0ffee01",
                                        PROP_READ | PROP_WRITE | PROP_WRITE_NO_RSP | PROP_NOTIFY,
                                        on_read=lambda l, o: bytes([self.volume_level]),
                                        on_write=self.write_volume, max_len=1, name="Volume")
        self.preset = db.characteristic("7d2e0004-5c1a-4a8f-b3e6-9d40c0ffee01", PROP_READ | PROP_WRITE,
                                        on_read=self.read_preset_name, on_write=self.write_preset_name,
                                        max_len=NAME_SIZE, description="Preset name", name="Preset name")
        db.skip_to(0x0040)
        db.service(OTA_BASE % 1)
        self.creds = db.characteristic(OTA_BASE % 5, PROP_WRITE, on_write=self.write_credentials,
                                       max_len=98, name="OTA_CREDENTIALS")
        self.url = db.characteristic(OTA_BASE % 6, PROP_WRITE, on_write=self.write_url,
                                     max_len=258, name="OTA_URL")
        self.control = db.characteristic(OTA_BASE % 7, PROP_WRITE, on_write=self.write_control,
                                         max_len=2, name="OTA_CONTROL")
        self.status = db.characteristic(OTA_BASE % 8, PROP_READ | PROP_NOTIFY,
                                        on_read=lambda l, o: self.status_bytes(), name="OTA_STATUS")

    # ------------------------------------------------------------------ state
    def power_on(self, cause):
        self.world = World(self.seed)
        self.state = IDLE
        self.error = E_NONE
        self.progress = 0
        self.kb = 0
        self.total = 0
        self.rssi = 0
        self.ssid = None
        self.password = None
        self.url_text = None
        self.slot = 0
        self.job = None            # the running OTA step's timer
        self.rollback_timer = None
        self.reboot_pending = None
        self.battery_level = 87
        self.eq_preset = 0
        self.volume_level = 35
        # RAM configuration block: name[20] ssid[33] pass[65], zeroed at boot
        self.cfg = bytearray(NAME_SIZE + SSID_SIZE + PASS_SIZE)
        self.cfg[0:4] = b"Flat"
        self.preset_len = 4
        f = self.flash
        if cause == "fault":
            # the new image is committed by REBOOT only; an unvalidated image that
            # crashed is rolled back by the bootloader
            f["pending_version"] = None
            if f["pending_verify"]:
                f["running"], f["previous"] = f["previous"], None
                f["pending_verify"] = False
        if f["pending_version"] is not None:      # REBOOT after SUCCESS: boot the new image
            f["previous"], f["running"] = f["running"], f["pending_version"]
            f["pending_version"] = None
            f["pending_verify"] = True
        if f["pending_verify"]:
            self.state = PENDING_VERIFY

    def link_up(self, link):
        if self.state == PENDING_VERIFY and self.rollback_timer is None:
            self.rollback_timer = self.later(ROLLBACK_AFTER, self.auto_rollback)

    def status_bytes(self):
        return struct.pack("<BBBHHb", self.state, self.error, self.progress, self.kb,
                           self.total, self.rssi)

    def set_state(self, state, error=E_NONE):
        self.state = state
        self.error = error
        self.notify_status()

    def notify_status(self):
        # queued behind the Write Response of the write that caused it, as the firmware's
        # event task sends it after the GATT callback returned
        self.later(0, self.notify, self.status, self.status_bytes())

    def stop_job(self):
        self.cancel(self.job)
        self.job = None

    def fail(self, error):
        self.stop_job()
        self.set_state(ERROR, error)

    # ------------------------------------------------------------------ DSP
    def write_eq(self, link, value, how):
        if len(value) != 1:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        if value[0] > 7:
            raise AttError(APP_INVALID)
        self.eq_preset = value[0]

    def write_volume(self, link, value, how):
        if len(value) != 1:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        if value[0] > 100:
            raise AttError(APP_INVALID)
        self.volume_level = value[0]
        self.notify(self.volume, value)

    def write_preset_name(self, link, value, how):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise AttError(APP_INVALID)
        if b"\x00" in value:
            raise AttError(APP_INVALID)
        self.cfg[0:NAME_SIZE] = value.ljust(NAME_SIZE, b"\x00")
        self.preset_len = len(value)

    def read_preset_name(self, link, offset):
        if offset and self.bug("preset-blob-leak"):
            # memcpy(rsp, &cfg.name[offset], MIN(mtu - 1, sizeof(cfg) - offset)):
            # the blob path was copied from a reader of the whole block
            return bytes(self.cfg)
        return bytes(self.cfg[0:self.preset_len])

    # ------------------------------------------------------------------ OTA writes
    def _check_not_busy(self):
        if self.state in BUSY_STATES or self.state == PENDING_VERIFY:
            raise AttError(APP_BUSY)

    def write_credentials(self, link, value, how):
        if len(value) > 98:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        sep = value.find(b"\x00")
        if sep < 0:
            raise AttError(APP_INVALID)
        ssid, password = value[:sep], value[sep + 1:]
        if password.endswith(b"\x00"):       # a terminating NUL after the password is tolerated
            password = password[:-1]
        if not 1 <= len(ssid) <= 32 or len(password) > 64:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        if b"\x00" in password:
            raise AttError(APP_INVALID)
        try:
            ssid.decode("utf-8")
            password.decode("utf-8")
        except UnicodeDecodeError:
            raise AttError(APP_INVALID)
        self._check_not_busy()
        if len(ssid) == 32 and self.bug("ssid-exact-32"):
            # char ssid[32]; memcpy(ssid, v, n); ssid[n] = 0;  -- the NUL lands on the saved LR
            raise Crash("ssid-exact-32", "32-byte SSID %r: ssid[32] written past its end" % ssid[:8])
        self.ssid, self.password = ssid, password
        self.cfg[NAME_SIZE:NAME_SIZE + SSID_SIZE] = ssid.ljust(SSID_SIZE, b"\x00")
        self.cfg[NAME_SIZE + SSID_SIZE:] = password.ljust(PASS_SIZE, b"\x00")
        self.set_state(CREDS_RECEIVED)

    def write_url(self, link, value, how):
        if len(value) > 258:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        url = value.rstrip(b"\x00")
        if not 1 <= len(url) <= 256:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        if b"\x00" in url:
            raise AttError(APP_INVALID)
        try:
            text = url.decode("utf-8")
        except UnicodeDecodeError:
            raise AttError(APP_INVALID)
        lower = text.lower()
        if not (lower.startswith("http://") or lower.startswith("https://")) or \
                len(text.split("://", 1)[1].split("/", 1)[0]) == 0:
            raise AttError(APP_INVALID)
        self._check_not_busy()
        self.url_text = text
        self.set_state(URL_RECEIVED)

    def write_control(self, link, value, how):
        if len(value) != 2:
            raise AttError(ERR_INVALID_ATTRIBUTE_VALUE_LENGTH)
        cmd, param = value[0], value[1]
        if cmd == CMD_START:
            self.cmd_start(param)
        elif cmd == CMD_CANCEL:
            if self.state in (CREDS_RECEIVED, URL_RECEIVED) + BUSY_STATES:
                self.fail(E_CANCELLED)
            else:
                self.notify_status()
        elif cmd == CMD_REBOOT:
            self.reboot_pending = link
        elif cmd == CMD_GET_VERSION:
            # the version is in Device Information; GET_VERSION re-sends the status
            self.notify_status()
        elif cmd == CMD_ROLLBACK:
            self.cmd_rollback()
        elif cmd == CMD_VALIDATE:
            if self.state == PENDING_VERIFY:
                self.flash["pending_verify"] = False
                self.flash["previous"] = None
                self.cancel(self.rollback_timer)
                self.rollback_timer = None
                self.set_state(IDLE)
            else:
                self.notify_status()
        else:
            raise AttError(APP_INVALID)

    def after_write_response(self, link, attr):
        if self.reboot_pending is not None and attr.handle == self.control.value_handle:
            self.reboot_pending = None
            self.stop_job()
            self.server.reboot("REBOOT command" + (" into %s" % self.flash["pending_version"]
                                                   if self.flash["pending_version"] else ""))

    # ------------------------------------------------------------------ OTA flow
    def cmd_start(self, param):
        if self.state in BUSY_STATES or self.state == PENDING_VERIFY:
            raise AttError(APP_BUSY)
        if self.bug("start-slot-index"):
            # the shipped firmware never checks the parameter; the table lookup
            # only happens once credentials and URL are there
            if self.ssid is not None and self.url_text is not None and self.state == URL_RECEIVED \
                    and param >= 3:
                raise Crash("start-slot-index",
                            "START parameter %d indexes partition_table[3] in URL_RECEIVED" % param)
        elif param > 2:
            raise AttError(APP_INVALID)
        if self.ssid is None:
            self.fail(E_NO_CREDENTIALS)
            return
        if self.url_text is None:
            self.fail(E_NO_URL)
            return
        self.slot = param if param <= 2 else 0
        self.progress, self.kb, self.rssi, self.total = 0, 0, 0, 0
        self.set_state(WIFI_CONNECTING)
        self.job = self.later(T_WIFI, self.step_wifi)

    def step_wifi(self):
        outcome, net = self.world.join(self.ssid, self.password, bands=(BAND_24,))
        if outcome != "ok":
            self.fail(E_WIFI_CONNECT)
            return
        self.rssi = net.rssi
        self.set_state(WIFI_CONNECTED)
        self.job = self.later(T_HTTP, self.step_http)

    def step_http(self):
        rest = self.url_text.split("://", 1)[1]
        host = rest.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0].lower()
        path = rest[len(rest.split("/", 1)[0]):].lower()
        if host.endswith(".invalid") or host.endswith(".local") or host in ("localhost", "0.0.0.0"):
            self.fail(E_HTTP_CONNECT)
            return
        if "404" in path or "missing" in path:
            self.fail(E_HTTP_RESPONSE)
            return
        self.progress, self.kb, self.total = 0, 0, IMAGE_KB
        self.set_state(DOWNLOADING)
        self.job = self.later(T_CHUNK, self.step_download)

    def step_download(self):
        path = self.url_text.lower()
        self.progress = min(100, self.progress + 10)
        self.kb = IMAGE_KB * self.progress // 100
        if "stall" in path and self.progress >= 60:
            self.fail(E_DOWNLOAD)
            return
        self.set_state(DOWNLOADING)
        if self.progress < 100:
            self.job = self.later(T_CHUNK, self.step_download)
        else:
            self.job = self.later(T_CHUNK, self.step_verify)

    def step_verify(self):
        self.set_state(VERIFYING)
        self.job = self.later(T_VERIFY, self.step_done)

    def step_done(self):
        self.job = None
        path = self.url_text.lower().split("?", 1)[0]
        if "corrupt" in path:
            self.fail(E_VERIFY)
            return
        if not path.endswith(".bin"):
            self.fail(E_INVALID_IMAGE)
            return
        self.flash["pending_version"] = self._version_from_url(path)
        self.set_state(SUCCESS)

    def _version_from_url(self, path):
        import re
        m = re.search(r"(\d+)\.(\d+)\.(\d+)", path)
        if m:
            return "%s.%s.%s" % m.groups()
        major, minor, patch = self.flash["running"].split(".")
        return "%s.%s.%d" % (major, minor, int(patch) + 1)

    def cmd_rollback(self):
        if self.state in BUSY_STATES:
            raise AttError(APP_BUSY)
        f = self.flash
        if f["previous"] is None:
            self.set_state(ERROR, E_ROLLBACK_FAILED)
            return
        f["running"], f["previous"] = f["previous"], None
        f["pending_verify"] = False
        self.cancel(self.rollback_timer)
        self.rollback_timer = None
        self.set_state(IDLE)

    def auto_rollback(self):
        self.rollback_timer = None
        if self.state != PENDING_VERIFY:
            return
        self.server.info("no VALIDATE within %.1f s: rolling back to %s" % (
            ROLLBACK_AFTER * self.time_scale, self.flash["previous"]))
        self.cmd_rollback()

    # ------------------------------------------------------------------ CCCDs
    def cccd_check(self, link, ch, value):
        if ch is self.status and self.bug("status-cccd-index"):
            # handlers[value](link): {off, notify, indicate}[value]
            if value >= 3:
                raise Hang("status-cccd-index",
                           "OTA_STATUS CCCD 0x%04x indexes handlers[3]" % value)
            return
        super().cccd_check(link, ch, value)
