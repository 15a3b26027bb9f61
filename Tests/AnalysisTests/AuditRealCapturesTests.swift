import Capture
import Foundation
import HCI
import Profiles
import Protocols
import TestSupport
import XCTest
@testable import Analysis

/// On the real captures, the audit's pairing and encryption findings agree with what tshark
/// shows of SMP (Pairing Request/Response/Failed and their AuthReq flags) and of encryption
/// starting (HCI Encryption Change, LL_START_ENC_REQ/RSP).
final class AuditRealCapturesTests: XCTestCase {
    struct TsharkView {
        /// Pairing findings the completed pairings call for.
        var pairingFindings = Set<String>()
        var completedPairings = 0
        /// Frames where a connection's encryption started, and the connections that were encrypted.
        var encryptionFrames = Set<Int>()
        var encryptedConnections = Set<String>()
    }

    static func tsharkView(_ path: String) throws -> TsharkView {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try Files.tshark)
        let userDLT = #"uat:user_dlts:"User 0 (DLT=147)","btle","0","","0","""#
        p.arguments = ["-r", path, "-o", userDLT, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f",
                       "-e", "frame.number", "-e", "btsmp.opcode", "-e", "btsmp.io_capability", "-e", "btsmp.oob_data_flags",
                       "-e", "btsmp.mitm_flag", "-e", "btsmp.sc_flag", "-e", "bthci_acl.chandle", "-e", "btle.access_address",
                       "-e", "bthci_evt.code", "-e", "bthci_evt.status", "-e", "bthci_evt.encryption_enable",
                       "-e", "bthci_evt.connection_handle", "-e", "btle.control_opcode"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()

        func int(_ s: Substring) -> Int? { s.hasPrefix("0x") ? Int(s.dropFirst(2), radix: 16) : Int(s) }
        var view = TsharkView()
        var pending: [String: (request: SMPPDU.PairingFeatures?, response: SMPPDU.PairingFeatures?, failed: Bool)] = [:]
        func close(_ c: String) {
            guard let p = pending.removeValue(forKey: c), let a = p.request, let b = p.response, !p.failed else { return }
            view.completedPairings += 1
            let sc = a.secureConnections && b.secureConnections
            if PairingMethod.of(initiator: a, responder: b, secureConnections: sc) == "Just Works" { view.pairingFindings.insert("pairing.just-works") }
            if !sc { view.pairingFindings.insert("pairing.legacy") }
            if !a.mitm && !b.mitm { view.pairingFindings.insert("pairing.no-mitm") }
        }
        for line in text.split(separator: "\n") {
            let f = line.split(separator: "|", omittingEmptySubsequences: false)
            guard f.count >= 13, let frame = int(f[0]) else { continue }
            let connection = !f[6].isEmpty ? "h\(int(f[6]) ?? -1)" : !f[7].isEmpty ? "aa\(f[7])" : "?"
            if let op = int(f[1]) {
                let features = SMPPDU.PairingFeatures(ioCapability: UInt8(int(f[2]) ?? 0), oobDataPresent: (int(f[3]) ?? 0) != 0,
                                                      authReq: (int(f[4]) == 1 ? 0x04 : 0) | (int(f[5]) == 1 ? 0x08 : 0),
                                                      maxKeySize: 16, initiatorKeyDistribution: 0, responderKeyDistribution: 0)
                switch op {
                case 1:
                    close(connection)
                    pending[connection] = (features, nil, false)
                case 2: pending[connection]?.response = features
                case 5: pending[connection]?.failed = true
                default: break
                }
            }
            if let code = int(f[8]), code == 0x08 || code == 0x59, int(f[9]) == 0, (int(f[10]) ?? 0) != 0 {  // 1: E0 or AES-CCM (LE), 2: AES-CCM (BR/EDR)
                view.encryptionFrames.insert(frame)
                view.encryptedConnections.insert("h\(int(f[11]) ?? -1)")
            }
            if let op = int(f[12]), op == 0x05 || op == 0x06 {
                view.encryptionFrames.insert(frame)
                view.encryptedConnections.insert(connection)
            }
        }
        for c in Array(pending.keys) { close(c) }
        return view
    }

    func testPairingAndEncryptionAgreeWithTshark() throws {
        var pairingCaptures = 0, encryptedCaptures = 0
        for path in try Files.realCaptures() {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let shark = try Self.tsharkView(path)
            let report = try AuditTests.audit(path, configuration: ProtocolKeys())
            let ours = Set(report.findings.map(\.id).filter { $0.hasPrefix("pairing.") })
            XCTAssertEqual(ours, shark.pairingFindings, "\(name): pairing findings")
            let completed = report.links.flatMap(\.pairings).filter { $0.failed == nil && $0.ioCapabilities != nil }.count
            XCTAssertEqual(completed, shark.completedPairings, "\(name): completed pairings")
            let encryptedAt = Set(report.links.compactMap(\.encryptedAtRecord))
            XCTAssertTrue(encryptedAt.isSubset(of: shark.encryptionFrames),
                          "\(name): encryption starts at \(encryptedAt.subtracting(shark.encryptionFrames).sorted()) where tshark shows none")
            XCTAssertEqual(encryptedAt.isEmpty, shark.encryptionFrames.isEmpty, "\(name): encrypted at all")
            if shark.completedPairings > 0 { pairingCaptures += 1 }
            if !shark.encryptionFrames.isEmpty { encryptedCaptures += 1 }
        }
        print("audit vs tshark: pairing findings agree on every real capture (\(pairingCaptures) with pairings), encryption on \(encryptedCaptures) encrypted captures")
        XCTAssertGreaterThan(pairingCaptures, 5)
        XCTAssertGreaterThan(encryptedCaptures, 10)
    }
}
