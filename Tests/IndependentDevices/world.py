"""The Wi-Fi neighbourhood the independent devices live in.

Fixed networks (the seed only moves each RSSI by at most 1 dB and picks the
BSSIDs and the DHCP address): every scan of one device process returns the
same list, whatever the MTU, so results never depend on the link.
"""

import random

# auth modes (nRF7 numbering, PROTOCOLS.md section 5)
OPEN, WEP, WPA_PSK, WPA2_PSK, WPA_WPA2_PSK, WPA2_ENTERPRISE, WPA3_PSK = range(7)
BAND_24, BAND_5 = 1, 2

# ssid, band, channel, base rssi, auth, password, dhcp answers
NETWORKS = [
    ("HomeNet", BAND_24, 6, -47, WPA2_PSK, "Tr0ub4dor&3", True),
    ("HomeNet-5G", BAND_5, 36, -53, WPA2_PSK, "Tr0ub4dor&3", True),
    ("FRITZ!Box 7530 QK", BAND_24, 11, -57, WPA_WPA2_PSK, "8127 4410 9921 3344", True),
    ("Vodafone-Homespot-7F3A-Extended", BAND_24, 1, -61, WPA2_PSK, "vf-homespot-77", True),
    ("Lab, Bench 3", BAND_24, 1, -65, WPA2_PSK, "benchpass", True),
    ("B\u00fcro-G\u00e4ste", BAND_24, 6, -69, WPA2_PSK, "willkommen", True),
    ("DIRECT-7C-HP OfficeJet Pro 9020", BAND_24, 6, -72, WPA2_PSK, "hp-direct-12345", True),
    ("Garage-AP", BAND_24, 11, -76, WPA2_PSK, "garage1234", False),
    ("xfinitywifi", BAND_24, 11, -79, OPEN, "", True),
    ("TheNetworkNameIsThirtyTwoBytes!!", BAND_24, 1, -82, WPA3_PSK, "thirty-two", True),
    ("eduroam", BAND_24, 1, -85, WPA2_ENTERPRISE, None, True),
    ("Neighbour-5G", BAND_5, 149, -87, WPA2_PSK, "nachbar", True),
    ("NETGEAR42", BAND_24, 6, -91, WPA2_PSK, "purplecarrot417", True),
]


class Network:
    def __init__(self, ssid, band, channel, rssi, auth, password, dhcp, bssid):
        self.ssid = ssid
        self.ssid_bytes = ssid.encode("utf-8")
        self.band = band
        self.channel = channel
        self.rssi = rssi
        self.auth = auth
        self.password = password
        self.dhcp = dhcp
        self.bssid = bssid

    def __repr__(self):
        return "<%s %d dBm>" % (self.ssid, self.rssi)


def load_world_file(path):
    """A JSON list of networks replacing NETWORKS: objects with ssid, rssi and optionally
    band (1 = 2.4 GHz, 2 = 5 GHz; default 1), channel (6), auth (3 WPA2_PSK),
    password (null: enterprise, no PSK joins), dhcp (true)."""
    import json
    with open(path, encoding="utf-8") as f:
        items = json.load(f)
    out = []
    for it in items:
        out.append((it["ssid"], it.get("band", BAND_24), it.get("channel", 6), int(it["rssi"]),
                    it.get("auth", WPA2_PSK), it.get("password", ""), it.get("dhcp", True)))
    return out


class World:
    table = NETWORKS      # device.py --world FILE replaces it

    def __init__(self, seed=1):
        rnd = random.Random(seed)
        self.networks = []
        for ssid, band, ch, rssi, auth, pw, dhcp in self.table:
            bssid = bytes([rnd.randrange(256) & 0xFC | 0x00] + [rnd.randrange(256) for _ in range(5)])
            self.networks.append(Network(ssid, band, ch, rssi + rnd.choice((-1, 0, 1)), auth, pw,
                                         dhcp, bssid))
        # spacing of at least 3 dB and a jitter of 1 keep the order for every seed
        self.networks.sort(key=lambda n: -n.rssi)
        self.ip_last = rnd.randrange(20, 200)

    def visible(self, bands=(BAND_24, BAND_5)):
        return [n for n in self.networks if n.band in bands]

    def find(self, ssid_bytes, bands=(BAND_24, BAND_5)):
        for n in self.networks:
            if n.ssid_bytes == ssid_bytes and n.band in bands:
                return n
        return None

    def join(self, ssid_bytes, password_bytes, bands=(BAND_24, BAND_5)):
        """Outcome of a join: ("ok"|"not-found"|"auth"|"no-ip", network)."""
        n = self.find(ssid_bytes, bands)
        if n is None:
            return "not-found", None
        if n.password is None:            # enterprise: a PSK client cannot join
            return "auth", n
        if n.auth != OPEN and password_bytes != n.password.encode("utf-8"):
            return "auth", n
        if not n.dhcp:
            return "no-ip", n
        return "ok", n
