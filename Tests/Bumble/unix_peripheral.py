#!/usr/bin/env python3
"""The Bumble Improv peripheral (improv_device.py) served live over GATTLab's unix: transport.

One process runs two kinds of Bumble hosts on virtual controllers joined by a LocalLink: the
peripheral, whose ATT/GATT server is Bumble's own (its handles, MTU handling and error codes),
carrying the Improv service; and, for each accepted unix connection, a Bumble central that
connects to the peripheral and relays raw ATT PDUs both ways on the fixed ATT channel (CID 4).
Neither GATTLab nor this script answers an ATT request: Bumble's server does.

The unix: transport (Tests/IndependentDevices/README.md): AF_UNIX SOCK_SEQPACKET; one accepted
connection is one BLE link; one message is one ATT PDU without L2CAP header. `0x00 "encrypt"`
pairs the Bumble link (Just Works) and encrypts it; other 0x00-prefixed messages are ignored.
The unix peer closing disconnects the link; the peripheral dropping the link (a crash) closes
the unix connection. Device state persists across links, as firmware's does.

Usage (with the venv from Scripts/bumble-env.sh):
  .venv-bumble/bin/python Tests/Bumble/unix_peripheral.py --listen /tmp/improv.sock
      [--bug NAME ...] [--mtu 247] [--authorization none|button|never] [--world FILE] [--quiet]
  gattlab replay run CAPTURE --target unix:/tmp/improv.sock --allow-writes --timing fast
SIGINT/SIGTERM stop it and remove the socket. docs/bumble.md has the rest (the options, what the
bridge answers for Bumble itself, the tests).

Planted bugs (off unless --bug NAME, comma lists or `all`), C-firmware defects the fuzzer is not
told about. A crash drops every link without answering the write that caused it, logs
`[improv] CRASH bug=NAME: ...` on stderr, resets the device to power-on and refuses connections
for --reboot-ms (the socket file stays: connect() gets ECONNREFUSED):

| name | the C-firmware defect | what a client must do | bug off |
|---|---|---|---|
| ssid-exact-32 | `char ssid[32]; memcpy(ssid, s, n); ssid[n] = 0;`: the terminator of an SSID of exactly 32 bytes (the maximum) lands past the buffer | once authorized, WIFI_SETTINGS (valid frame, in one write or joined from several) with a 32-byte SSID | PROVISIONING, then UNABLE_TO_CONNECT (no such network) or PROVISIONED |
| settings-length-overrun | the WIFI_SETTINGS parser trusts the SSID and password length bytes: `memcpy(pass, &d[2 + n], d[1 + n])` reads past the frame | WIFI_SETTINGS with a valid checksum and frame length whose string lengths run past its data, e.g. `01 05 20 61 62 63 64 b0` (the check is before authorization) | error INVALID_RPC_PACKET |
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys

from bumble import att, hci
from bumble.att import ATT_CID
from bumble.controller import Controller
from bumble.device import Device
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink

from improv_device import CAP_DEVICE_INFO, CAP_IDENTIFY, CAP_SCAN, ImprovDevice, Network, load_world

BUGS = {
    "ssid-exact-32": "WIFI_SETTINGS with a 32-byte SSID writes its terminator past char ssid[32]: crash",
    "settings-length-overrun": "WIFI_SETTINGS whose string lengths run past the frame is read past the buffer: crash",
}
PERIPHERAL = "C0:98:E5:49:00:02"
REQUESTS = {int(op) for op in att.ATT_REQUESTS}
# The built-in Wi-Fi world: make_capture.py's network (its password joins), and two more.
WORLD = [Network("bumble-test-ssid", -41, 3, "bumble-secret-pass"), Network("HomeNet", -55, 3, "correct horse battery staple"),
         Network("Cafe Guest", -70, 0, "")]


class Relay:
    """One unix connection: a Bumble central's link to the peripheral, PDUs relayed both ways."""

    def __init__(self, bridge: "Bridge", sock: socket.socket):
        self.bridge, self.sock = bridge, sock
        self.out: asyncio.Queue = asyncio.Queue()
        self.closed = asyncio.Event()  # the Bumble link is down
        self.unix_gone = asyncio.Event()  # the unix peer closed
        self.reusable = False
        self.connection = None
        self.central = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        writer = loop.create_task(self.write_loop())
        try:
            self.central = await self.bridge.take_central()
            async with self.bridge.connecting:
                # A LocalLink connection completes when the central hears the peripheral
                # advertise, and the peripheral stops advertising once connected: one link
                # at a time is set up, each after advertising is restarted.
                started = loop.time()
                await self.bridge.advertise()
                self.connection = await asyncio.wait_for(self.central.connect(hci.Address(PERIPHERAL)), 10)
                if loop.time() - started > 0.2:
                    self.bridge.info(f"slow link setup: {loop.time() - started:.3f} s")
            self.bridge.relays[(id(self.central), self.connection.handle)] = self
            self.connection.on("disconnection", lambda reason: self.closed.set())
            reader = loop.create_task(self.read_loop())
            closed = loop.create_task(self.closed.wait())
            gone = loop.create_task(self.unix_gone.wait())
            await asyncio.wait({reader, closed, gone}, return_when=asyncio.FIRST_COMPLETED)
            for t in (reader, closed, gone):
                t.cancel()
            self.reusable = True
        except Exception as e:  # noqa: BLE001 - a link that fails must not stop the bridge
            self.bridge.fault(f"link failed: {type(e).__name__} {e}")
            if os.environ.get("IMPROV_BRIDGE_DEBUG"):
                import traceback
                traceback.print_exc()
        finally:
            writer.cancel()
            self.sock.close()
            if self.connection is not None and not self.closed.is_set():
                try:
                    await self.connection.disconnect()
                    await asyncio.wait_for(self.closed.wait(), 5)
                except Exception as e:  # noqa: BLE001
                    self.bridge.fault(f"disconnecting failed: {type(e).__name__} {e}")
            if self.central is not None:
                if self.connection is not None:
                    self.bridge.relays.pop((id(self.central), self.connection.handle), None)
                # A central whose link did not come up, or did not go down, is not used again.
                if self.reusable and self.closed.is_set():
                    self.bridge.give_back(self.central)

    async def read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                msg = await loop.sock_recv(self.sock, 65536)
            except OSError:
                return
            if not msg:
                return  # the unix peer closed: the link goes
            if msg[0] == 0x00:
                if msg[1:] == b"encrypt":
                    await self.encrypt()
                continue
            self.connection.send_l2cap_pdu(ATT_CID, msg)

    async def encrypt(self) -> None:
        """Just Works pairing and encryption of the Bumble link, before the next PDU goes."""
        try:
            await asyncio.wait_for(self.connection.pair(), 10)
            self.bridge.info("link encrypted (Just Works)")
        except Exception as e:  # noqa: BLE001
            self.bridge.fault(f"pairing failed: {e!r}")

    def from_peripheral(self, pdu: bytes) -> None:
        self.out.put_nowait(bytes(pdu))

    async def write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            pdu = await self.out.get()
            try:
                await loop.sock_sendall(self.sock, pdu)
            except OSError:
                self.unix_gone.set()
                return


