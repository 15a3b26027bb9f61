import Profiles
import Report

// How `gattlab decode` shows the sensor's Wi-Fi scan.

extension SensorScan.Request: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String { "Scan request \"\(ProtocolText.display(bytes))\"" }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.string("request", ProtocolText.display(bytes))
    }
}

extension SensorScan.Response: DecodeRendering {
    public func decodeSummary(reveal: Bool) -> String {
        let list = networks.map { "\($0.ssidText) (\($0.rssi))" }.joined(separator: ", ")
        let style = markerStyle == "none" ? "" : ", markers \(markerStyle)" + (markerStyles.count > 1 ? " (\(markerStyles.joined(separator: ", ")))" : "")
        return "Scan result \(complete ? "" : "TRUNCATED ")\(networks.count) networks in \(chunks) notifications\(style)\(list.isEmpty ? "" : ": " + list)"
    }

    public func decodeJSON(reveal: Bool, into json: inout JSONBuild) {
        json.bool("complete", complete)
        json.int("chunks", chunks)
        json.string("markerStyle", markerStyle)
        if markerStyles.count > 1 { json.strings("markerStyles", markerStyles) }
        json.raw("networks", NetworkJSON.array(networks.map(WiFiNetwork.init)))
    }
}
