#!/usr/bin/env python3
"""Makes the VM harness's write round-trip benchmark: from a replay script extracted from the
speaker OTA capture, keeps the connection set-up (connect, MTU, discovery) and the first CCCD
subscription (a Write Request), then repeats that subscription N times. Each repetition is one
Write Request and its Write Response, with no device-side effect, so the replay's observed step
times give the round trip. Usage: bench-script.py SCRIPT.json N OUT.json"""
import json, sys

script_path, n, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
script = json.load(open(script_path))
steps = script["steps"]
setup = []
for s in steps:
    if s["action"] == "subscribe":
        sub = s
        break
    if s["action"] in ("connect", "exchange-mtu", "discover"):
        setup.append(s)
else:
    sys.exit("bench-script: no subscribe step in " + script_path)
at = max(s.get("at", 0) for s in setup + [sub])
bench = []
for i in range(n):
    s = dict(sub)
    s["at"] = at + i + 1
    bench.append(s)
script["steps"] = setup + bench + [{"action": "disconnect", "at": at + n + 1}]
script["redacted"] = False
json.dump(script, open(out_path, "w"), indent=1)
print(f"bench-script: {len(setup)} set-up steps, {n} Write Requests to {sub.get('descriptor') or sub.get('characteristic')}")
