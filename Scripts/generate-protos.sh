#!/usr/bin/env bash
# Regenerates the Swift code for the nRF7 and ESP-IDF provisioning messages from Protos/.
# The generated .pb.swift files are committed, so builds and CI never need protoc or the plugin;
# run this only after changing a .proto file.
#
# One-time set-up (Debian/Ubuntu):
#   apt-get install -y protobuf-compiler          # protoc 3.21
#   git clone --depth 1 --branch 1.39.0 https://github.com/apple/swift-protobuf /tmp/swift-protobuf
#   (cd /tmp/swift-protobuf && swift build -c release --product protoc-gen-swift)
#   # building only that product (about 80 s) skips the C++ protoc inside the package
#
# Usage: Scripts/generate-protos.sh [path/to/protoc-gen-swift]
#   default plugin: /tmp/swift-protobuf/.build/release/protoc-gen-swift
set -euo pipefail

plugin="${1:-/tmp/swift-protobuf/.build/release/protoc-gen-swift}"
root="$(cd "$(dirname "$0")/.." && pwd)"

if ! command -v protoc >/dev/null; then
    echo "protoc not found: apt-get install -y protobuf-compiler" >&2
    exit 1
fi
if [ ! -x "$plugin" ]; then
    echo "protoc-gen-swift not found at $plugin (see the set-up steps at the top of this script)" >&2
    exit 1
fi

generate() {
    local proto_dir="$1" out_dir="$2"
    mkdir -p "$out_dir"
    rm -f "$out_dir"/*.pb.swift
    protoc --plugin=protoc-gen-swift="$plugin" \
        --proto_path="$proto_dir" \
        --swift_out="$out_dir" \
        --swift_opt=Visibility=Public \
        "$proto_dir"/*.proto
}

generate "$root/Protos/nrf7" "$root/Sources/Protocols/NRF7/Codec/Generated"
generate "$root/Protos/esp" "$root/Sources/Protocols/ESPProvisioning/Codec/Generated"
echo "generated: Sources/Protocols/NRF7/Codec/Generated, Sources/Protocols/ESPProvisioning/Codec/Generated"
