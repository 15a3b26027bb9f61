"""An Improv Wi-Fi device on Bumble's own GATT server, written from the Improv BLE spec
(https://www.improv-wifi.com/ble/), not from GATTLab's emulator.

One service, five characteristics; frames are command, data length, data, checksum (the low
byte of the sum of the bytes before it); the data of every command and result is a list of
length-prefixed strings. Commands are joined from several writes until their length is reached.

Used by make_capture.py (a phone app drives it on a virtual clock, for captures) and by
unix_peripheral.py (GATTLab drives it live over the unix: transport; docs/bumble.md). Only the
standard library and bumble.
"""

from __future__ import annotations

import asyncio
import json
import logging

from bumble.core import AdvertisingData, UUID
from bumble.gatt import Characteristic, CharacteristicValue, Service

log = logging.getLogger("improv")

IMPROV_SERVICE = "00467768-6228-2272-4663-277478268000"
IMPROV_STATE = "00467768-6228-2272-4663-277478268001"
IMPROV_ERROR = "00467768-6228-2272-4663-277478268002"
IMPROV_RPC = "00467768-6228-2272-4663-277478268003"
IMPROV_RESULT = "00467768-6228-2272-4663-277478268004"
IMPROV_CAPS = "00467768-6228-2272-4663-277478268005"

AUTHORIZATION_REQUIRED, AUTHORIZED, PROVISIONING, PROVISIONED = 0x01, 0x02, 0x03, 0x04
INVALID_RPC_PACKET, UNKNOWN_RPC_COMMAND, UNABLE_TO_CONNECT, NOT_AUTHORIZED = 0x01, 0x02, 0x03, 0x04
WIFI_SETTINGS, IDENTIFY, GET_DEVICE_INFO, GET_WIFI_NETWORKS = 0x01, 0x02, 0x03, 0x04
CAP_IDENTIFY, CAP_DEVICE_INFO, CAP_SCAN = 0x01, 0x02, 0x04

# What a scan result says about a network's security (nRF7 auth numbering, as the JSON worlds of
# Tests/IndependentDevices/worlds use it).
AUTH_NAMES = {0: "NO", 1: "WEP", 2: "WPA", 3: "WPA2", 4: "WPA/WPA2", 5: "WPA2 EAP", 6: "WPA3"}


def improv_frame(command: int, strings: list[bytes]) -> bytes:
    data = b"".join(bytes([len(x)]) + x for x in strings)
    body = bytes([command, len(data)]) + data
    return body + bytes([sum(body) & 0xFF])


class Network:
    def __init__(self, ssid: str, rssi: int, auth: int = 3, password: str | None = "", band: int = 1):
        self.ssid, self.rssi, self.auth, self.password, self.band = ssid, rssi, auth, password, band

    def joins(self, password: bytes) -> bool:
        if self.password is None:  # enterprise: a PSK client cannot join
            return False
        return self.auth == 0 or password == self.password.encode()


def load_world(path: str) -> list[Network]:
    """A JSON list of networks (Tests/IndependentDevices/worlds format: ssid, rssi, auth,
    password, band 1 = 2.4 GHz / 2 = 5 GHz). The ESP32 sees and joins 2.4 GHz only; the list is
    scanned strongest first."""
    with open(path, encoding="utf-8") as f:
        items = json.load(f)
    nets = [Network(i["ssid"], int(i["rssi"]), i.get("auth", 3), i.get("password", ""), i.get("band", 1)) for i in items]
    return sorted([n for n in nets if n.band == 1], key=lambda n: -n.rssi)


class Crash(Exception):
    """A planted firmware bug fired: the device resets (the owner drops the links and reboots)."""

    def __init__(self, bug: str, detail: str):
        super().__init__(f"{bug}: {detail}")
        self.bug, self.detail = bug, detail


