#!/usr/bin/env python3
"""Google's Bumble as the independent peer of a kernel BlueZ stack (the VM harness, Scripts/vm).

One process, one bumble.link.LocalLink with four virtual controllers (bumble.controller.Controller):
  K  attached to the kernel through /dev/vhci (Bumble's vhci transport): the kernel sees a new
     hciN whose controller is Bumble's, so the kernel's HCI, L2CAP and SMP talk to Bumble's
     link-layer emulation;
  S  a Bumble host serving the speaker OTA and the sensor Wi-Fi scan (PROTOCOLS.md sections 3 and
     4, the protocol code of make_capture.py); the speaker's credentials need an encrypted link;
     pairing is Just Works (no input, no output), bonding;
  P  the same device with a display that asks for MITM protection, so even a central asking only
     for encryption pairs by Passkey Entry (it shows PASSKEY, the kernel's side types it); the
     credentials need an encrypted and authenticated link;
  C  a Bumble central (a phone app) that drives `gattlab emulate --hci <K's hciN>` when asked and
     writes its own verdict JSON.
The kernel's side of Passkey Entry is answered here too: a BlueZ management socket (the mgmt API
bluetoothd uses) replies to User Passkey Request events with PASSKEY and logs the pairing events.

Commands, one per line on the control FIFO (--control):
  fault sensor-no-end on|off        the sensor leaves END off its scans (a deliberate fault)
  central speaker|sensor OUT.json   run one session as the central against the kernel's peripheral
  quit
Every event is a JSON line on stdout ({"event": ...}); "ready" once the kernel has the controller.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_capture as mc  # noqa: E402  (protocol constants and the sensor's chunking)

from bumble import hci  # noqa: E402
from bumble.controller import Controller  # noqa: E402
from bumble.core import AdvertisingData, PhysicalTransport, UUID  # noqa: E402
from bumble.device import Device, Peer  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402
from bumble.host import Host  # noqa: E402
from bumble.link import LocalLink  # noqa: E402
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402
from bumble.transport import open_transport  # noqa: E402
from bumble.transport.common import AsyncPipeSink  # noqa: E402

PASSKEY = 123456
KERNEL_ADDRESS = "00:AA:01:02:00:02"
JUST_WORKS_ADDRESS = "00:AA:01:03:00:03"
PASSKEY_ADDRESS = "00:AA:01:04:00:04"
CENTRAL_ADDRESS = "00:AA:01:05:00:05"


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "time": time.time(), **fields}, ensure_ascii=False), flush=True)


class PublicAddressLink(LocalLink):
    """LocalLink with ACL data sent from the address the connection uses. Bumble 0.0.236's
    LocalLink stamps LE ACL data with the sender's random address, so a link between public
    addresses (the kernel connects from its controller's public one) loses every ACL packet
    ("no connection for ..."); LL control PDUs already use the connection's address."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport == PhysicalTransport.LE:
            connection = sender_controller.le_connections.get(destination_address)
            destination = self.find_le_controller(destination_address)
            if connection is not None and destination is not None:
                source = connection.self_address
                asyncio.get_running_loop().call_soon(lambda: destination.on_link_acl_data(source, transport, data))
                return
        super().send_acl_data(sender_controller, destination_address, transport, data)


# ----------------------------------------------------------------------------- the kernel's agent

class MgmtAgent:
    """The BlueZ management API (HCI_CHANNEL_CONTROL): answers the kernel's User Passkey Request
    and User Confirm Request events for every controller, and logs the pairing events."""

    EVENTS = {0x000A: "new-long-term-key", 0x000B: "device-connected", 0x000C: "device-disconnected",
              0x000F: "user-confirm-request", 0x0010: "user-passkey-request", 0x0011: "auth-failed",
              0x0017: "passkey-notify", 0x0018: "new-irk"}

    def __init__(self, passkey: int):
        self.passkey = passkey
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(31, 3 | 0o2000000 | 0o4000, 1)  # AF_BLUETOOTH, SOCK_RAW|CLOEXEC|NONBLOCK, BTPROTO_HCI
        if fd < 0:
            raise OSError(ctypes.get_errno(), "mgmt socket")
        address = struct.pack("<HHH", 31, 0xFFFF, 3)  # HCI_DEV_NONE, HCI_CHANNEL_CONTROL
        if libc.bind(fd, address, len(address)) != 0:
            raise OSError(ctypes.get_errno(), "mgmt bind")
        self.fd = fd
        asyncio.get_running_loop().add_reader(fd, self.readable)

    def send(self, opcode: int, index: int, params: bytes) -> None:
        os.write(self.fd, struct.pack("<HHH", opcode, index, len(params)) + params)

    def readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        if len(data) < 6:
            return
        event, index, _ = struct.unpack_from("<HHH", data)
        params = data[6:]
        name = self.EVENTS.get(event)
        if name is None:
            return
        address = ":".join(f"{b:02X}" for b in reversed(params[:6]))
        fields = {"index": index, "address": address}
        if event == 0x0010:
            self.send(0x001E, index, params[:7] + struct.pack("<I", self.passkey))  # User Passkey Reply
            fields["reply"] = self.passkey
        elif event == 0x000F:
            self.send(0x001C, index, params[:7])  # User Confirm Reply
        elif event == 0x000A and len(params) >= 11:
            # store hint, address, key type (0 unauthenticated legacy, 1 authenticated legacy,
            # 2 unauthenticated P-256, 3 authenticated P-256), central, size; the key stays here.
            fields.update(storeHint=params[0], keyType=params[8], central=params[9], keySize=params[10])
            fields["address"] = ":".join(f"{b:02X}" for b in reversed(params[1:7]))
        elif event == 0x0011 and len(params) >= 8:
            fields["status"] = params[7]
        elif event == 0x0017 and len(params) >= 11:
            fields["passkey"] = struct.unpack_from("<I", params, 7)[0]
        emit("mgmt-" + name, **fields)


# ----------------------------------------------------------------------------- the peripherals

class Delegate(PairingDelegate):
    def __init__(self, name: str, io, passkey: int | None = None):
        super().__init__(io_capability=io)
        self.name, self.passkey = name, passkey

    async def generate_passkey(self) -> int:
        return self.passkey if self.passkey is not None else await super().generate_passkey()

    async def display_number(self, number: int, digits: int) -> None:
        emit("display-passkey", device=self.name, passkey=number)


class Peripheral:
    """The speaker (OTA) and the sensor (Wi-Fi scan) in one GATT table, written from PROTOCOLS.md."""

    def __init__(self, name: str, device: Device, creds_permission: int, faults: set[str]):
        self.name, self.device, self.faults = name, device, faults
        self.status = bytes(8)
        self.pending_verify = False

        def status(st, err=0, progress=0, done_kb=0, total_kb=0, rssi=0) -> bytes:
            return struct.pack("<BBBHHb", st, err, progress, done_kb, total_kb, rssi)

        async def push(connection, value: bytes, pause: float = 0.02):
            self.status = value
            await device.notify_subscriber(connection, self.status_char, value)
            await asyncio.sleep(pause)

        async def update(connection):
            total = 1536
            await push(connection, status(0x03))
            await push(connection, status(0x04, rssi=-52))
            for p in (0, 25, 50, 75, 100):
                await push(connection, status(0x05, progress=p, done_kb=total * p // 100, total_kb=total, rssi=-52), 0.05)
            await push(connection, status(0x06, progress=100, done_kb=total, total_kb=total, rssi=-52))
            await push(connection, status(0x07, progress=100, done_kb=total, total_kb=total, rssi=-52))

        def task(coroutine):
            asyncio.get_running_loop().create_task(coroutine)

        def on_creds(connection, value):
            ssid, _, _ = bytes(value).partition(b"\0")
            emit("credentials", device=name, ssid=ssid.decode(errors="replace"), encrypted=bool(connection.encryption),
                 authenticated=bool(connection.authenticated))
            task(push(connection, status(0x01)))

        def on_url(connection, value):
            task(push(connection, status(0x02)))

        def on_control(connection, value):
            command = bytes(value)[:1]
            if command == b"\x10":
                task(update(connection))
            elif command == b"\x12":
                self.pending_verify = True  # reboots into the new image once the phone has gone
            elif command == b"\x15":
                self.pending_verify = False
                task(push(connection, status(0x00)))

        self.status_char = Characteristic(
            mc.SPK_STATUS, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY, Characteristic.READABLE,
            CharacteristicValue(read=lambda _c: self.status))
        speaker = Service(mc.SPEAKER_SERVICE, [
            Characteristic(mc.SPK_CREDS, Characteristic.Properties.WRITE, Characteristic.WRITEABLE | creds_permission,
                           CharacteristicValue(write=on_creds)),
            Characteristic(mc.SPK_URL, Characteristic.Properties.WRITE, Characteristic.WRITEABLE, CharacteristicValue(write=on_url)),
            Characteristic(mc.SPK_CONTROL, Characteristic.Properties.WRITE, Characteristic.WRITEABLE, CharacteristicValue(write=on_control)),
            self.status_char,
        ])

        async def scan(connection):
            chunks, networks = mc.sensor_chunks(dict(style="suffix-newline", mtu=connection.att_mtu))
            if "sensor-no-end" in faults:  # the fault: the last chunk loses its END line
                chunks[-1] = chunks[-1][: -len(b"END\n")]
                chunks = [c for c in chunks if c]
            emit("scan", device=name, mtu=connection.att_mtu, chunks=len(chunks), networks=len(networks),
                 end="sensor-no-end" not in faults)
            for c in chunks:
                await device.notify_subscriber(connection, self.scan_char, c)
                await asyncio.sleep(0.02)

        def on_scan(connection, value):
            if bytes(value) == b"SCAN":
                task(scan(connection))

        self.scan_char = Characteristic(
            mc.SENSOR_SCAN, Characteristic.Properties.WRITE | Characteristic.Properties.NOTIFY, Characteristic.WRITEABLE,
            CharacteristicValue(write=on_scan))
        device.add_service(speaker)
        device.add_service(Service(mc.SENSOR_SERVICE, [self.scan_char]))

        def on_connection(connection):
            # A new connection finds the speaker idle, or in PENDING_VERIFY after a REBOOT.
            self.status = status(0x08) if self.pending_verify else bytes(8)
            emit("connected", device=name, peer=str(connection.peer_address))
            connection.on("disconnection", lambda reason: emit("disconnected", device=name, reason=reason))
            connection.on("pairing", lambda keys: emit("paired", device=name, peer=str(connection.peer_address),
                                                       authenticated=bool(connection.authenticated)))
            connection.on("pairing_failure", lambda reason: emit("pairing-failed", device=name, reason=int(reason)))
            connection.on("connection_encryption_change",
                          lambda: emit("encryption", device=name, enabled=bool(connection.encryption),
                                       authenticated=bool(connection.authenticated)))

        device.on("connection", on_connection)
        self.ad = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(mc.SPEAKER_SERVICE))),
            (AdvertisingData.COMPLETE_LOCAL_NAME, name.encode()),
        ]))

    async def advertise(self) -> None:
        # Public address, reconnectable: auto_restart advertises again after each disconnection.
        # Every 150 ms: each advertisement is Python work in the guest, which runs under TCG beside
        # the replays of the other sessions.
        await self.device.start_advertising(advertising_data=self.ad, own_address_type=hci.OwnAddressType.PUBLIC,
                                            auto_restart=True, advertising_interval_min=150, advertising_interval_max=150)


