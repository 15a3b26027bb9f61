#!/usr/bin/env python3
"""Captures of GATTLab's device protocols made by an independent BLE stack (Google's Bumble).

Two Bumble hosts run in one process, each on its own virtual controller
(bumble.controller.Controller), joined by a bumble.link.LocalLink. The peripheral implements one
device protocol, written from /work/shared/PROTOCOLS.md (not from GATTLab's emulator); the central
behaves like a phone app: scan for the service UUID, connect, exchange MTU, discover, subscribe,
write, wait for the answers, disconnect. The central host's HCI traffic is written to a btsnoop
file (H4, datalink 1002) with a virtual clock, so the same arguments give the same bytes.

Usage (with the venv from Scripts/bumble-env.sh):
  .venv-bumble/bin/python Tests/Bumble/make_capture.py --protocol sensor --marker-style suffix-newline --out FILE
  .venv-bumble/bin/python Tests/Bumble/make_capture.py --all --out-dir DIR     (every capture + DIR/manifest.json)
  .venv-bumble/bin/python Tests/Bumble/make_capture.py --list
Each capture's expectations (what the peer sent) are printed as JSON, and with --all collected in
manifest.json, which BumbleCaptureTests reads.

Only the standard library, bumble and cryptography (a dependency of bumble) are used.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import struct
import sys

from bumble import hci
from bumble.controller import Controller
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, CharacteristicValue, Descriptor, Service
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink

from improv_device import (IMPROV_RPC, IMPROV_CAPS, IMPROV_ERROR, IMPROV_RESULT, IMPROV_SERVICE, IMPROV_STATE,
                           ImprovDevice, Network as ImprovNetwork, improv_frame)

PASSWORD = "bumble-secret-pass"
SSID = "bumble-test-ssid"

# ----------------------------------------------------------------------------- btsnoop, virtual clock


class VirtualClockSnooper:
    """btsnoop (datalink 1002, H4) of one host's HCI traffic; every record 1.25 ms after the last."""

    BTSNOOP_EPOCH_DELTA = 0x00DCDDB30F2F8000  # microseconds from year 0 to 1970
    START_UNIX_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
    STEP_US = 1250

    def __init__(self, path: str):
        self.file = open(path, "wb")
        self.file.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
        self.now = self.START_UNIX_US

    def snoop(self, packet: bytes, direction) -> None:
        flags = int(direction)  # 0 host->controller, 1 controller->host
        if packet[0] in (hci.HCI_COMMAND_PACKET, hci.HCI_EVENT_PACKET):
            flags |= 2
        self.now += self.STEP_US
        self.file.write(struct.pack(">IIIIq", len(packet), len(packet), flags, 0, self.now + self.BTSNOOP_EPOCH_DELTA))
        self.file.write(packet)

    def wait(self, ms: int) -> None:
        """Lets virtual time pass (a device working) without a record."""
        self.now += ms * 1000

    def close(self) -> None:
        self.file.close()


# ----------------------------------------------------------------------------- protobuf by hand


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int32/int64 negatives: ten bytes of two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_int(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def pb_bytes(field: int, value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    return varint(field << 3 | 2) + varint(len(value)) + value


def pb_msg(field: int, *parts: bytes) -> bytes:
    return pb_bytes(field, b"".join(parts))


def pb3_int(field: int, value: int) -> bytes:
    """proto3: a zero value is left off the wire."""
    return pb_int(field, value) if value else b""


def pb_parse(data: bytes) -> dict[int, list]:
    """Just enough of a protobuf reader for the requests the peripherals get."""
    out: dict[int, list] = {}
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(data, i)
        elif wire == 2:
            n, i = _read_varint(data, i)
            v, i = data[i : i + n], i + n
        elif wire == 5:
            v, i = data[i : i + 4], i + 4
        elif wire == 1:
            v, i = data[i : i + 8], i + 8
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(field, []).append(v)
    return out


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


# ----------------------------------------------------------------------------- the two hosts


class Rig:
    """Two hosts on two virtual controllers joined by a LocalLink; the central's HCI is snooped."""

    def __init__(self, out: str):
        self.link = LocalLink()
        self.pc = Controller("peripheral", link=self.link, public_address="C0:98:E5:49:00:01")
        self.cc = Controller("central", link=self.link, public_address="F0:F1:F2:F3:F4:F5")
        self.peripheral = Device(address=hci.Address("C0:98:E5:49:00:01"), host=Host(self.pc, AsyncPipeSink(self.pc)))
        self.central = Device(address=hci.Address("F0:F1:F2:F3:F4:F5"), host=Host(self.cc, AsyncPipeSink(self.cc)))
        self.peripheral.name = "bumble-peer"
        self.snooper = VirtualClockSnooper(out)
        self.central.host.snooper = self.snooper

    async def power_on(self) -> None:
        await self.peripheral.power_on()
        await self.central.power_on()

    async def advertise(self, service_uuid: str, name: str) -> None:
        ad = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(service_uuid))),
            ]
        )
        scan_response = AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name.encode())])
        await self.peripheral.start_advertising(
            advertising_data=bytes(ad), scan_response_data=bytes(scan_response),
            advertising_interval_min=20, advertising_interval_max=20,
        )

    async def scan_and_connect(self, service_uuid: str):
        """The phone app: scan until an advertisement lists the service, then connect to it."""
        found = asyncio.get_running_loop().create_future()
        wanted = UUID(service_uuid)

        def on_advertisement(adv):
            uuids = adv.data.get(AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS) or []
            if wanted in uuids and not found.done():
                found.set_result(adv.address)

        self.central.on("advertisement", on_advertisement)
        await self.central.start_scanning(filter_duplicates=True)
        address = await asyncio.wait_for(found, 10)
        self.central.remove_listener("advertisement", on_advertisement)
        await self.central.stop_scanning()
        connection = await self.central.connect(address)
        return connection

    def close(self) -> None:
        self.snooper.close()