class Bridge:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.path = a.listen[5:] if a.listen.startswith("unix:") else a.listen
        self.link = LocalLink()
        pc = Controller("peripheral", link=self.link, public_address=PERIPHERAL)
        self.peripheral = Device(address=hci.Address(PERIPHERAL), host=Host(pc, AsyncPipeSink(pc)))
        self.peripheral.name = "bumble-improv"
        self.peripheral.gatt_server.max_mtu = a.mtu
        self.device = ImprovDevice(
            pause=self.pause, notify=self.notify, authorization=a.authorization, capabilities=a.capabilities,
            world=load_world(a.world) if a.world else WORLD, bugs=a.bug, on_crash=self.crash,
            button_after_ms=a.button_after)
        self.peripheral.add_service(self.device.service)
        self.peripheral.on("disconnection", self.peripheral_disconnected)
        if not a.bumble_as_is:
            self.guard_bumble()
        self.free: list[Device] = []
        self.centrals = 0
        self.relays: dict = {}
        self.listener: socket.socket | None = None
        self.accepting: asyncio.Task | None = None
        self.tasks: set = set()

    def guard_bumble(self) -> None:
        """The answers Bumble (0.0.236) never gives, each found at once by the fuzzer as
        `no-answer` (--bumble-as-is keeps them unanswered):
        - permissions: its server checks neither read nor write permission ("TODO: check
          permissions" in gatt_server.py), so a Read (Blob, By Type, Multiple) of a write-only
          value or a Write (Prepare) Request to a read-only one computed by a function (Improv's
          Current State, Bumble's own Database Hash) raises in the handler and nothing is
          answered, and a static read-only value is overwritten. Checked here first: 0x02 Read
          Not Permitted / 0x03 Write Not Permitted with the handle (Core Vol 3 Part F 3.4.1.1,
          3.4.4, 3.4.5), a Write Command to it dropped;
        - a request it cannot parse (a Find Information Request of 3 bytes): the exception
          escapes Device.on_gatt_pdu, where 3.4.1.1 wants 0x04 Invalid PDU.
        These are the only answers the bridge gives itself; everything else Bumble answers."""
        channels = self.peripheral.l2cap_channel_manager.fixed_channels
        bumble_handler = channels[ATT_CID]
        server = self.peripheral.gatt_server

        def refuse(handle: int, pdu: bytes, attribute_handle: int, code: int) -> None:
            self.info(f"refused for Bumble (0x{code:02x}, handle 0x{attribute_handle:04x}): {bytes(pdu).hex()}")
            self.peripheral.send_l2cap_pdu(handle, ATT_CID, bytes([0x01, pdu[0]]) + attribute_handle.to_bytes(2, "little") + bytes([code]))

        def may(h: int, flag) -> bool:
            attribute = server.get_attribute(h)
            return attribute is None or bool(attribute.permissions & flag)  # Bumble answers Invalid Handle itself

        def on_att(handle: int, pdu: bytes) -> None:
            try:
                p = att.ATT_PDU.from_bytes(pdu)
            except Exception:  # noqa: BLE001 - whatever Bumble's parser raises
                if pdu and pdu[0] in REQUESTS:
                    refuse(handle, pdu, 0, 0x04)
                    return
                return bumble_handler(handle, pdu)
            readable, writeable = att.Attribute.READABLE, att.Attribute.WRITEABLE
            op = pdu[0]
            if op in (0x0A, 0x0C) and not may(p.attribute_handle, readable):
                return refuse(handle, pdu, p.attribute_handle, 0x02)
            if op in (0x0E, 0x20):
                for h in p.set_of_handles:
                    if not may(h, readable):
                        return refuse(handle, pdu, h, 0x02)
            if op == 0x08:
                found = next((a for a in server.attributes if p.starting_handle <= a.handle <= p.ending_handle
                              and a.type == p.attribute_type), None)
                if found is not None and not found.permissions & readable:
                    return refuse(handle, pdu, found.handle, 0x02)
            if op in (0x12, 0x16) and not may(p.attribute_handle, writeable):
                return refuse(handle, pdu, p.attribute_handle, 0x03)
            if op == 0x52 and not may(p.attribute_handle, writeable):
                return
            bumble_handler(handle, pdu)
        channels[ATT_CID] = on_att

    # ------------------------------------------------------------------ logging

    def info(self, text: str) -> None:
        if not self.a.quiet:
            print(f"[improv] {text}", file=sys.stderr, flush=True)

    def fault(self, text: str) -> None:
        print(f"[improv] {text}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ the device's world

    async def pause(self, ms: int) -> None:
        await asyncio.sleep(ms / 1000 * self.a.time_scale)

    async def notify(self, connection, char, value: bytes) -> None:
        if connection.handle not in self.peripheral.connections:
            return  # the link went meanwhile
        try:
            await self.peripheral.notify_subscriber(connection, char, value)
        except Exception as e:  # noqa: BLE001
            self.info(f"notification not sent: {e!r}")

    def peripheral_disconnected(self, connection) -> None:
        self.device.disconnected(connection)

    def crash(self, bug: str, detail: str) -> None:
        self.fault(f"CRASH bug={bug}: {detail} -> watchdog reset, link dropped, rebooting")
        self.close_listener()
        for connection in list(self.peripheral.connections.values()):
            self.spawn(connection.disconnect(hci.HCI_CONNECTION_TIMEOUT_ERROR))
        self.device.power_on()
        asyncio.get_running_loop().call_later(self.a.reboot_ms / 1000, self.open_listener)

    def spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ------------------------------------------------------------------ centrals

    async def take_central(self) -> Device:
        if self.free:
            return self.free.pop()
        self.centrals += 1
        address = f"F0:F1:F2:F3:{self.centrals >> 8:02X}:{self.centrals & 0xFF:02X}"
        cc = Controller(f"central{self.centrals}", link=self.link, public_address=address)
        central = Device(address=hci.Address(address), host=Host(cc, AsyncPipeSink(cc)))
        await central.power_on()
        # The central's ATT channel goes to the unix peer, not to Bumble's GATT client.
        central.l2cap_channel_manager.deregister_fixed_channel(ATT_CID)
        central.l2cap_channel_manager.register_fixed_channel(
            ATT_CID, lambda handle, pdu, c=central: self.to_unix(c, handle, pdu))
        return central

    def give_back(self, central: Device) -> None:
        self.free.append(central)

    def to_unix(self, central: Device, handle: int, pdu: bytes) -> None:
        relay = self.relays.get((id(central), handle))
        if relay is not None:
            relay.from_peripheral(pdu)

    # ------------------------------------------------------------------ the listener

    def open_listener(self) -> None:
        tmp = self.path + ".boot"
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(tmp)
        s.listen(16)
        s.setblocking(False)
        os.rename(tmp, self.path)  # atomic: no moment without a socket file
        self.listener = s
        self.accepting = asyncio.get_running_loop().create_task(self.accept_loop(s))

    def close_listener(self) -> None:
        if self.accepting is not None:
            self.accepting.cancel()
            self.accepting = None
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    async def accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            sock, _ = await loop.sock_accept(listener)
            sock.setblocking(False)
            self.spawn(Relay(self, sock).run())

    async def advertise(self) -> None:
        try:
            await self.peripheral.stop_advertising()
        except Exception:  # noqa: BLE001 - the controller stopped it at the last connection
            pass
        ad, scan_response = self.device.advertising_data(b"bumble-improv")
        await self.peripheral.start_advertising(advertising_data=ad, scan_response_data=scan_response,
                                                advertising_interval_min=20, advertising_interval_max=20)

    async def run(self) -> None:
        await self.peripheral.power_on()
        self.connecting = asyncio.Lock()
        # A central ready for the first connection: making one takes a while under load.
        self.give_back(await self.take_central())
        stop = asyncio.Event()
        got = []
        loop = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, lambda s=s: (got.append(s), stop.set()))
        self.open_listener()
        bugs = ", ".join(sorted(self.a.bug)) or "none"
        self.info(f"listening on {self.path} (server MTU {self.a.mtu}, authorization {self.a.authorization}, bugs: {bugs})")
        await stop.wait()
        self.close_listener()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.fault(f"stopped by signal {got[0] if got else 0}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", help="the socket path (unix:PATH or PATH)")
    p.add_argument("--bug", action="append", default=[], help="a planted bug (repeatable, comma lists, all): " + ", ".join(BUGS))
    p.add_argument("--list-bugs", action="store_true")
    p.add_argument("--mtu", type=int, default=247, help="the Rx MTU Bumble's server offers in Exchange MTU (default 247)")
    p.add_argument("--authorization", choices=["none", "button", "never"], default="none",
                   help="none: starts AUTHORIZED (no authorizer, the default); button: AUTHORIZATION_REQUIRED until the "
                        "user presses the button, --button-after ms after the app read that state; never: nobody presses it")
    p.add_argument("--button-after", type=int, default=1500, help="device ms (default 1500)")
    p.add_argument("--capabilities", type=lambda x: int(x, 0), default=CAP_IDENTIFY | CAP_DEVICE_INFO | CAP_SCAN,
                   help="the Capabilities byte (default 0x07: identify, device info, Wi-Fi scan)")
    p.add_argument("--world", help="a JSON list of networks (Tests/IndependentDevices/worlds format) instead of the built-in one")
    p.add_argument("--time-scale", type=float, default=0.1, help="wall seconds per device second (default 0.1)")
    p.add_argument("--reboot-ms", type=int, default=100, help="how long a crashed device refuses connections (default 100)")
    p.add_argument("--bumble-as-is", action="store_true",
                   help="no guard against Bumble 0.0.236's unanswered requests (guard_bumble): they go unanswered")
    p.add_argument("--quiet", action="store_true", help="only faults on stderr")
    a = p.parse_args()
    if a.list_bugs:
        print("\n".join(f"{k}: {v}" for k, v in BUGS.items()))
        return 0
    if not a.listen:
        p.error("--listen PATH is needed")
    bugs = {b.strip() for x in a.bug for b in x.split(",") if b.strip()}
    if "all" in bugs:
        bugs = set(BUGS)
    unknown = bugs - set(BUGS)
    if unknown:
        p.error(f"unknown bug {', '.join(sorted(unknown))}; --list-bugs shows them")
    a.bug = bugs
    logging.basicConfig(level=logging.CRITICAL)

    async def serve() -> None:
        await Bridge(a).run()
    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