# ----------------------------------------------------------------------------- the central

async def central_session(device: Device, kind: str, out: str) -> None:
    """A phone app against the kernel's peripheral (gattlab emulate --hci): checks the answers
    against PROTOCOLS.md itself and writes {"verdict": "pass"|"fail", "checks": [...], ...}."""
    checks: list[dict] = []
    result: dict = {"session": kind, "checks": checks}

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    t0 = time.time()
    try:
        found = asyncio.get_running_loop().create_future()

        def on_advertisement(adv):
            # The kernel's controller only: the Bumble peripherals advertise the speaker too.
            if not found.done() and str(adv.address).startswith(KERNEL_ADDRESS):
                found.set_result(adv.address)

        device.on("advertisement", on_advertisement)
        await device.start_scanning(filter_duplicates=True)
        address = await asyncio.wait_for(found, 20)
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()
        result["address"] = str(address)
        connection = await asyncio.wait_for(device.connect(address), 20)
        peer = Peer(connection)
        mtu = await peer.request_mtu(247)
        result["mtu"] = mtu
        await peer.discover_services()
        for service in peer.services:
            await service.discover_characteristics()
            for c in service.characteristics:
                await c.discover_descriptors()
        got = mc.Notifications()
        if kind == "speaker":
            status = mc.characteristic(peer, mc.SPK_STATUS)
            await peer.subscribe(status, got)
            await peer.write_value(mc.characteristic(peer, mc.SPK_CREDS), mc.SSID.encode() + b"\0" + mc.PASSWORD.encode(), with_response=True)
            first = await got.next(10)
            check("credentials -> CREDS_RECEIVED (01)", first[0] == 0x01, first.hex())
            await peer.write_value(mc.characteristic(peer, mc.SPK_URL), b"https://updates.example.com/speaker/fw-2.4.1.bin", with_response=True)
            second = await got.next(10)
            check("URL -> URL_RECEIVED (02)", second[0] == 0x02, second.hex())
            await peer.write_value(mc.characteristic(peer, mc.SPK_CONTROL), b"\x10\x00", with_response=True)
            seen: list[bytes] = []
            while not seen or seen[-1][0] not in (0x07, 0xFF):
                seen.append(await got.next(30))
            states = [v[0] for v in seen]
            result["states"] = [f"{s:02X}" for s in states]
            order = [0x03, 0x04, 0x05, 0x06, 0x07]
            check("each status 8 bytes", all(len(v) == 8 for v in seen), "")
            check("states only rise, WIFI_CONNECTING .. SUCCESS", states == sorted(states) and set(states) <= set(order)
                  and states[0] == 0x03 and states[-1] == 0x07, " ".join(result["states"]))
            progress = [v[2] for v in seen if v[0] == 0x05]
            check("download progress rises to 100 %", progress == sorted(progress) and progress[-1:] == [100] and all(p <= 100 for p in progress),
                  str(progress))
            check("SUCCESS without an error", seen[-1][1] == 0, seen[-1].hex())
            _, _, _, done_kb, total_kb, _ = struct.unpack("<BBBHHb", seen[-1])
            check("downloaded KB = total KB at SUCCESS", done_kb == total_kb > 0, f"{done_kb}/{total_kb} KB")
        else:
            scan_char = mc.characteristic(peer, mc.SENSOR_SCAN)
            await peer.subscribe(scan_char, got)
            await peer.write_value(scan_char, b"SCAN", with_response=True)
            text = b""
            chunks = 0
            while True:
                chunk = await got.next(30)
                chunks += 1
                check_room = len(chunk) <= mtu - 3
                if not check_room:
                    check("chunk within MTU-3", False, f"{len(chunk)} bytes at MTU {mtu}")
                text += chunk
                lines = text.replace(b"\r", b"").split(b"\n")
                if b"END" in [l.strip() for l in lines] or text.rstrip().endswith(b"END"):
                    break
            lines = [l for l in text.replace(b"\r", b"").split(b"\n") if l and l not in (b"MORE", b"END")]
            networks = []
            bad = []
            for line in lines:
                ssid, comma, rssi = line.decode("utf-8", errors="replace").rpartition(",")
                try:
                    value = int(rssi)
                except ValueError:
                    value = None
                if not comma or value is None or not (1 <= len(ssid.encode()) <= 32):
                    bad.append(line.decode(errors="replace"))
                else:
                    networks.append({"ssid": ssid, "rssi": value})
            result["networks"] = networks
            result["chunks"] = chunks
            check("scan ends with END", True, f"{chunks} notifications")
            check("every line is SSID,RSSI (SSID 1-32 bytes, RSSI an integer)", not bad, "; ".join(bad))
            check("at least one network", len(networks) > 0, str(len(networks)))
        await connection.disconnect()
    except Exception as e:  # noqa: BLE001
        check("session ran to its end", False, f"{type(e).__name__}: {e}")
    result["seconds"] = round(time.time() - t0, 2)
    result["verdict"] = "pass" if checks and all(c["ok"] for c in checks) else "fail"
    with open(out, "w") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)
    emit("central-done", session=kind, verdict=result["verdict"], out=out)