class Notifications:
    """Notified values queued for the central to await in order."""

    def __init__(self):
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def __call__(self, value: bytes) -> None:
        self.queue.put_nowait(bytes(value))

    async def next(self, timeout: float = 5) -> bytes:
        return await asyncio.wait_for(self.queue.get(), timeout)


async def discover(peer: Peer, mtu: int | None):
    if mtu:
        await peer.request_mtu(mtu)
    await peer.discover_services()
    for service in peer.services:
        await service.discover_characteristics()
        for c in service.characteristics:
            await c.discover_descriptors()


def characteristic(peer: Peer, uuid: str):
    for service in peer.services:
        for c in service.characteristics:
            if c.uuid == UUID(uuid):
                return c
    raise LookupError(uuid)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await asyncio.sleep(0.02)


# ----------------------------------------------------------------------------- sensor Wi-Fi scan

SENSOR_SERVICE = "12345678-9ABC-DEF0-1234-000000000001"
SENSOR_SCAN = "12345678-9ABC-DEF0-1234-000000000008"

NETWORKS = [
    ("bumble-test-ssid", -41),
    ("Neighbour 5G", -55),
    ("Café, Gäste", -63),  # a comma in the SSID, and two-byte UTF-8
    ("IoT-🌱-net", -71),  # a four-byte UTF-8 sequence
    ("guest", -80),
]

# style: how the markers are placed. Every variant is one capture; "expect" is what the peer sent.
SENSOR_VARIANTS = {
    # marker as a notification of its own after each chunk
    "separate": dict(style="separate-notification", mtu=32),
    # chunk ends with the line MORE / END (LF)
    "suffix-newline": dict(style="suffix-newline", mtu=64),
    # lines and marker end in CR LF
    "suffix-crlf": dict(style="suffix-newline", mtu=64, eol="\r\n"),
    # the marker glued to the last line with ';'
    "suffix-semicolon": dict(style="suffix-semicolon", mtu=64),
    # the marker glued to the last line without any separator
    "suffix-glued": dict(style="suffix-glued", mtu=64),
    # the marker starts the next chunk
    "prefix": dict(style="prefix", mtu=64),
    # the whole text (markers included) cut blindly at MTU-3: lines, UTF-8 and a marker split
    "split": dict(style="split-across-chunks", mtu=23, per_chunk=2),
    # one network per notification, each followed by MORE, the last by END
    "one-per-notification": dict(style="suffix-newline", mtu=185, per_chunk=1),
    # everything in one notification ending with END
    "single": dict(style="suffix-newline", mtu=247, per_chunk=5),
    # END without data: the last data chunk ends in MORE, then a chunk holding only END
    "end-alone": dict(style="suffix-newline", mtu=64, end_alone=True),
    # no network at all: only END
    "empty": dict(style="suffix-newline", mtu=64, networks=0),
    # the scan never ends: MORE, then the link drops
    "truncated": dict(style="suffix-newline", mtu=64, truncate=True),
}


def _find_all(text: bytes, part: bytes) -> list[int]:
    found, i = [], text.find(part)
    while i >= 0:
        found.append(i)
        i = text.find(part, i + 1)
    return found


def sensor_chunks(v: dict) -> tuple[list[bytes], list[tuple[str, int]]]:
    """The notifications the sensor sends for one scan, and the networks they carry."""
    mtu = v["mtu"]
    room = mtu - 3
    eol = v.get("eol", "\n")
    networks = NETWORKS[: v.get("networks", len(NETWORKS))]
    style = v["style"]
    lines = [f"{s},{r}".encode() for s, r in networks]
    if v.get("truncate"):
        networks = networks[:3]
        lines = lines[:3]

    # Pages of whole lines that leave room for the marker.
    marker_room = 6 + len(eol)
    per_chunk = v.get("per_chunk")
    pages: list[list[bytes]] = []
    page: list[bytes] = []
    for line in lines:
        size = sum(len(l) + len(eol) for l in page) + len(line) + len(eol)
        if page and ((per_chunk and len(page) >= per_chunk) or size + marker_room > room):
            pages.append(page)
            page = []
        page.append(line)
    if page:
        pages.append(page)

    def body(p: list[bytes]) -> bytes:
        return b"".join(l + eol.encode() for l in p)

    out: list[bytes] = []
    if style == "separate-notification":
        for i, p in enumerate(pages):
            out.append(body(p))
            out.append(b"END" if i == len(pages) - 1 else b"MORE")
        if not pages:
            out.append(b"END")
    elif style == "suffix-newline":
        for i, p in enumerate(pages):
            last = i == len(pages) - 1
            marker = b"MORE" if (not last or v.get("end_alone") or v.get("truncate")) else b"END"
            out.append(body(p) + marker + eol.encode())
        if v.get("end_alone") or not pages:
            out.append(b"END" + eol.encode())
    elif style in ("suffix-semicolon", "suffix-glued"):
        sep = b";" if style == "suffix-semicolon" else b""
        for i, p in enumerate(pages):
            marker = b"END" if i == len(pages) - 1 else b"MORE"
            text = body(p)[: -len(eol)]  # the last line loses its newline: the marker is glued on
            out.append(text + sep + marker)
    elif style == "prefix":
        for i, p in enumerate(pages):
            out.append((b"MORE" + eol.encode() if i else b"") + body(p))
        out.append(b"END")
    elif style == "split-across-chunks":
        # One stream of pages, each ending in its marker line, cut so that every marker and a
        # four-byte UTF-8 sequence straddle a notification boundary (MO|RE, E|ND, F0 9F|8C B1).
        text = b""
        for i, p in enumerate(pages):
            text += body(p) + (b"END" if i == len(pages) - 1 else b"MORE") + eol.encode()
        cuts = {m + 2 for m in _find_all(text, b"MORE" + eol.encode())}
        cuts |= {m + 1 for m in _find_all(text, b"END" + eol.encode())}
        cuts |= {m + 2 for m in _find_all(text, "🌱".encode())}
        points, last = [], 0
        for c in sorted(cuts) + [len(text)]:
            while c - last > room:
                last += room - 1
                points.append(last)
            if c > last:
                points.append(c)
                last = c
        out = [text[a:b] for a, b in zip([0] + points, points)]
    else:
        raise ValueError(style)
    for c in out:
        assert len(c) <= room, (c, room)
    if v.get("truncate"):
        out = out[:1]  # first chunk ends in MORE, then nothing
        networks = [n for n in networks if f"{n[0]},{n[1]}".encode() in out[0]]
    return out, networks


