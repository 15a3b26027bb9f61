#!/usr/bin/env python3
"""Run one independent test device on a unix: SEQPACKET socket.

  python3 device.py speaker --listen /tmp/ispk.sock [--bug NAME ...] [--seed N]
  python3 device.py sensor  --listen unix:/tmp/isen.sock --bug end-marker-room
  python3 device.py nrf7    --listen /tmp/inrf.sock --bug all
  python3 device.py speaker --list-bugs
  python3 device.py speaker --gatt          # print the attribute table and exit

Stops on SIGINT/SIGTERM (or after --connections N clients) and removes the socket.
"""

import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from att_server import Server  # noqa: E402


def device_class(name):
    if name == "speaker":
        from speaker import Speaker
        return Speaker
    if name == "sensor":
        from sensor import Sensor
        return Sensor
    if name == "nrf7":
        from nrf7 import Nrf7
        return Nrf7
    raise SystemExit("unknown device %r (speaker, sensor, nrf7)" % name)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Independent BLE GATT test devices over unix: sockets")
    ap.add_argument("device", choices=["speaker", "sensor", "nrf7"])
    ap.add_argument("--listen", help="socket path (a unix: prefix is accepted)")
    ap.add_argument("--bug", action="append", default=[],
                    help="turn a planted bug on (repeatable; 'all' for every bug of the device)")
    ap.add_argument("--seed", type=int, default=1, help="world seed (RSSI jitter, BSSIDs, IP)")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="multiply the device's (already compressed) delays, e.g. 10 for slower")
    ap.add_argument("--mtu", type=int, default=None,
                    help="the server's Rx MTU in Exchange MTU (default: the device's own: "
                         "speaker 185, sensor 247, nrf7 244)")
    ap.add_argument("--world", help="a JSON file of Wi-Fi networks replacing the built-in ones")
    ap.add_argument("--no-bond", action="store_true",
                    help="answer Insufficient Authentication (0x05) instead of Insufficient "
                         "Encryption (0x0F) on a plain link, as a stack without a bond does")
    ap.add_argument("--going-down", type=float, default=0.0, metavar="MS",
                    help="after a crash the radio goes on accepting links for MS milliseconds "
                         "and drops them at the reset, as a controller does while its firmware "
                         "resets (default 0: it stops at once)")
    ap.add_argument("--connections", type=int, default=None, help="stop after N clients")
    ap.add_argument("--quiet", action="store_true", help="only faults on stderr")
    ap.add_argument("--list-bugs", action="store_true")
    ap.add_argument("--gatt", action="store_true", help="print the GATT table and exit")
    args = ap.parse_args(argv)

    cls = device_class(args.device)
    if args.list_bugs:
        for name, what in sorted(cls.bugs.items()):
            print("%-20s %s" % (name, what))
        return 0
    bugs = []
    for b in args.bug:
        for part in b.split(","):
            part = part.strip()
            if part == "all":
                bugs.extend(cls.bugs)
            elif part:
                bugs.append(part)
    if args.world:
        import world
        world.World.table = world.load_world_file(args.world)
    if args.mtu is not None:
        if not 23 <= args.mtu <= 517:
            sys.stderr.write("device.py: --mtu must be 23..517\n")
            return 64
        cls.server_mtu = args.mtu
    if args.no_bond:
        cls.security_error = 0x05
    try:
        dev = cls(enabled_bugs=bugs, seed=args.seed, time_scale=args.time_scale)
    except ValueError as e:
        sys.stderr.write("device.py: %s\n" % e)
        return 64
    if args.gatt:
        print(dev.db.dump())
        return 0
    if not args.listen:
        sys.stderr.write("device.py: --listen PATH is required\n")
        return 64
    path = args.listen[5:] if args.listen.startswith("unix:") else args.listen
    server = Server(dev, path, quiet=args.quiet, max_connections=args.connections)
    server.going_down = max(0.0, args.going_down) / 1000.0

    def stop(signum, frame):
        server.running = False
        sys.stderr.write("[%s] stopped by signal %d with %d link(s) open\n" % (
            args.device, signum, len(server.links)))
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