class ImprovDevice:
    """The Improv application: its characteristics, state and command handling.

    pause(ms): a coroutine that lets device time pass (virtual in captures, scaled wall time
    live). notify(connection, characteristic, value): sends a notification (awaitable).
    authorization: "none" (starts AUTHORIZED, an ESPHome device without an authorizer),
    "button" (starts AUTHORIZATION_REQUIRED; press_button() authorizes), or "never".
    bugs: planted firmware bugs (unix_peripheral.py documents them); on_crash(bug, detail) is
    called instead of answering when one fires.
    """

    def __init__(self, *, pause, notify, authorization="button", capabilities=CAP_IDENTIFY | CAP_DEVICE_INFO,
                 world: list[Network] | None = None, url: str = "http://bumble-improv.local/setup",
                 info=(b"bumble-improv", b"1.0.0", b"Bumble", b"bumble-light"), bugs=(), on_crash=None,
                 join_ms=2500, fail_ms=3000, button_after_ms=None):
        self.pause, self._notify = pause, notify
        self.authorization = authorization
        self.capabilities = capabilities
        self.world = world or []
        self.url, self.info = url, info
        self.bugs = set(bugs)
        self.on_crash = on_crash
        self.join_ms, self.fail_ms = join_ms, fail_ms
        # The user presses the button this long after the app read AUTHORIZATION_REQUIRED (and
        # showed "press the button"); None: only press_button() does.
        self.button_after_ms = button_after_ms
        self.generation = 0
        self.power_on()
        readable = Characteristic.Properties.READ | Characteristic.Properties.NOTIFY
        self.state_char = Characteristic(IMPROV_STATE, readable, Characteristic.READABLE,
                                         CharacteristicValue(read=self.read_state))
        self.error_char = Characteristic(IMPROV_ERROR, readable, Characteristic.READABLE,
                                         CharacteristicValue(read=lambda c: bytes([self.error])))
        self.rpc_char = Characteristic(IMPROV_RPC, Characteristic.Properties.WRITE, Characteristic.WRITEABLE,
                                       CharacteristicValue(write=self.on_rpc))
        self.result_char = Characteristic(IMPROV_RESULT, readable, Characteristic.READABLE, b"")
        self.caps_char = Characteristic(IMPROV_CAPS, Characteristic.Properties.READ, Characteristic.READABLE,
                                        bytes([capabilities]))
        self.service = Service(IMPROV_SERVICE, [self.state_char, self.error_char, self.rpc_char, self.result_char, self.caps_char])

    def read_state(self, connection) -> bytes:
        if self.state == AUTHORIZATION_REQUIRED and self.authorization == "button" and self.button_after_ms is not None:
            generation = self.generation

            async def press():
                await self.pause(self.button_after_ms)
                if generation == self.generation:
                    await self.press_button(connection)
            asyncio.get_running_loop().create_task(press())
        return bytes([self.state])

    def power_on(self) -> None:
        """The state after a (re)boot: tasks of the last boot are forgotten."""
        self.generation += 1
        self.state = AUTHORIZED if self.authorization == "none" else AUTHORIZATION_REQUIRED
        self.error = 0x00
        self.held: dict = {}  # per connection: the pieces of a command written so far

    def advertising_data(self, name: bytes) -> tuple[bytes, bytes]:
        """The advertisement lists the service and carries the 0x4677 service data: state,
        capabilities, 4 zero bytes; the scan response the name."""
        ad = AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(IMPROV_SERVICE))),
            (AdvertisingData.SERVICE_DATA_16_BIT_UUID, bytes([0x77, 0x46, self.state, self.capabilities, 0, 0, 0, 0])),
        ])
        return bytes(ad), bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name)]))

    async def notify(self, connection, char, value: bytes, after_ms: int = 0, generation: int | None = None) -> None:
        if after_ms:
            await self.pause(after_ms)
        if generation is not None and generation != self.generation:
            return  # the device rebooted meanwhile
        await self._notify(connection, char, value)

    async def set_state(self, connection, state: int, after_ms: int = 0, generation: int | None = None) -> None:
        if after_ms:
            await self.pause(after_ms)
        if generation is not None and generation != self.generation:
            return
        self.state = state
        await self._notify(connection, self.state_char, bytes([state]))

    async def set_error(self, connection, error: int, after_ms: int = 0, generation: int | None = None) -> None:
        if after_ms:
            await self.pause(after_ms)
        if generation is not None and generation != self.generation:
            return
        self.error = error
        await self._notify(connection, self.error_char, bytes([error]))

    async def press_button(self, connection) -> None:
        """The user presses the device's button."""
        if self.state == AUTHORIZATION_REQUIRED and self.authorization != "never":
            await self.set_state(connection, AUTHORIZED)

    def disconnected(self, connection) -> None:
        self.held.pop(id(connection), None)

    # ------------------------------------------------------------------ commands

    def on_rpc(self, connection, value):
        held = self.held.get(id(connection), b"") + bytes(value)
        if len(held) >= 2 and len(held) >= held[1] + 3:
            self.held.pop(id(connection), None)
            frame = held[:held[1] + 3]
            try:
                self.check_crash(frame)
            except Crash as crash:
                if self.on_crash is None:
                    raise
                self.on_crash(crash.bug, crash.detail)
                # The firmware is gone: the write is never answered (Bumble awaits this forever).
                return asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().create_task(self.command(connection, frame, self.generation))
        else:
            self.held[id(connection)] = held

    def check_crash(self, frame: bytes) -> None:
        """The planted bugs: what C firmware does with the frame before it answers."""
        if frame[0] != WIFI_SETTINGS or frame[-1] != sum(frame[:-1]) & 0xFF:
            return
        data = frame[2:-1]
        if "settings-length-overrun" in self.bugs:
            # ssid_len = data[0]; memcpy(ssid, &data[1], ssid_len); pass_len = data[1 + ssid_len]:
            # the lengths are trusted, so a string running past the frame reads past the buffer.
            n = data[0] if data else 0
            if not data or 1 + n >= len(data) or 2 + n + data[1 + n] > len(data):
                raise Crash("settings-length-overrun",
                            f"WIFI_SETTINGS with {len(data)} data bytes whose string lengths run past them")
        if "ssid-exact-32" in self.bugs and self.state != AUTHORIZATION_REQUIRED:
            strings = self.strings(data)
            if strings and len(strings[0]) == 32:
                # char ssid[32]; memcpy(ssid, s, n); ssid[n] = 0;
                raise Crash("ssid-exact-32", "an SSID of exactly 32 bytes: its terminator lands past ssid[32]")

    @staticmethod
    def strings(data: bytes) -> list[bytes] | None:
        """The length-prefixed strings of a command's data; None when they do not fill it exactly."""
        out, i = [], 0
        while i < len(data):
            n = data[i]
            if i + 1 + n > len(data):
                return None
            out.append(data[i + 1:i + 1 + n])
            i += 1 + n
        return out

    async def command(self, connection, frame: bytes, generation: int) -> None:
        if generation != self.generation:
            return
        if frame[-1] != sum(frame[:-1]) & 0xFF:
            await self.set_error(connection, INVALID_RPC_PACKET)
            return
        command = frame[0]
        strings = self.strings(frame[2:-1])
        if command == GET_DEVICE_INFO and self.capabilities & CAP_DEVICE_INFO:
            await self.notify(connection, self.result_char, improv_frame(GET_DEVICE_INFO, list(self.info)))
        elif command == IDENTIFY and self.capabilities & CAP_IDENTIFY:
            log.info("identify: blink")
        elif command == GET_WIFI_NETWORKS and self.capabilities & CAP_SCAN:
            await self.pause(1200)
            for n in self.world:
                name = AUTH_NAMES.get(n.auth, "WPA2").encode()
                await self.notify(connection, self.result_char,
                                  improv_frame(GET_WIFI_NETWORKS, [n.ssid.encode(), str(n.rssi).encode(), name]),
                                  after_ms=40, generation=generation)
            await self.notify(connection, self.result_char, improv_frame(GET_WIFI_NETWORKS, []), after_ms=30, generation=generation)
        elif command == WIFI_SETTINGS:
            if strings is None or len(strings) != 2:
                await self.set_error(connection, INVALID_RPC_PACKET)
                return
            if self.state == AUTHORIZATION_REQUIRED:
                await self.set_error(connection, NOT_AUTHORIZED)
                return
            ssid, password = strings
            await self.set_state(connection, PROVISIONING, 100, generation)
            network = next((n for n in self.world if n.ssid.encode() == ssid), None)
            if network is None or not network.joins(password):
                await self.set_error(connection, UNABLE_TO_CONNECT, self.fail_ms, generation)
                await self.set_state(connection, AUTHORIZED, 0, generation)
            else:
                await self.set_state(connection, PROVISIONED, self.join_ms, generation)
                await self.notify(connection, self.result_char, improv_frame(WIFI_SETTINGS, [self.url.encode()]), generation=generation)
        else:
            await self.set_error(connection, UNKNOWN_RPC_COMMAND)
