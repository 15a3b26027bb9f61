import ATT
import Emulator
import Foundation
import GATT
import Profiles
import Protocols
@testable import Replay
import TestSupport
import XCTest

/// Issue 17: a device built from a capture (`emulate --from`, `emu:recorded`, and the shape
/// `replay run CAPTURE --target emu:NAME` gives the named device).
final class RecordedDeviceTests: XCTestCase {
    static func capture(_ name: String) -> String {
        Files.root.appendingPathComponent("Captures/emulated/\(name).btsnoop").path
    }

    func replay(_ script: SessionScript, _ spec: EmulatedDeviceSpec, comparison: ReplayComparison = .progress,
                timing: ReplayTiming = .recorded) async throws -> ReplayReport {
        let link = EmulatedLink(seed: 1, device: spec.factory)
        return try await ReplayRunner(script: script, options: ReplayOptions(protocols: GATTLabProtocols.all, timing: timing, comparison: comparison)).run(on: link, target: "emu:\(spec.name)")
    }

    func testTheCadenceReadFromARecordingIsTheDevicesOwn() throws {
        // The emulated speaker that made this recording downloads 1480 KB, reports every 128 KB,
        // at 160 KB/s (SpeakerConfiguration's defaults): the recording must say the same.
        let ota = try RecordedDevice.read(path: Self.capture("speaker-ota-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        let defaults = SpeakerConfiguration()
        XCTAssertEqual(ota.cadence.firmwareKB, defaults.firmwareKB)
        XCTAssertEqual(ota.cadence.progressEveryKB, defaults.progressEveryKB)
        let speed = try XCTUnwrap(ota.cadence.downloadKBPerSecond)
        XCTAssertEqual(Double(speed), Double(defaults.downloadKBPerSecond), accuracy: Double(defaults.downloadKBPerSecond) * 0.1)
        // Its table is the one the phone discovered: the emulated speaker's handles.
        let table = try XCTUnwrap(ota.table)
        let builtIn = try XCTUnwrap(GATTLabProtocols.all.builtInTable(named: "speaker")?.table)
        XCTAssertEqual(Set(table.table.characteristics.values.map(\.valueHandle)), Set(builtIn.characteristics.values.map(\.valueHandle)))
        XCTAssertNil(table.serverMTU, "the speaker accepted the 247 asked for")

        // A stack that stays at MTU 23 whatever the phone asks.
        let capped = try RecordedDevice.read(path: Self.capture("speaker-mtu23-only-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all))
        XCTAssertEqual(capped.table?.serverMTU, 23)

        // The sensor's gap between chunks and its markers.
        let separate = try RecordedDevice.read(path: Self.capture("sensor-scan-separate-markers-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all))
        XCTAssertEqual(separate.cadence.separateMarkers, true)
        let sensorGap = try XCTUnwrap(separate.cadence.notificationGap)
        XCTAssertEqual(Double(sensorGap), Double(SensorConfiguration().notificationGap), accuracy: 5_000)
        XCTAssertEqual(try RecordedDevice.read(path: Self.capture("sensor-scan-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all)).cadence.separateMarkers, false)
    }

    func testEveryProjectRecordingReplaysAgainstTheDeviceBuiltFromIt() async throws {
        // emu:recorded: the protocol's device bound to the recorded table, with the recorded
        // cadence and Wi-Fi world. Byte for byte (--strict) too, for the healthy devices' sessions.
        for name in ["speaker-ota-mtu247", "speaker-ota-mtu23", "sensor-scan-mtu247", "sensor-scan-separate-markers-mtu23",
                     "nrf7-provision-mtu247", "speaker-mtu23-only-mtu247"] {
            let device = try RecordedDevice.read(path: Self.capture(name), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
            let values = try ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values()
            let spec = try XCTUnwrap(device.emulated(values: values, protocols: GATTLabProtocols.all), name)
            for comparison in ReplayComparison.allCases {
                let report = try await replay(device.script, spec, comparison: comparison)
                XCTAssertEqual(report.verdict, .equivalent, "\(name) (\(comparison)):\n\(report.text(verbose: false, color: false))")
            }
        }
    }

    func testAFaultyDeviceShapedLikeTheRecordingStillFails() async throws {
        // The recorded table and cadence do not hide a device's fault.
        let device = try RecordedDevice.read(path: Self.capture("speaker-ota-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        let stall = try XCTUnwrap(EmulatedDeviceSpec.named("speaker-download-stall", protocols: GATTLabProtocols.all))
        let report = try await replay(device.script, device.shape(stall, values: try ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values()))
        XCTAssertEqual(report.verdict, .diverged)
        XCTAssertTrue(report.steps.contains { $0.differences.joined().contains("ERROR error DOWNLOAD") }, report.text(verbose: true, color: false))
    }

    func testTheRecordedDeviceLosesTheLinkWhereTheRecordingDid() async throws {
        // A device that lost the link mid-protocol: the device built from the recording loses it
        // at the same point (the speaker at the download's last reported progress, the nRF7 in
        // its connection state), while the healthy named device, shaped alike, does not.
        let cases: [(path: String, fault: String)] = [
            (Files.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path, "63 % of the download"),
            (Self.capture("speaker-disconnect-downloading-mtu247"), "0 % of the download"),
            (Self.capture("nrf7-disconnect-obtaining-ip-mtu247"), "OBTAINING_IP"),
        ]
        for (path, fault) in cases {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let device = try RecordedDevice.read(path: path, options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
            XCTAssertEqual(device.script.steps.last?.action, .linkLost, name)
            let values = try ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values()
            let recorded = try XCTUnwrap(device.emulated(values: values, protocols: GATTLabProtocols.all), name)
            XCTAssertTrue(recorded.summary.contains(fault), "\(name): \(recorded.summary)")
            let same = try await replay(device.script, recorded)
            XCTAssertEqual(same.verdict, .equivalent, "\(name):\n\(same.text(verbose: false, color: false))")
            let healthy = try XCTUnwrap(EmulatedDeviceSpec.named(device.kind ?? "", protocols: GATTLabProtocols.all), name)
            let other = try await replay(device.script, device.shape(healthy, values: values))
            XCTAssertNotEqual(other.verdict, .equivalent, "\(name): a healthy device lost the link too")
        }
    }

    func testTheImageSizeIsReportedWhenTheRecordedFirmwareReportedIt() async throws {
        // The demo capture's firmware says 0 KB of 0 while it joins Wi-Fi and gives the size
        // (1480 KB) with the download; the emulator's own speaker knows it from START on. The
        // device built from each recording says it when the recording did (the VM harness's
        // emulate --from check decodes the status fields and found the demo's device early).
        let demo = try RecordedDevice.read(path: Files.root.appendingPathComponent("Captures/speaker-ota-demo.btsnoop").path,
                                           options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        XCTAssertEqual(demo.cadence.totalKBFromDownload, true)
        let own = try RecordedDevice.read(path: Self.capture("speaker-ota-mtu247"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        XCTAssertEqual(own.cadence.totalKBFromDownload, false)
        for (name, device) in [("demo", demo), ("speaker-ota-mtu247", own)] {
            let spec = try XCTUnwrap(device.emulated(values: try ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values(), protocols: GATTLabProtocols.all), name)
            let link = EmulatedLink(seed: 1, device: spec.factory)
            _ = try await ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all, timing: .fast)).run(on: link, target: "emu:recorded")
            // The statuses the device notified (ATT 0x1B in ACL data from it), as (state, total KB).
            let sent = await link.recording().packets.compactMap { p -> (SpeakerOTA.State, UInt16)? in
                guard p.kind == .acl, p.bytes.count >= 9 + 8, p.bytes[8] == 0x1B,
                      let st = SpeakerOTA.Status.decode(Array(p.bytes[11...])).0, let state = st.state else { return nil }
                return (state, st.totalKB)
            }
            let recorded = device.script.steps.compactMap { s -> (SpeakerOTA.State, UInt16)? in
                guard s.action == .notification, let v = s.expect?.value.flatMap(Hex.bytes), let st = SpeakerOTA.Status.decode(v).0,
                      let state = st.state else { return nil }
                return (state, st.totalKB)
            }
            for state in [SpeakerOTA.State.wifiConnecting, .wifiConnected, .downloading] {
                let want = recorded.first { $0.0 == state }?.1
                XCTAssertNotNil(want, "\(name) recorded \(state)")
                XCTAssertEqual(sent.first { $0.0 == state }?.1, want, "\(name): total KB in the first \(state) status")
            }
        }
    }

    func testALinkLossIsReadFromTheLastStatusBeforeIt() {
        // A hand-written recording (no emulator): statuses up to 40 %, then the device's link loss.
        func status(_ state: SpeakerOTA.State, _ progress: UInt8) -> ReplayStep {
            var s = ReplayStep(.notification, at: 0)
            s.characteristic = SpeakerOTA.status.canonicalString
            var x = ReplayStep.Expectation()
            x.value = Hex.string(SpeakerOTA.Status(state: state, error: .none, progress: progress, downloadedKB: 0, totalKB: 100, rssi: -50).encode())
            s.expect = x
            return s
        }
        let source = SessionScript.Source(capture: "hand", peer: nil, connections: [], start: 0)
        var steps = [ReplayStep(.connect, at: 0), status(.wifiConnecting, 0), status(.downloading, 20), status(.downloading, 40), ReplayStep(.linkLost, at: 1)]
        var fault = RecordedDevice.fault(SessionScript(source: source, device: "speaker", redacted: false, steps: steps))
        let failing = SpeakerConfiguration().withFault(fault)?.configuration
        XCTAssertEqual(failing?.disconnectAt, .downloading)
        XCTAssertEqual(failing?.disconnectAtProgress, 40)
        // The phone hanging up is not the device's failure.
        steps[steps.count - 1] = ReplayStep(.disconnect, at: 1)
        fault = RecordedDevice.fault(SessionScript(source: source, device: "speaker", redacted: false, steps: steps))
        XCTAssertEqual(fault, RecordedFault())
    }

    /// A real capture of a device GATTLab has no model of: its clone, and the capture's session
    /// replayed equivalent against it.
    /// `peer`: that device of the capture (default: the first with ATT traffic); `timings`: each
    /// is replayed, the report of the first is returned.
    @discardableResult
    func assertClonedEquivalent(_ name: String, peer: String? = nil, cause: String? = nil,
                                timings: [ReplayTiming] = [.recorded]) async throws -> (device: RecordedDevice, spec: EmulatedDeviceSpec, report: ReplayReport) {
        let device = try RecordedDevice.read(path: try RealCaptures.path(name), options: ExtractOptions(protocols: GATTLabProtocols.all, peer: peer, revealSecrets: true))
        let label = name + (peer.map { " \($0)" } ?? "")
        XCTAssertNil(device.kind, "\(label): no device protocol GATTLab models")
        if let peer { XCTAssertEqual(device.script.source.peer, peer, label) }
        let spec = try XCTUnwrap(device.emulated(values: try ReplayRunner(script: device.script, options: ReplayOptions(protocols: GATTLabProtocols.all)).values(), protocols: GATTLabProtocols.all), label)
        XCTAssertEqual(spec.kind, "clone")
        var reports: [ReplayReport] = []
        for timing in timings {
            let report = try await replay(device.script, spec, timing: timing)
            XCTAssertEqual(report.verdict, .equivalent, "\(label) (timing \(timing))\(cause.map { " (\($0))" } ?? ""):\n\(report.text(verbose: false, color: false))")
            reports.append(report)
        }
        return (device, spec, try XCTUnwrap(reports.first))
    }

    func testAnUnknownProtocolIsClonedAsRecorded() async throws {
        // Devices GATTLab has no model of, recorded by others: the clone answers as they did.
        _ = try RealCaptures.require()
        var clones: [String: (RecordedDevice, EmulatedDeviceSpec)] = [:]
        for name in ["blepcapanalyzer__fitup.pcap", "darkelf__test1.pcapng", "darkelf__btsnoop_hci.log"] {
            let (device, spec, _) = try await assertClonedEquivalent(name)
            clones[name] = (device, spec)
        }
        // One device's session against another's clone is not equivalent.
        let (fitup, _) = try XCTUnwrap(clones["blepcapanalyzer__fitup.pcap"])
        let (_, other) = try XCTUnwrap(clones["darkelf__test1.pcapng"])
        let crossed = try await replay(fitup.script, other)
        XCTAssertNotEqual(crossed.verdict, .equivalent)
        // The device that timed the link out at the end does so as a clone too.
        let (darkelf, _) = try XCTUnwrap(clones["darkelf__btsnoop_hci.log"])
        XCTAssertEqual(darkelf.script.steps.last?.action, .linkLost)
    }

    /// The clones of the other real captures with a session: what no write caused (notifications
    /// after a subscription, a link ended right after connecting), requests the server does not
    /// model (Read By Type of the device name), reads whose value changed or failed before
    /// encryption, notifications longer than the MTU: each as recorded.
    func testRealCapturesReplayEquivalentAgainstTheirClones() async throws {
        _ = try RealCaptures.require()
        // The cause each one needed, for whoever reads a failure.
        let captures = [
            "AndroidPad__btsnoop_hci.cfa": "notifications after the subscription",
            "revcar__btsnoop_hci.log": "a notification after a read, anchored to the subscription",
            "yeelock__btsnoop_hci.log": "indications without a subscription",
            "fuut__hci_snoop20250125165300.cfa": "indications after a subscription to indications",
            "fuut__btsnoop_hci20241230_1.log": "a link ended right after connecting; a value read differently later",
            "fuut__btsnoop_hci_20141017_1.log": "a link ended right after connecting",
            "fossibot__btsnoop_hci.log": "links ended right after connecting; MTU 517; the n-th subscription",
            "TesiBLE__garmin.pcapng": "Read By Type of the device name",
            "TesiBLE__Lv4_JW.pcapng": "Read By Type of the device name",
            "TesiBLE__fascia_cardio.pcapng": "Read By Type of the device name",
            "TesiBLE__mouse.pcapng": "a read refused before encryption",
            "blefun__btsnoop_hci.log": "a value that changed between reads",
            "ctfusbkbd__rgbctf2020_PI_1_MagicInTheAir.btsnoop": "a Report Map read part by part",
            "crackle__numeric_pin.pcap": "a write to a handle discovery never found",
            "bk300__btsnoop_hci.log.last": "a notification longer than the MTU; the device's own Exchange MTU",
            "sweyntooth__anomaly_nxp_unexpected_encryption_start.pcapng": "the link ended after connecting",
            "horizon74__btsnoop_hci.log": "notifications from a handle discovery found as a descriptor",
            "sweyntooth__capture_cypress_psoc6_crash_llid.pcapng": "link losses up to 40 s after connecting",
        ]
        for (name, cause) in captures.sorted(by: { $0.key < $1.key }) {
            // Fast too: the phone's delays dropped, the device's kept (its link losses,
            // its notifications on its own).
            let report = try await assertClonedEquivalent(name, cause: cause, timings: [.recorded, .fast]).report
            if name == "bk300__btsnoop_hci.log.last" {
                // The 54-byte notification goes out whole, as the device sent it on MTU 23.
                let last = try XCTUnwrap(report.steps.last { $0.action == "notification" })
                XCTAssertEqual(last.observed.first?.count, 108, "\(last.observed)")
            }
        }
        // Another device's session against one of these clones is still not equivalent.
        let garmin = try RecordedDevice.read(path: try RealCaptures.path("TesiBLE__garmin.pcapng"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        let android = try RecordedDevice.read(path: try RealCaptures.path("AndroidPad__btsnoop_hci.cfa"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        let androidClone = try XCTUnwrap(android.emulated(values: [:], protocols: GATTLabProtocols.all))
        let crossed = try await replay(garmin.script, androidClone)
        XCTAssertNotEqual(crossed.verdict, .equivalent)
    }

    /// A hand-made recording of a device whose stack notifies from the handle after the
    /// characteristic's value (discovery finds it as a descriptor with the characteristic's UUID).
    static func descriptorNotifier(descriptor: Bool) -> (SessionScript, AttributeTable) {
        let fff3 = BluetoothUUID(uuid16: 0xFFF3)
        var table = AttributeTable()
        table.addService(start: 0x0009, end: 0x0012, uuid: BluetoothUUID(uuid16: 0xFFF0), primary: true)
        table.addCharacteristic(declaration: 0x0010, properties: 0x18, valueHandle: 0x0011, uuid: fff3)
        table.addFoundInformation(handle: 0x0012, uuid: fff3)
        var notification = ReplayStep(.notification, at: 1_000_000)
        notification.characteristic = fff3.canonicalString
        notification.descriptor = descriptor ? fff3.canonicalString : nil
        var x = ReplayStep.Expectation()
        x.value = "0502"
        notification.expect = x
        var steps = [ReplayStep(.connect, at: 0), ReplayStep(.discover, at: 100_000), notification]
        ConnectionSteps.setTimeouts(&steps)
        let source = SessionScript.Source(capture: "hand", peer: nil, connections: [], start: 0)
        return (SessionScript(source: source, device: nil, redacted: false, steps: steps), table)
    }

    func testANotificationFromADescriptorsHandleIsWaitedForThere() async throws {
        // Recorded from the descriptor's handle (0x0012): the clone sends it there, and the
        // replay waits for it there, not on the value handle (0x0011).
        let (script, table) = Self.descriptorNotifier(descriptor: true)
        let device = RecordedDevice(script: script, table: table, protocols: GATTLabProtocols.all)
        XCTAssertEqual(device.unsolicited.events[.connection(0)]?.map(\.handle), [0x0012])
        let clone = try XCTUnwrap(device.emulated(values: [:], protocols: GATTLabProtocols.all))
        let report = try await replay(script, clone)
        XCTAssertEqual(report.verdict, .equivalent, report.text(verbose: true, color: false))
        XCTAssertEqual(report.steps.last?.observed.last, "0502")
        // A script that names the value handle waits there: the descriptor's notification is not it.
        let (onValue, _) = Self.descriptorNotifier(descriptor: false)
        let crossed = try await replay(onValue, clone)
        XCTAssertEqual(crossed.verdict, .diverged, crossed.text(verbose: true, color: false))
        // And a device that notifies from the value handle does not pass for one that used the descriptor's.
        let valueNotifier = try XCTUnwrap(RecordedDevice(script: onValue, table: table, protocols: GATTLabProtocols.all).emulated(values: [:], protocols: GATTLabProtocols.all))
        let other = try await replay(script, valueNotifier)
        XCTAssertEqual(other.verdict, .diverged, other.text(verbose: true, color: false))
    }

    func testAWaitForTheDeviceFollowsItsRecordedDelay() async throws {
        // The device ended the link 9 s after connecting, 0.5 s after the phone's last step: the
        // step's own timeout is 5 s. With the phone's delays dropped (--timing fast) the replay
        // comes to the loss at once, and waits what the device took in the recording.
        var steps = [ReplayStep(.connect, at: 0), ReplayStep(.encrypt, at: 8_500_000), ReplayStep(.linkLost, at: 9_000_000)]
        ConnectionSteps.setTimeouts(&steps)
        XCTAssertEqual(steps.last?.timeout, 5_000_000)
        let script = SessionScript(source: .init(capture: "hand", peer: nil, connections: [], start: 0), device: nil, redacted: false, steps: steps)
        var table = AttributeTable()
        table.addService(start: 1, end: 3, uuid: BluetoothUUID(uuid16: 0xFFF0), primary: true)
        table.addCharacteristic(declaration: 2, properties: 0x02, valueHandle: 3, uuid: BluetoothUUID(uuid16: 0xFFF1))
        func dropping(after delay: Int64) -> EmulatedDeviceSpec {
            var events = RecordedUnsolicited()
            events.add(RecordedEvent(handle: 0, value: [], after: delay, linkLoss: 0x13), after: .connection(0))
            return .clone(name: "recorded", recorded: RecordedTable(table: table), reactions: [], unsolicited: events)
        }
        for timing in [ReplayTiming.recorded, .fast, .scaled(4)] {
            let report = try await replay(script, dropping(after: 9_000_000), timing: timing)
            XCTAssertEqual(report.verdict, .equivalent, "\(timing):\n\(report.text(verbose: true, color: false))")
        }
        // The wait is bounded by the recorded delay and its margin: a device that keeps the link
        // a minute diverges after about 12 s of its time, not a minute.
        let late = try await replay(script, dropping(after: 60_000_000), timing: .fast)
        XCTAssertEqual(late.verdict, .diverged, late.text(verbose: true, color: false))
        XCTAssertLessThan(late.duration, 15_000_000, late.text(verbose: true, color: false))
        XCTAssertTrue(late.steps.last?.differences.joined().contains("still connected after 11 s") == true, late.text(verbose: true, color: false))
    }

    /// The other devices of real captures (`replay run CAPTURE --peer ADDR`): every one with ATT
    /// traffic and a discovery to clone (the measurement of issue 17 lists them), default and fast.
    func testTheOtherDevicesOfRealCapturesReplayAgainstTheirClones() async throws {
        _ = try RealCaptures.require()
        let devices: [(name: String, peer: String, cause: String)] = [
            ("AndroidPad__btsnoop_hci.cfa", "D0:BA:E4:BE:F4:57", "a second tablet: notifications after the subscription, two link losses"),
            ("DSD6__btsnoop_hci.log", "F9:E5:10:60:E8:60", "the capture's first link began before it (one PDU, no discovery); write commands and notifications"),
            ("fuut__hci_snoop20250125165300.cfa", "FF:B8:37:72:4F:F8", "three encrypted links; notifications no write caused, long after their subscription (fast: waited as recorded)"),
        ]
        var clones: [String: (RecordedDevice, EmulatedDeviceSpec)] = [:]
        for d in devices {
            let (device, spec, _) = try await assertClonedEquivalent(d.name, peer: d.peer, cause: d.cause, timings: [.recorded, .fast])
            clones[d.name] = (device, spec)
        }
        // Each one's session against another's clone is not equivalent.
        for a in devices {
            for b in devices where b.name != a.name {
                let (session, _) = try XCTUnwrap(clones[a.name])
                let (_, clone) = try XCTUnwrap(clones[b.name])
                let crossed = try await replay(session.script, clone)
                XCTAssertNotEqual(crossed.verdict, .equivalent, "\(a.name) \(a.peer) against the clone of \(b.name) \(b.peer)")
            }
        }
        // Nor against the clone of another device of the same capture.
        let first = try RecordedDevice.read(path: try RealCaptures.path("AndroidPad__btsnoop_hci.cfa"), options: ExtractOptions(protocols: GATTLabProtocols.all, revealSecrets: true))
        XCTAssertNotEqual(first.script.source.peer, devices[0].peer)
        let crossed = try await replay(first.script, try XCTUnwrap(clones["AndroidPad__btsnoop_hci.cfa"]).1)
        XCTAssertNotEqual(crossed.verdict, .equivalent)
    }

    func testAClonesUnsolicitedScheduleIsBounded() {
        var events = RecordedUnsolicited()
        for i in 0..<(RecordedUnsolicited.limit + 5) {
            events.add(RecordedEvent(handle: 3, value: [UInt8(i & 0xFF)], after: Int64(i)), after: .connection(0))
        }
        XCTAssertEqual(events.count, RecordedUnsolicited.limit)
        XCTAssertEqual(events.events[.connection(0)]?.count, RecordedUnsolicited.limit)
        XCTAssertFalse(events.add(RecordedEvent(handle: 3, value: [], after: 0), after: .subscription(cccd: 4, 0)))
    }
}