async def run_sensor(rig: Rig, name: str, v: dict) -> dict:
    chunks, networks = sensor_chunks(v)
    done = asyncio.Event()

    async def send_scan(connection):
        for c in chunks:
            await rig.peripheral.notify_subscriber(connection, scan_char, c)
            await settle()
        if v.get("truncate"):
            await connection.disconnect()  # the sensor rebooted mid-scan
        done.set()

    def on_write(connection, value):
        if bytes(value) == b"SCAN":
            asyncio.get_running_loop().create_task(send_scan(connection))

    scan_char = Characteristic(
        SENSOR_SCAN,
        Characteristic.Properties.WRITE | Characteristic.Properties.NOTIFY,
        Characteristic.WRITEABLE,
        CharacteristicValue(write=on_write),
    )
    rig.peripheral.add_service(Service(SENSOR_SERVICE, [scan_char]))
    await rig.power_on()
    await rig.advertise(SENSOR_SERVICE, "bumble-sensor")
    connection = await rig.scan_and_connect(SENSOR_SERVICE)
    peer = Peer(connection)
    await discover(peer, v["mtu"] if v["mtu"] != 23 else None)
    char = characteristic(peer, SENSOR_SCAN)
    got = Notifications()
    await peer.subscribe(char, got)
    await peer.write_value(char, b"SCAN", with_response=True)
    await asyncio.wait_for(done.wait(), 10)
    await settle()
    if not v.get("truncate"):
        await connection.disconnect()
    await settle()
    return {
        "protocol": "sensor",
        "variant": name,
        "markerStyle": v["style"],
        "mtu": v["mtu"],
        "chunksHex": [c.hex() for c in chunks],
        "networks": [{"ssid": s, "rssi": r} for s, r in networks],
        "complete": not v.get("truncate"),
        "credentials": False,
    }


# ----------------------------------------------------------------------------- speaker OTA

SPEAKER_BASE = "-1234-5678-9ABC-DEF012345678"
SPEAKER_SERVICE = "00000001" + SPEAKER_BASE
SPK_CREDS, SPK_URL, SPK_CONTROL, SPK_STATUS = ("0000000%d%s" % (n, SPEAKER_BASE) for n in (5, 6, 7, 8))


