#!/usr/bin/env python3
"""Writes Captures/speaker-ota-demo.btsnoop: a phone's HCI log (btsnoop 1002) of a speaker OTA
update that fails at 63 % when the link drops.

It is built packet by packet from PROTOCOLS.md (HCI events, ACL, L2CAP, ATT, the speaker's
OTA protocol), deterministically, so `make demo` has a capture to decode before the emulator
(issue 3) records real sessions. Run: python3 Scripts/make-demo-capture.py OUT
"""
import struct
import sys

EPOCH = 0x00DCDDB30F2F8000
t_us = 1_763_800_000_000_000  # 2025-11-22T08:26:40Z
records = []
HANDLE = 0x0040
PEER = bytes.fromhex("563412EEFFC0")  # C0:FF:EE:12:34:56, little-endian on the wire
BASE = bytes.fromhex("78563412F0DEBC9A78563412")  # ...-1234-5678-9ABC-DEF012345678 reversed tail


def uuid128(n):
    """0000000N-1234-5678-9ABC-DEF012345678, little-endian."""
    return bytes.fromhex("78563412f0debc9a7856341200000000")[:12] + struct.pack("<I", n)


def add(h4, flags, payload, dt_ms):
    global t_us
    t_us += int(dt_ms * 1000)
    data = bytes([h4]) + payload
    records.append(struct.pack(">IIIIq", len(data), len(data), flags, 0, t_us + EPOCH) + data)


def cmd(opcode, params, dt=1):
    add(0x01, 0b10, struct.pack("<HB", opcode, len(params)) + params, dt)


def evt(code, params, dt=1):
    add(0x04, 0b11, bytes([code, len(params)]) + params, dt)


def acl(att, sent, dt):
    l2cap = struct.pack("<HH", len(att), 0x0004) + att
    add(0x02, 0 if sent else 1, struct.pack("<HH", HANDLE | 0x2000, len(l2cap)) + l2cap, dt)
    if sent:
        evt(0x13, struct.pack("<BHH", 1, HANDLE, 1), 2)  # Number of Completed Packets


def req(att, dt=15):
    acl(att, True, dt)


def rsp(att, dt=30):
    acl(att, False, dt)


# Connect
cmd(0x200D, struct.pack("<HHBB", 0x60, 0x30, 0, 1) + PEER + struct.pack("<BHHHHHH", 0, 24, 40, 0, 400, 0, 0), 0)
evt(0x0F, struct.pack("<BBH", 0, 1, 0x200D), 1)
evt(0x3E, struct.pack("<BBHBB", 0x01, 0, HANDLE, 0, 1) + PEER + struct.pack("<HHHB", 24, 0, 400, 0), 180)
# MTU: the phone offers 185, the ESP32 answers 23
req(struct.pack("<BH", 0x02, 185), 40)
rsp(struct.pack("<BH", 0x03, 23))
# Discovery of services
req(struct.pack("<BHHH", 0x10, 0x0001, 0xFFFF, 0x2800))
rsp(bytes([0x11, 6]) + struct.pack("<HHH", 0x0001, 0x0005, 0x1800) + struct.pack("<HHH", 0x0006, 0x0009, 0x1801))
req(struct.pack("<BHHH", 0x10, 0x000A, 0xFFFF, 0x2800))
rsp(bytes([0x11, 20]) + struct.pack("<HH", 0x000A, 0x0015) + uuid128(1))
req(struct.pack("<BHHH", 0x10, 0x0016, 0xFFFF, 0x2800))
rsp(struct.pack("<BBHB", 0x01, 0x10, 0x0016, 0x0A))
# Characteristics of the speaker service, one 128-bit declaration per response at MTU 23
chars = [(0x000B, 0x0A, 0x000C, 2), (0x000D, 0x08, 0x000E, 5), (0x000F, 0x08, 0x0010, 6),
         (0x0011, 0x08, 0x0012, 7), (0x0013, 0x12, 0x0014, 8)]
start = 0x000A
for decl, props, value, n in chars:
    req(struct.pack("<BHHH", 0x08, start, 0x0015, 0x2803))
    rsp(bytes([0x09, 21]) + struct.pack("<HBH", decl, props, value) + uuid128(n))
    start = value
req(struct.pack("<BHHH", 0x08, 0x0014, 0x0015, 0x2803))
rsp(struct.pack("<BBHB", 0x01, 0x08, 0x0014, 0x0A))
req(struct.pack("<BHH", 0x04, 0x0015, 0x0015))
rsp(struct.pack("<BBHH", 0x05, 1, 0x0015, 0x2902))
# Subscribe to OTA_STATUS
req(struct.pack("<BHH", 0x12, 0x0015, 0x0001), 40)
rsp(bytes([0x13]))


def status(state, error, progress, done_kb, total_kb, rssi, dt):
    rsp(struct.pack("<BHBBBHHb", 0x1B, 0x0014, state, error, progress, done_kb, total_kb, rssi), dt)


def long_write(handle, value, dt=15):
    for offset in range(0, len(value), 18):
        part = value[offset:offset + 18]
        req(struct.pack("<BHH", 0x16, handle, offset) + part, dt)
        rsp(struct.pack("<BHH", 0x17, handle, offset) + part)
    req(bytes([0x18, 0x01]), dt)
    rsp(bytes([0x19]))


# Credentials: SSID, NUL, password (longer than MTU-3: a long write)
long_write(0x000E, b"HomeNet-2G\x00correct horse battery", 300)
status(0x01, 0, 0, 0, 0, 0, 40)
# Firmware URL over plain http
long_write(0x0010, b"http://fw.chaoticvolt.eu/speaker/2.4.1.bin", 200)
status(0x02, 0, 0, 0, 0, 0, 40)
# START
req(struct.pack("<BHBB", 0x12, 0x0012, 0x10, 0x00), 500)
rsp(bytes([0x13]))
status(0x03, 0, 0, 0, 0, -61, 60)
status(0x04, 0, 0, 0, 0, -61, 3200)
total = 1480
for progress in range(0, 64, 7):
    status(0x05, 0, progress, total * progress // 100, total, -63 - progress // 20, 2100)
status(0x05, 0, 63, total * 63 // 100, total, -71, 1900)
# The link drops: supervision timeout while downloading
evt(0x05, struct.pack("<BHB", 0, HANDLE, 0x08), 4000)

with open(sys.argv[1], "wb") as f:
    f.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
    for r in records:
        f.write(r)
print(f"wrote {sys.argv[1]}: {len(records)} records")
