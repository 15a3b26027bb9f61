#!/usr/bin/env python3
"""RPC frames built by Home Assistant's Improv client (py-improv-ble-client, pinned in
Scripts/bumble-env.sh), one JSON object a line, for the Improv tests to decode with GATTLab:
an independent implementation of the packet format. Only the client's protocol module is used;
its package imports bleak and bleak-retry-connector (the BLE transport), which are not
installed, so stand-ins for the two names its errors module takes let the protocol module load."""
import importlib.util
import json
import sys
import types

try:
    import bleak.exc  # noqa: F401
except ImportError:
    bleak = types.ModuleType("bleak")
    exc = types.ModuleType("bleak.exc")

    class BleakError(Exception):
        pass

    exc.BleakError = BleakError
    bleak.exc = exc
    sys.modules["bleak"] = bleak
    sys.modules["bleak.exc"] = exc
try:
    import bleak_retry_connector  # noqa: F401
except ImportError:
    retry = types.ModuleType("bleak_retry_connector")
    retry.BLEAK_RETRY_EXCEPTIONS = (Exception,)
    sys.modules["bleak_retry_connector"] = retry

spec = importlib.util.find_spec("improv_ble_client")
if spec is None:
    sys.exit("improv_frames: py-improv-ble-client is not installed (Scripts/bumble-env.sh)")
package = types.ModuleType("improv_ble_client")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["improv_ble_client"] = package
from improv_ble_client import protocol as p  # noqa: E402


def out(name, kind, data, **fields):
    print(json.dumps({"name": name, "kind": kind, "hex": bytes(data).hex(), **fields}))


out("wifi-settings", "command", p.WiFiSettingsCmd(b"HomeNet", b"correct horse battery staple").as_bytes(),
    ssid="HomeNet", password="correct horse battery staple", command=1)
out("wifi-settings-open", "command", p.WiFiSettingsCmd(b"Cafe Guest", b"").as_bytes(), ssid="Cafe Guest", password="", command=1)
long_ssid = b"S" * 32
long_password = b"p" * 63
out("wifi-settings-long", "command", p.WiFiSettingsCmd(long_ssid, long_password).as_bytes(),
    ssid=long_ssid.decode(), password=long_password.decode(), command=1)
out("identify", "command", p.IdentifyCmd().as_bytes(), command=2)
out("device-info", "command", p.DeviceInfoCmd().as_bytes(), command=3)
out("scan", "command", p.ScanWifiCmd().as_bytes(), command=4)
out("hostname-get", "command", p.HostnameCmd().as_bytes(), command=5)
out("hostname-set", "command", p.HostnameCmd(b"kitchen-light").as_bytes(), command=5, strings=["kitchen-light"])
out("result-url", "result", p.WiFiSettingsRes(b"https://my.home-assistant.io/", []).as_bytes(), command=1,
    strings=["https://my.home-assistant.io/"])
out("result-info", "result", p.DeviceInfoRes(b"ESPHome", b"2024.6.0", b"ESP32-C3", b"Kitchen Light").as_bytes(), command=3,
    strings=["ESPHome", "2024.6.0", "ESP32-C3", "Kitchen Light"])
out("result-networks", "result", p.ScanWifiRes([(b"HomeNet", b"-52", b"WPA2"), (b"Cafe Guest", b"-80", b"NO")]).as_bytes(),
    command=4, strings=["HomeNet", "-52", "WPA2", "Cafe Guest", "-80", "NO"])
# And the other way: GATTLab's frames read by the client's parser (given as hex arguments).
for arg in sys.argv[1:]:
    try:
        parsed = p.parse_result(bytes.fromhex(arg))
        print(json.dumps({"parsed": arg, "type": type(parsed).__name__, "ok": True}))
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"parsed": arg, "ok": False, "error": str(e)}))