async def run_speaker(rig: Rig, name: str, v: dict) -> dict:
    state = {"status": bytes(8), "phase": "first"}
    reboot = asyncio.Event()
    finished = asyncio.Event()

    def status(st, err=0, progress=0, done_kb=0, total_kb=0, rssi=0) -> bytes:
        return struct.pack("<BBBHHb", st, err, progress, done_kb, total_kb, rssi)

    async def push(connection, value: bytes):
        state["status"] = value
        await rig.peripheral.notify_subscriber(connection, status_char, value)
        await settle()

    async def update(connection):
        total = 1536
        await push(connection, status(0x03))
        await push(connection, status(0x04, rssi=-52))
        for p in v.get("progress", (0, 25, 50, 75, 100)):
            rig.snooper.wait(400)
            await push(connection, status(0x05, progress=p, done_kb=total * p // 100, total_kb=total, rssi=-52))
        await push(connection, status(0x06, progress=100, done_kb=total, total_kb=total, rssi=-52))
        await push(connection, status(0x07, progress=100, done_kb=total, total_kb=total, rssi=-52))

    def on_creds(connection, value):
        ssid, _, password = bytes(value).partition(b"\0")
        state["creds"] = (ssid, password)
        asyncio.get_running_loop().create_task(push(connection, status(0x01)))

    def on_url(connection, value):
        state["url"] = bytes(value)
        asyncio.get_running_loop().create_task(push(connection, status(0x02)))

    def on_control(connection, value):
        command = bytes(value)[:1]
        loop = asyncio.get_running_loop()
        if command == b"\x10":
            loop.create_task(update(connection))
        elif command == b"\x12":
            reboot.set()
        elif command == b"\x15":
            async def validated():
                await push(connection, status(0x00))
                finished.set()
            loop.create_task(validated())

    status_char = Characteristic(
        SPK_STATUS, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY, Characteristic.READABLE,
        CharacteristicValue(read=lambda _c: state["status"]),
    )
    # The pairing variant: the credentials characteristic needs an encrypted link.
    creds_permissions = Characteristic.WRITEABLE | (Characteristic.WRITE_REQUIRES_ENCRYPTION if v.get("pairing") else 0)
    chars = [
        Characteristic(SPK_CREDS, Characteristic.Properties.WRITE, creds_permissions, CharacteristicValue(write=on_creds)),
        Characteristic(SPK_URL, Characteristic.Properties.WRITE, Characteristic.WRITEABLE, CharacteristicValue(write=on_url)),
        Characteristic(SPK_CONTROL, Characteristic.Properties.WRITE, Characteristic.WRITEABLE, CharacteristicValue(write=on_control)),
        status_char,
    ]
    if v.get("extra_services"):
        # Another firmware's table: a Device Information and a vendor service before the OTA
        # service, so every OTA handle is elsewhere than in GATTLab's emulated speaker.
        rig.peripheral.add_service(Service("180A", [
            Characteristic("2A26", Characteristic.Properties.READ, Characteristic.READABLE, b"bumble-fw-9.9.9"),
        ]))
        rig.peripheral.add_service(Service("0000fe59-0000-1000-8000-00805f9b34fb", [
            Characteristic("8ec90003-f315-4f60-9fb8-838830daea50", Characteristic.Properties.WRITE | Characteristic.Properties.INDICATE,
                           Characteristic.WRITEABLE, CharacteristicValue(write=lambda _c, _v: None)),
        ]))
    rig.peripheral.add_service(Service(SPEAKER_SERVICE, chars))
    await rig.power_on()
    await rig.advertise(SPEAKER_SERVICE, "bumble-speaker")

    url = b"https://updates.example.com/speaker/fw-2.4.1.bin"
    connection = await rig.scan_and_connect(SPEAKER_SERVICE)
    peer = Peer(connection)
    await discover(peer, v.get("mtu", 185))
    got = Notifications()
    await peer.subscribe(characteristic(peer, SPK_STATUS), got)
    if v.get("pairing"):
        # The app writes, is refused (Insufficient Encryption), pairs (Just Works) and writes again.
        try:
            await peer.write_value(characteristic(peer, SPK_CREDS), SSID.encode() + b"\0" + PASSWORD.encode(), with_response=True)
            raise AssertionError("an unencrypted credentials write was accepted")
        except Exception as e:  # noqa: BLE001
            if getattr(e, "error_code", None) != 0x0F:
                raise
        await connection.pair()
    await peer.write_value(characteristic(peer, SPK_CREDS), SSID.encode() + b"\0" + PASSWORD.encode(), with_response=True)
    await got.next()
    await peer.write_value(characteristic(peer, SPK_URL), url, with_response=True)
    await got.next()
    await peer.write_value(characteristic(peer, SPK_CONTROL), b"\x10\x00", with_response=True)
    seen = []
    while not seen or seen[-1][0] not in (0x07, 0xFF):
        seen.append(await got.next())
    await peer.write_value(characteristic(peer, SPK_CONTROL), b"\x12\x00", with_response=True)
    await reboot.wait()
    # The speaker reboots: it drops the link, comes back advertising, and reports PENDING_VERIFY.
    await connection.disconnect()
    await settle()
    rig.snooper.wait(8000)
    state["status"] = status(0x08)
    await rig.advertise(SPEAKER_SERVICE, "bumble-speaker")
    connection = await rig.scan_and_connect(SPEAKER_SERVICE)
    peer = Peer(connection)
    await discover(peer, 185)
    got = Notifications()
    await peer.subscribe(characteristic(peer, SPK_STATUS), got)
    if v.get("pairing"):
        # Bumble keeps a bond under the identity address (public, from pairing) while both ends
        # see the reconnection from the advertised random-typed one: both key stores learn it.
        for device, other in ((rig.central, rig.peripheral), (rig.peripheral, rig.central)):
            keys = await device.keystore.get(str(hci.Address(str(other.public_address), hci.Address.PUBLIC_DEVICE_ADDRESS)))
            address = connection.peer_address if device is rig.central else next(iter(rig.peripheral.connections.values())).peer_address
            await device.keystore.update(str(address), keys)
        await connection.encrypt()  # bonded: the stored LTK, no pairing again
    first = await peer.read_value(characteristic(peer, SPK_STATUS))
    assert bytes(first)[0] == 0x08
    await peer.write_value(characteristic(peer, SPK_CONTROL), b"\x15\x00", with_response=True)
    await asyncio.wait_for(finished.wait(), 5)
    await got.next()
    await connection.disconnect()
    await settle()
    return {
        "protocol": "speaker",
        "variant": name,
        "ssid": SSID,
        "password": PASSWORD,
        "url": url.decode(),
        "outcome": "success",
        "credentials": True,
        "encrypted": bool(v.get("pairing")),
    }


# ----------------------------------------------------------------------------- nRF7 provisioning

NRF7_SERVICE = "14387800-130c-49e7-b877-2881c89cb258"
NRF7_INFO = "14387801-130c-49e7-b877-2881c89cb258"
NRF7_CP = "14387802-130c-49e7-b877-2881c89cb258"
NRF7_DATA = "14387803-130c-49e7-b877-2881c89cb258"

NRF7_SCAN = [
    # ssid, bssid, band, channel, auth, rssi
    (SSID, bytes.fromhex("a0b1c2d3e4f5"), 1, 6, 3, -44),
    ("bumble-office-5g", bytes.fromhex("a0b1c2d3e4f6"), 2, 36, 6, -61),
    ("bumble-cafe", bytes.fromhex("00163e112233"), 1, 11, 0, -77),
]


def nrf7_wifi(ssid: str, bssid: bytes, band: int, channel: int, auth: int) -> bytes:
    return pb_bytes(1, ssid) + pb_bytes(2, bssid) + pb_int(3, band) + pb_int(4, channel) + pb_int(5, auth)


async def run_nrf7(rig: Rig, name: str, v: dict) -> dict:
    fail = v.get("fail", False)
    sub = {}

    async def send_results(connection, results: list[bytes]):
        for r in results:
            rig.snooper.wait(300)
            await rig.peripheral.notify_subscriber(connection, data_char, r)
            await settle()

    async def respond(connection, request: bytes):
        req = pb_parse(request)
        op = req.get(1, [0])[0]
        body = pb_int(1, op) + pb_int(2, 0)
        later: list[bytes] = []
        if op == 1:  # GET_STATUS
            st = sub.get("state", 0)
            ds = pb_int(1, st)
            if "config" in sub:
                ds += pb_msg(10, nrf7_wifi(*NRF7_SCAN[0][:5]))
            if st == 4:
                ds += pb_msg(11, pb_bytes(1, bytes([192, 168, 1, 23])))
            body += pb_msg(10, ds)
        elif op == 2:  # START_SCAN
            later = [pb_msg(1, pb_msg(1, nrf7_wifi(*n[:5])), pb_int(2, n[5])) for n in NRF7_SCAN]
        elif op == 4:  # SET_CONFIG
            sub["config"] = req[11][0]
            states = [1, 2, 5] if fail else [1, 2, 3, 4]
            later = [pb_int(2, s) for s in states]
            if fail:
                later[-1] += pb_int(3, 0)  # AUTH_ERROR
            sub["state"] = states[-1]
        await rig.peripheral.indicate_subscriber(connection, cp_char, body)
        await settle()
        if later:
            await send_results(connection, later)

    def on_cp(connection, value):
        asyncio.get_running_loop().create_task(respond(connection, bytes(value)))

    enc_w = Characteristic.WRITEABLE | Characteristic.WRITE_REQUIRES_ENCRYPTION
    info_char = Characteristic(NRF7_INFO, Characteristic.Properties.READ, Characteristic.READABLE, pb_int(1, 1))
    cp_char = Characteristic(NRF7_CP, Characteristic.Properties.WRITE | Characteristic.Properties.INDICATE, enc_w,
                             CharacteristicValue(write=on_cp))
    data_char = Characteristic(NRF7_DATA, Characteristic.Properties.NOTIFY, Characteristic.READABLE)
    rig.peripheral.add_service(Service(NRF7_SERVICE, [info_char, cp_char, data_char]))
    await rig.power_on()
    await rig.advertise(NRF7_SERVICE, "bumble-nrf7")
    connection = await rig.scan_and_connect(NRF7_SERVICE)
    peer = Peer(connection)
    await discover(peer, 247)
    info = await peer.read_value(characteristic(peer, NRF7_INFO))
    assert pb_parse(bytes(info))[1] == [1]
    await connection.pair()  # Just Works: Control Point and its CCCDs need an encrypted link
    indications, results = Notifications(), Notifications()
    await peer.subscribe(characteristic(peer, NRF7_CP), indications, prefer_notify=False)
    await peer.subscribe(characteristic(peer, NRF7_DATA), results)
    cp = characteristic(peer, NRF7_CP)

    await peer.write_value(cp, pb_int(1, 1), with_response=True)
    await indications.next()
    await peer.write_value(cp, pb_int(1, 2) + pb_msg(10, pb_int(1, 0), pb_int(3, 1000)), with_response=True)
    await indications.next()
    for _ in NRF7_SCAN:
        await results.next()
    await peer.write_value(cp, pb_int(1, 3), with_response=True)
    await indications.next()
    config = pb_msg(11, pb_msg(1, nrf7_wifi(*NRF7_SCAN[0][:5])), pb_bytes(2, PASSWORD), pb_int(3, 0))
    await peer.write_value(cp, pb_int(1, 4) + config, with_response=True)
    await indications.next()
    for _ in range(3 if fail else 4):
        await results.next()
    await peer.write_value(cp, pb_int(1, 1), with_response=True)
    await indications.next()
    await connection.disconnect()
    await settle()
    return {
        "protocol": "nrf7",
        "variant": name,
        "ssid": SSID,
        "password": PASSWORD,
        "networks": [{"ssid": n[0], "rssi": n[5]} for n in NRF7_SCAN],
        "complete": True,
        "outcome": "failure" if fail else "success",
        "credentials": True,
        "encrypted": True,
    }


# ----------------------------------------------------------------------------- ESP-IDF provisioning

ESP_SERVICE = "021a9004-0382-4aea-bff4-6b3f1c5adfb4"
ESP_ENDPOINTS = ["prov-ctrl", "prov-scan", "prov-session", "prov-config", "proto-ver"]
ESP_POP = b"bumble-pop-1234"


def esp_uuid(index: int) -> str:
    return f"021a{0xFF4F + index:04x}-0382-4aea-bff4-6b3f1c5adfb4"


ESP_SCAN = [(SSID, 6, -47, bytes.fromhex("24a1b2c3d4e5"), 3), ("bumble-neighbour", 1, -69, bytes.fromhex("24a1b2c3d4e6"), 4),
            ("bumble-open", 11, -83, bytes.fromhex("24a1b2c3d4e7"), 0)]


class Sec1:
    """Security 1 as PROTOCOLS.md describes it: X25519, key = shared XOR SHA-256(PoP), AES-256-CTR
    with IV device_random. `shared_stream` (ESP-IDF's own code) keeps one CTR stream for both
    directions; otherwise each direction has its own stream, as PROTOCOLS.md reads."""

    def __init__(self, shared_stream: bool):
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives import serialization

        def raw(k):
            return k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

        # Deterministic keys: fixed private scalars.
        self.client_key = X25519PrivateKey.from_private_bytes(hashlib.sha256(b"bumble-client").digest())
        self.device_key = X25519PrivateKey.from_private_bytes(hashlib.sha256(b"bumble-device").digest())
        self.client_pub, self.device_pub = raw(self.client_key), raw(self.device_key)
        self.device_random = hashlib.sha256(b"bumble-random").digest()[:16]
        shared = self.client_key.exchange(X25519PrivateKey.from_private_bytes(hashlib.sha256(b"bumble-device").digest()).public_key())
        pop = hashlib.sha256(ESP_POP).digest()
        self.key = bytes(a ^ b for a, b in zip(shared, pop))
        self.shared_stream = shared_stream
        self.c2d = self._stream()
        self.d2c = self.c2d if shared_stream else self._stream()

    def _stream(self):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        return Cipher(algorithms.AES(self.key), modes.CTR(self.device_random)).encryptor()


async def run_esp(rig: Rig, name: str, v: dict) -> dict:
    sec = v["sec"]
    sec1 = Sec1(v.get("shared_stream", False)) if sec == 1 else None
    responses: dict[str, bytes] = {n: b"" for n in ESP_ENDPOINTS}
    dev = {"state": None, "polls": 0}
    fail = v.get("fail", False)

    def device_decrypt(data: bytes) -> bytes:
        return sec1.c2d.update(data) if sec1 else data

    def device_encrypt(data: bytes) -> bytes:
        return sec1.d2c.update(data) if sec1 else data

    def session(req: bytes) -> bytes:
        if sec == 0:
            return pb_msg(10, pb_int(1, 1), pb_msg(21))  # sec_ver 0 left off; sec0{msg=1, sr{}}
        top = pb_parse(req)
        payload = pb_parse(top[11][0])
        msg = payload.get(1, [0])[0]
        if msg == 0:
            return pb_int(2, 1) + pb_msg(11, pb_int(1, 1), pb_msg(21, pb_bytes(2, sec1.device_pub), pb_bytes(3, sec1.device_random)))
        verify = pb_parse(payload[22][0])[2][0]
        assert sec1.c2d.update(verify) == sec1.device_pub
        return pb_int(2, 1) + pb_msg(11, pb_int(1, 3), pb_msg(23, pb_bytes(3, sec1.d2c.update(sec1.client_pub))))

    def scan(req: bytes) -> bytes:
        msg = pb_parse(req).get(1, [0])[0]
        if msg == 0:
            return pb_int(1, 1) + pb_msg(11)
        if msg == 2:
            return pb_int(1, 3) + pb_msg(13, pb_int(1, 1), pb_int(2, len(ESP_SCAN)))
        r = pb_parse(pb_parse(req)[14][0])
        start, count = r.get(1, [0])[0], r.get(2, [0])[0]
        entries = b"".join(
            pb_msg(1, pb_bytes(1, s), pb3_int(2, ch), pb3_int(3, rssi), pb_bytes(4, bssid), pb3_int(5, auth))
            for s, ch, rssi, bssid, auth in ESP_SCAN[start : start + count]
        )
        return pb_int(1, 5) + pb_msg(15, entries)

    def config(req: bytes) -> bytes:
        msg = pb_parse(req).get(1, [0])[0]
        if msg == 2:
            dev["creds"] = pb_parse(pb_parse(req)[12][0])
            return pb_int(1, 3) + pb_msg(13)
        if msg == 4:
            dev["state"] = "connecting"
            return pb_int(1, 5) + pb_msg(15)
        dev["polls"] += 1
        if dev["polls"] < 2:
            return pb_int(1, 1) + pb_msg(11, pb_int(2, 1))  # Connecting
        if fail:
            return pb_int(1, 1) + pb_msg(11, pb_int(2, 3), pb_int(10, 0))  # ConnectionFailed, AuthError (zero: on the wire)
        connected = pb_bytes(1, "192.168.1.23") + pb_int(2, 3) + pb_bytes(3, SSID) + pb_bytes(4, ESP_SCAN[0][3]) + pb_int(5, 6)
        return pb_int(1, 1) + pb_msg(11, pb_msg(11, connected))  # sta_state Connected (0) left off

    def on_write(endpoint):
        def write(connection, value):
            value = bytes(value)
            if endpoint == "proto-ver":
                cap = ["wifi_scan"] + (["no_pop"] if sec == 0 else [])
                responses[endpoint] = json.dumps({"prov": {"ver": "v1.1", "sec_ver": sec, "cap": cap}}, separators=(",", ":")).encode()
            elif endpoint == "prov-session":
                responses[endpoint] = session(value)
            elif endpoint == "prov-scan":
                responses[endpoint] = device_encrypt(scan(device_decrypt(value)))
            elif endpoint == "prov-config":
                responses[endpoint] = device_encrypt(config(device_decrypt(value)))
        return write

    chars = []
    for i, endpoint in enumerate(ESP_ENDPOINTS):
        c = Characteristic(
            esp_uuid(i), Characteristic.Properties.READ | Characteristic.Properties.WRITE,
            Characteristic.READABLE | Characteristic.WRITEABLE,
            CharacteristicValue(read=lambda _c, e=endpoint: responses[e], write=on_write(endpoint)),
            descriptors=[Descriptor("2901", Descriptor.READABLE, endpoint.encode())],
        )
        chars.append(c)
    rig.peripheral.add_service(Service(ESP_SERVICE, chars))
    await rig.power_on()
    await rig.advertise(ESP_SERVICE, "PROV_BUMBLE")
    connection = await rig.scan_and_connect(ESP_SERVICE)
    peer = Peer(connection)
    await discover(peer, 185)
    # The app names each endpoint by its user description (0x2901).
    ep = {}
    for service in peer.services:
        for c in service.characteristics:
            for d in c.descriptors:
                if d.type == UUID("2901"):
                    ep[bytes(await peer.read_value(d)).decode()] = c

    async def call(endpoint: str, request: bytes, encrypted: bool = True) -> bytes:
        if sec1 and encrypted:
            request = sec1.c2d.update(request)
        await peer.write_value(ep[endpoint], request, with_response=True)
        answer = bytes(await peer.read_value(ep[endpoint]))
        if sec1 and encrypted:
            answer = sec1.d2c.update(answer)
        return answer

    client = Sec1.__new__(Sec1)  # the phone's own copy of the session state
    if sec1:
        client.__dict__.update(sec1.__dict__)
        client.c2d = client._stream()
        client.d2c = client.c2d if sec1.shared_stream else client._stream()
    ver = await call("proto-ver", b"ESP", encrypted=False)
    assert json.loads(ver)["prov"]["sec_ver"] == sec
    if sec == 0:
        await call("prov-session", pb_msg(10, pb_msg(20)), encrypted=False)
        crypt_out = crypt_in = lambda b: b
    else:
        await call("prov-session", pb_int(2, 1) + pb_msg(11, pb_msg(20, pb_bytes(1, client.client_pub))), encrypted=False)
        sr1 = await call("prov-session", pb_int(2, 1) + pb_msg(11, pb_int(1, 2), pb_msg(22, pb_bytes(2, client.c2d.update(client.device_pub)))), encrypted=False)
        device_verify = pb_parse(pb_parse(pb_parse(sr1)[11][0])[23][0])[3][0]
        assert client.d2c.update(device_verify) == client.client_pub  # the device proved the key
        crypt_out, crypt_in = client.c2d.update, client.d2c.update

    async def rpc(endpoint: str, request: bytes) -> bytes:
        await peer.write_value(ep[endpoint], crypt_out(request), with_response=True)
        return crypt_in(bytes(await peer.read_value(ep[endpoint])))

    await rpc("prov-scan", pb_msg(10, pb_int(1, 1)))  # CmdScanStart, blocking
    status = pb_parse(pb_parse(await rpc("prov-scan", pb_int(1, 2) + pb_msg(12)))[13][0])
    count = status[2][0]
    await rpc("prov-scan", pb_int(1, 4) + pb_msg(14, pb_int(2, count)))
    await rpc("prov-config", pb_int(1, 2) + pb_msg(12, pb_bytes(1, SSID), pb_bytes(2, PASSWORD)))
    await rpc("prov-config", pb_int(1, 4) + pb_msg(14))
    for _ in range(2):
        rig.snooper.wait(1000)
        await rpc("prov-config", pb_msg(10))
    await connection.disconnect()
    await settle()
    return {
        "protocol": "esp",
        "variant": name,
        "sec": sec,
        "sharedStream": bool(sec1 and sec1.shared_stream),
        "pop": ESP_POP.decode() if sec1 else None,
        "clientKey": hashlib.sha256(b"bumble-client").hexdigest() if sec1 else None,
        "ssid": SSID,
        "password": PASSWORD,
        "networks": [{"ssid": s, "rssi": r} for s, _, r, _, _ in ESP_SCAN],
        "complete": True,
        "outcome": "failure" if fail else "success",
        "credentials": True,
        "encrypted": sec == 1,
    }


# ----------------------------------------------------------------------------- Improv Wi-Fi

# The device is improv_device.py's (unix_peripheral.py serves the same one live); here a phone app
# drives it and the user presses its button when the app asks.
IMPROV_URL = "http://bumble-improv.local/setup"


async def run_improv(rig: Rig, name: str, v: dict) -> dict:
    """An Improv device that needs its button pressed (authorization), and a phone app that
    reads the state, waits for AUTHORIZED, asks for the device info, and sends WIFI_SETTINGS cut
    into writes of 20 bytes; the device joins them, reports PROVISIONING, then PROVISIONED with
    the next URL (or UNABLE_TO_CONNECT for a wrong password)."""
    fail = v.get("fail", False)
    # A buggy app first: a frame whose checksum is off by one, then a command the spec lacks.
    garbled = v.get("garbled", False)

    async def pause(ms: int) -> None:
        rig.snooper.wait(ms)

    async def notify(connection, char, value: bytes) -> None:
        await rig.peripheral.notify_subscriber(connection, char, value)
        await settle()

    dev = ImprovDevice(pause=pause, notify=notify, authorization="button", url=IMPROV_URL,
                       world=[ImprovNetwork(SSID, -41, 3, PASSWORD)])
    rig.peripheral.add_service(dev.service)
    await rig.power_on()
    ad, scan_response = dev.advertising_data(b"bumble-improv")
    await rig.peripheral.start_advertising(advertising_data=ad, scan_response_data=scan_response,
                                           advertising_interval_min=20, advertising_interval_max=20)
    connections = []
    rig.peripheral.on("connection", lambda c: connections.append(c))
    connection = await rig.scan_and_connect(IMPROV_SERVICE)
    peer = Peer(connection)
    await discover(peer, 247)
    states, errors, results = Notifications(), Notifications(), Notifications()
    await peer.subscribe(characteristic(peer, IMPROV_STATE), states)
    await peer.subscribe(characteristic(peer, IMPROV_ERROR), errors)
    await peer.subscribe(characteristic(peer, IMPROV_RESULT), results)
    assert bytes(await peer.read_value(characteristic(peer, IMPROV_CAPS))) == bytes([0x03])
    assert bytes(await peer.read_value(characteristic(peer, IMPROV_STATE))) == bytes([0x01])
    # The user presses the device's button.
    await dev.pause(1500)
    await dev.press_button(connections[0])
    await settle()
    assert await states.next() == bytes([0x02])
    rpc = characteristic(peer, IMPROV_RPC)
    if garbled:
        bad = bytearray(improv_frame(0x03, []))
        bad[-1] = (bad[-1] + 1) & 0xFF
        await peer.write_value(rpc, bytes(bad), with_response=True)
        assert await errors.next() == bytes([0x01])
        await peer.write_value(rpc, improv_frame(0x42, []), with_response=True)
        assert await errors.next() == bytes([0x02])
    await peer.write_value(rpc, improv_frame(0x03, []), with_response=True)
    await results.next()
    password = b"not-the-password" if fail else PASSWORD.encode()
    frame = improv_frame(0x01, [SSID.encode(), password])
    for i in range(0, len(frame), 20):
        await peer.write_value(rpc, frame[i:i + 20], with_response=True)
    assert await states.next() == bytes([0x03])
    if fail:
        assert await errors.next() == bytes([0x03])
    else:
        assert await states.next() == bytes([0x04])
        await results.next()
    await connection.disconnect()
    await settle()
    return {
        "protocol": "improv",
        "variant": name,
        "ssid": SSID,
        "password": password.decode(),
        "writes": (len(frame) + 19) // 20,
        "complete": True,
        "outcome": "failure" if fail else "success",
        "credentials": True,
        "encrypted": False,
    }


# ----------------------------------------------------------------------------- the catalogue

CAPTURES: dict[str, tuple] = {}
for _name, _v in SENSOR_VARIANTS.items():
    CAPTURES[f"sensor-{_name}"] = (run_sensor, _name, _v)
CAPTURES["speaker-ota"] = (run_speaker, "ota", {})
# Another speaker firmware: other handles (two services before OTA), a progress notification
# every 10 %, and MTU 23 so the URL goes as a long write.
CAPTURES["speaker-ota-other-firmware"] = (run_speaker, "ota-other-firmware",
                                          {"extra_services": True, "progress": tuple(range(0, 101, 10)), "mtu": 23})
# Made on demand (--capture), not by --all: the VM harness replays it against its Bumble peer over
# the kernel link (Scripts/vm): the credentials need encryption, so the app is refused, pairs and
# writes again, and re-encrypts with the bond after the reboot.
EXTRA_CAPTURES: dict[str, tuple] = {"speaker-ota-pairing": (run_speaker, "ota-pairing", {"pairing": True})}
# Improv Wi-Fi, made on demand too (ImprovBumbleTests): authorization by the button, device info,
# WIFI_SETTINGS in 20-byte writes, PROVISIONED with the next URL, or UNABLE_TO_CONNECT.
EXTRA_CAPTURES["improv-provisioning"] = (run_improv, "success", {})
EXTRA_CAPTURES["improv-unable-to-connect"] = (run_improv, "unable-to-connect", {"fail": True})
EXTRA_CAPTURES["improv-garbled-commands"] = (run_improv, "garbled-commands", {"garbled": True})
CAPTURES["nrf7-provisioning"] = (run_nrf7, "success", {})
CAPTURES["nrf7-auth-error"] = (run_nrf7, "auth-error", {"fail": True})
CAPTURES["esp-sec0"] = (run_esp, "sec0", {"sec": 0})
CAPTURES["esp-sec0-auth-error"] = (run_esp, "sec0-auth-error", {"sec": 0, "fail": True})
# ESP-IDF's security1.c and esp_prov keep one AES-CTR stream for both directions; PROTOCOLS.md's
# "one CTR stream in each direction" read literally gives the per-direction peer, which a decoder
# that follows ESP-IDF must report as failing verification.
CAPTURES["esp-sec1"] = (run_esp, "sec1", {"sec": 1, "shared_stream": True})
CAPTURES["esp-sec1-per-direction"] = (run_esp, "sec1-per-direction", {"sec": 1})


async def make(capture: str, out: str) -> dict:
    run, name, v = CAPTURES.get(capture) or EXTRA_CAPTURES[capture]
    rig = Rig(out)
    try:
        expect = await asyncio.wait_for(run(rig, name, v), 60)
    finally:
        rig.close()
    expect["capture"] = capture
    expect["file"] = os.path.basename(out)
    return expect


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--protocol", choices=["sensor", "speaker", "nrf7", "esp"])
    p.add_argument("--marker-style", help="sensor variant: " + ", ".join(SENSOR_VARIANTS))
    p.add_argument("--variant", help="speaker: ota; nrf7: success, auth-error; esp: sec0, sec0-auth-error, sec1, sec1-per-direction")
    p.add_argument("--capture", help="one capture by its catalogue name (--list)")
    p.add_argument("--out", help="the btsnoop file to write")
    p.add_argument("--all", action="store_true", help="every capture into --out-dir, with manifest.json")
    p.add_argument("--out-dir")
    p.add_argument("--list", action="store_true")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.CRITICAL)
    if a.list:
        print("\n".join(list(CAPTURES) + list(EXTRA_CAPTURES)))
        return 0
    if a.all:
        if not a.out_dir:
            p.error("--all needs --out-dir")
        os.makedirs(a.out_dir, exist_ok=True)
        manifest = []
        for capture in CAPTURES:
            manifest.append(asyncio.run(make(capture, os.path.join(a.out_dir, capture + ".btsnoop"))))
        with open(os.path.join(a.out_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, ensure_ascii=False)
        print(f"wrote {len(manifest)} captures to {a.out_dir}")
        return 0
    capture = a.capture
    if not capture:
        if a.protocol == "sensor":
            capture = f"sensor-{a.marker_style or 'suffix-newline'}"
        elif a.protocol == "speaker":
            capture = "speaker-ota"
        elif a.protocol == "nrf7":
            capture = "nrf7-provisioning" if (a.variant or "success") == "success" else f"nrf7-{a.variant}"
        elif a.protocol == "esp":
            capture = f"esp-{a.variant or 'sec0'}"
        else:
            p.error("give --protocol, --capture or --all")
    if capture not in CAPTURES and capture not in EXTRA_CAPTURES:
        p.error(f"no capture {capture!r}; --list shows them")
    if not a.out:
        p.error("--out FILE is needed")
    print(json.dumps(asyncio.run(make(capture, a.out)), ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