# ----------------------------------------------------------------------------- main

def host_device(link: LocalLink, name: str, address: str) -> Device:
    controller = Controller(name, link=link, public_address=address)
    controller.random_address = hci.Address(address)  # as the LocalLink addresses LE data (above)
    device = Device(address=hci.Address(address), host=Host(controller, AsyncPipeSink(controller)))
    device.name = name
    return device


async def main(a) -> int:
    link = PublicAddressLink()
    transport = await open_transport(a.transport)
    kernel = Controller("kernel", host_source=transport.source, host_sink=transport.sink, link=link,
                        public_address=KERNEL_ADDRESS)
    kernel.random_address = hci.Address(KERNEL_ADDRESS)
    faults: set[str] = set()
    try:
        agent = MgmtAgent(PASSKEY)
    except OSError as e:
        agent = None
        emit("error", what=f"no mgmt agent: {e}")
    just_works = host_device(link, "bumble-jw", JUST_WORKS_ADDRESS)
    just_works.pairing_config_factory = lambda c: PairingConfig(
        sc=True, mitm=False, bonding=True, delegate=Delegate("bumble-jw", PairingDelegate.NO_OUTPUT_NO_INPUT))
    passkey = host_device(link, "bumble-passkey", PASSKEY_ADDRESS)
    passkey.pairing_config_factory = lambda c: PairingConfig(
        sc=True, mitm=True, bonding=True, delegate=Delegate("bumble-passkey", PairingDelegate.DISPLAY_OUTPUT_ONLY, PASSKEY))
    phone = host_device(link, "bumble-phone", CENTRAL_ADDRESS)
    peripherals = [Peripheral("bumble-jw", just_works, Characteristic.WRITE_REQUIRES_ENCRYPTION, faults),
                   Peripheral("bumble-passkey", passkey,
                              Characteristic.WRITE_REQUIRES_ENCRYPTION | Characteristic.WRITE_REQUIRES_AUTHENTICATION, faults)]
    for d in (just_works, passkey, phone):
        await d.power_on()
    for p in peripherals:
        await p.advertise()
    emit("ready", kernel=KERNEL_ADDRESS, justWorks=JUST_WORKS_ADDRESS, passkey=PASSKEY_ADDRESS, central=CENTRAL_ADDRESS,
         agent=agent is not None)

    loop = asyncio.get_running_loop()
    fifo = await loop.run_in_executor(None, lambda: open(a.control))  # blocks until the guest opens it
    while True:
        line = await loop.run_in_executor(None, fifo.readline)
        if not line:
            break
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "fault" and len(words) == 3:
            (faults.add if words[2] == "on" else faults.discard)(words[1])
            emit("fault", fault=words[1], on=words[1] in faults)
        elif words[0] == "central" and len(words) == 3:
            await central_session(phone, words[1], words[2])
        else:
            emit("error", what=f"unknown command {line.strip()!r}")
    emit("quit")
    transport.close()
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--transport", default="vhci", help="Bumble transport of the kernel's controller (default vhci)")
    p.add_argument("--control", required=True, help="a FIFO of commands (see above)")
    sys.exit(asyncio.run(main(p.parse_args())))
