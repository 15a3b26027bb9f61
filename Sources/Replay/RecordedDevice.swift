import ATT
import Emulator
import GATT
import Profiles

/// A recorded device, read from a capture: the session the phone had with it, its GATT table as
/// discovered with the values it returned to reads, its pace (progress cadence, scan timing,
/// MTU accepted) and its answers to each write. `gattlab emulate --from CAPTURE` serves it, and
/// `replay run CAPTURE --target emu:NAME` shapes the named device like it: the protocol's
/// emulated state machine bound to the recorded table, keeping the recorded cadence; where the
/// protocol is unknown, a clone that answers as recorded (`ClonedDevice`).
public struct RecordedDevice: Sendable {
    public var script: SessionScript
    /// The database, when the capture has the device's discovery.
    public var table: RecordedTable?
    public var cadence: RecordedCadence
    /// How the recorded device failed, where its model can fail so.
    public var fault: RecordedFault
    /// What the device answered to each write, and the notifications that followed.
    public var reactions: [RecordedReaction]
    /// What no write caused: notifications and link losses after a subscription or connection.
    public var unsolicited: RecordedUnsolicited
    /// Its answers to requests the script sends as recorded PDUs (request bytes to answers, in order).
    public var answers: [[UInt8]: [[UInt8]]]

    /// Reads the device of `path` (`options.peer` or `.connection` pick one; secrets revealed
    /// only with `options.revealSecrets`).
    public static func read(path: String, options: ExtractOptions) throws -> RecordedDevice {
        let (script, table) = try ScriptExtractor.extractWithTable(path: path, options: options)
        return RecordedDevice(script: script, table: table)
    }

    public init(script: SessionScript, table: AttributeTable?) {
        self.script = script
        cadence = Self.cadence(script)
        fault = Self.fault(script)
        reactions = table.map { Self.reactions(script, $0) } ?? []
        unsolicited = table.map { Self.unsolicited(script, $0) } ?? RecordedUnsolicited()
        answers = Self.answers(script, table)
        self.table = table.map { t in
            let security = Self.encryptionRequired(script, t)
            return RecordedTable(table: t, values: Self.readValues(script, t), serverMTU: Self.serverMTU(script),
                                 maxPreparedWrites: Self.prepareQueue(script), encryptedWrites: security.writes,
                                 encryptedReads: security.reads, unencryptedAccessError: security.error)
        }
    }

    /// The device protocol's model (`script.device`) when GATTLab knows it, else nil.
    public var kind: String? { script.device }

    /// `spec` shaped like the recorded device: its table, its cadence and its Wi-Fi world (`values`:
    /// what the replay will send, for the world's password when the script is redacted).
    public func shape(_ spec: EmulatedDeviceSpec, values: [Int: [UInt8]], settings: [String: String] = [:]) -> EmulatedDeviceSpec {
        var shaped = spec
        if let table, !table.table.isEmpty { shaped = shaped.withRecordedTable(table) }
        shaped = shaped.withCadence(cadence)
        if let world = RecordedWorld.from(script, values: values, settings: settings) { shaped = shaped.inEnvironment(world.environment) }
        return shaped
    }

    /// The recorded device as an emulated one: the protocol's device shaped like it, or, for a
    /// protocol none of `protocols` models, the clone. Nil when the capture has no table to clone.
    public func emulated(values: [Int: [UInt8]], settings: [String: String] = [:], protocols: ProtocolSet) -> EmulatedDeviceSpec? {
        if let kind, let base = EmulatedDeviceSpec.named(kind, protocols: protocols) {
            var spec = shape(base, values: values, settings: settings).withRecordedFault(fault)
            spec.name = "recorded"
            return spec
        }
        guard var table, !table.table.isEmpty else { return nil }
        // The clone agrees to the largest MTU the recorded device agreed to (517 on a modern
        // stack), where the recording does not show it capping one.
        if table.serverMTU == nil, let agreed = script.steps.compactMap({ $0.action == .exchangeMTU ? $0.expect?.mtu : nil }).max(), agreed > 247 {
            table.serverMTU = agreed
        }
        return .clone(name: "recorded", recorded: table, reactions: reactions, unsolicited: unsolicited, answers: answers)
    }

    // MARK: Reading the recording

    /// The handle a step names in the recorded table: a characteristic's value, or its descriptor.
    static func handle(_ step: ReplayStep, _ table: AttributeTable, descriptor: BluetoothUUID? = nil) -> UInt16? {
        if let h = step.handle { return h }
        guard let text = step.characteristic, let uuid = BluetoothUUID(string: text),
              let c = table.characteristics.values.filter({ $0.uuid == uuid }).min(by: { $0.valueHandle < $1.valueHandle })
        else { return nil }
        guard let d = descriptor ?? step.descriptor.flatMap(BluetoothUUID.init(string:)) else { return c.valueHandle }
        let next = table.characteristics.values.map(\.declarationHandle).filter { $0 > c.valueHandle }.min() ?? 0xFFFF
        return table.descriptors.filter { $0.value == d && $0.key > c.valueHandle && $0.key < next }.map(\.key).min()
    }

    /// The last value read at each handle.
    static func readValues(_ script: SessionScript, _ table: AttributeTable) -> [UInt16: [UInt8]] {
        var values: [UInt16: [UInt8]] = [:]
        for step in script.steps where step.action == .read {
            guard step.expect?.result != "error", let hex = step.expect?.value, let v = Hex.bytes(hex),
                  let h = handle(step, table) else { continue }
            if let offset = step.offset.map(Int.init) {
                // A Read Blob at an offset of its own read a part (a phone that reads a Report
                // Map part by part): it continues the value where it reaches it, up to 512 bytes.
                let known = values[h] ?? []
                guard offset <= known.count else { continue }
                values[h] = Array((Array(known.prefix(offset)) + v).prefix(GATTServer.maxValueLength))
            } else {
                values[h] = v
            }
        }
        return values
    }

    /// The MTU the recorded stack capped the exchange at, when it answered less than was asked.
    static func serverMTU(_ script: SessionScript) -> UInt16? {
        let capped = script.steps.compactMap { s -> UInt16? in
            guard s.action == .exchangeMTU, let asked = s.mtu, let agreed = s.expect?.mtu, agreed < asked else { return nil }
            return agreed
        }
        return capped.min()
    }

    /// Handles the recorded device refused with Insufficient Encryption or Authentication while
    /// the link was not encrypted, and never served on a plain link: a device shaped like it asks
    /// for encryption there too (a modelled protocol's characteristic would otherwise take the
    /// write, as its default does). A handle also served on a plain link is left to the recorded
    /// answers (a stack that refused once, or encrypted without the script seeing it).
    static func encryptionRequired(_ script: SessionScript, _ table: AttributeTable) -> (writes: Set<UInt16>, reads: Set<UInt16>, error: ATTErrorCode?) {
        var refused: [ReplayStep.Action: Set<UInt16>] = [:], served: [ReplayStep.Action: Set<UInt16>] = [:]
        var error: ATTErrorCode?
        var encrypted = false
        for step in script.steps {
            switch step.action {
            case .encrypt: encrypted = true
            case .connect, .disconnect, .linkLost: encrypted = false
            case .read, .write:
                guard !encrypted, let h = handle(step, table) else { continue }
                guard step.expect?.result == "error" else {
                    served[step.action, default: []].insert(h)
                    continue
                }
                guard let code = step.expect?.errorCode, code == .insufficientEncryption || code == .insufficientAuthentication else { continue }
                refused[step.action, default: []].insert(h)
                error = error ?? code
            default: continue
            }
        }
        let writes = refused[.write, default: []].subtracting(served[.write, default: []])
        let reads = refused[.read, default: []].subtracting(served[.read, default: []])
        return (writes, reads, writes.isEmpty && reads.isEmpty ? nil : error)
    }

    /// The Prepare Writes the recorded device queued before it answered Prepare Queue Full (the
    /// least, if it did so more than once).
    static func prepareQueue(_ script: SessionScript) -> Int? {
        script.steps.compactMap { $0.action == .write && $0.method == .long ? $0.expect?.queued : nil }.min()
    }

    /// Each write and CCCD write with its answer and the notifications until the phone's next request.
    static func reactions(_ script: SessionScript, _ table: AttributeTable) -> [RecordedReaction] {
        var out: [RecordedReaction] = []
        let steps = script.steps
        for (i, step) in steps.enumerated() where step.action == .write || step.action == .subscribe {
            let descriptor = step.action == .subscribe ? BluetoothUUID(uuid16: 0x2902) : nil
            guard let handle = handle(step, table, descriptor: descriptor) else { continue }
            // CCCD writes are the server's own business: only their error, if any, is recorded.
            let error = step.expect?.errorCode
            var notifications: [(handle: UInt16, value: [UInt8], after: Int64)] = []
            var indications = Set<Int>()
            var linkLoss: (reason: UInt8, after: Int64)?
            for next in steps[(i + 1)...] {
                guard next.action == .notification else {
                    if next.action == .linkLost { linkLoss = (Self.reason(next), max(0, next.at - step.at)) }
                    if [.write, .read, .subscribe, .connect, .disconnect, .linkLost].contains(next.action) { break }
                    continue
                }
                guard let h = Self.handle(next, table), let v = next.expect?.value.flatMap(Hex.bytes) else { continue }
                if next.indication == true { indications.insert(notifications.count) }
                notifications.append((h, v, max(0, next.at - step.at)))
            }
            // A subscription that caused nothing is kept too: the clone answers the n-th
            // subscription as the n-th recorded one.
            out.append(RecordedReaction(handle: handle, value: step.value.flatMap(Hex.bytes), error: error, notifications: notifications,
                                        linkLoss: linkLoss, indications: indications))
        }
        return out
    }

    /// The HCI reason of a `link-lost` step ("0x08 Connection Timeout": the device's side of the loss).
    static func reason(_ step: ReplayStep) -> UInt8 {
        step.expect?.reason?.split(separator: " ").first.flatMap { UInt8($0.dropFirst(2), radix: 16) } ?? 0x13
    }

    /// The notifications and link losses no write's reaction holds (`reactions` takes those
    /// between a write or subscription and the phone's next request): each after the latest
    /// subscription of its connection, else after the connection, with the recorded spacing.
    /// At most `RecordedUnsolicited.limit` of them.
    static func unsolicited(_ script: SessionScript, _ table: AttributeTable) -> RecordedUnsolicited {
        var out = RecordedUnsolicited()
        var connection = -1
        var anchor: (RecordedUnsolicited.Anchor, at: Int64)?
        var subscriptions: [UInt16: Int] = [:]
        // Whether the last step that ends a reaction's window was a write or subscription whose
        // reaction holds what follows.
        var held = false
        for step in script.steps {
            if step.action == .connect || connection < 0 {
                // A recording that began mid-connection: the replay connects first.
                connection += 1
                anchor = (.connection(connection), step.at)
            }
            switch step.action {
            case .connect, .disconnect, .read:
                held = false
            case .write:
                held = handle(step, table) != nil
            case .subscribe:
                let cccd = handle(step, table, descriptor: BluetoothUUID(uuid16: 0x2902))
                held = cccd != nil
                if let cccd {
                    let n = subscriptions[cccd, default: 0]
                    subscriptions[cccd] = n + 1
                    anchor = (.subscription(cccd: cccd, n), step.at)
                }
            case .linkLost:
                if !held, let (a, at) = anchor, !out.add(RecordedEvent(handle: 0, value: [], after: max(0, step.at - at), linkLoss: reason(step)), after: a) {
                    return out
                }
                held = false
                anchor = nil
            case .notification:
                guard !held, let (a, at) = anchor, let h = handle(step, table), let v = step.expect?.value.flatMap(Hex.bytes) else { continue }
                if !out.add(RecordedEvent(handle: h, value: v, indication: step.indication == true, after: max(0, step.at - at)), after: a) {
                    return out
                }
            case .exchangeMTU, .discover, .encrypt, .pdu:
                break
            }
        }
        return out
    }

    /// The recorded answers to the PDUs the script sends as recorded (extracted with secrets
    /// revealed, which keeps them in `expect.value`), by the request's bytes, in order.
    /// Reads too: the n-th read of a handle answered as the n-th recorded one was (a value that
    /// changed over the session, an error before the link was encrypted).
    static func answers(_ script: SessionScript, _ table: AttributeTable?) -> [[UInt8]: [[UInt8]]] {
        var out: [[UInt8]: [[UInt8]]] = [:]
        if let table {
            for step in script.steps where step.action == .read && step.offset == nil {
                guard let h = handle(step, table), let expect = step.expect else { continue }
                let request = ATTPDU.readRequest(handle: h).encode()
                if expect.result == "error" {
                    guard let code = expect.errorCode else { continue }
                    out[request, default: []].append(ATTPDU.errorResponse(requestOpcode: request[0], handle: h, error: code).encode())
                } else if let v = expect.value.flatMap(Hex.bytes) {
                    out[request, default: []].append(ATTPDU.readResponse(value: v).encode())
                }
            }
        }
        // Writes to a handle the recorded discovery never found (the script names it by handle):
        // answered as the device answered them, where the server would not know the handle.
        for step in script.steps where step.action == .write && step.method == .request {
            guard let h = step.handle, table?.info(for: h) == nil, let v = step.value.flatMap(Hex.bytes), let expect = step.expect else { continue }
            let request = ATTPDU.writeRequest(handle: h, value: v).encode()
            if expect.result == "error" {
                guard let code = expect.errorCode else { continue }
                out[request, default: []].append(ATTPDU.errorResponse(requestOpcode: request[0], handle: h, error: code).encode())
            } else {
                out[request, default: []].append(ATTPDU.writeResponse.encode())
            }
        }
        for step in script.steps where step.action == .pdu {
            guard let request = step.value.flatMap(Hex.bytes), let answer = step.expect?.value.flatMap(Hex.bytes), !answer.isEmpty else { continue }
            out[request, default: []].append(answer)
        }
        return out
    }

    /// The recorded pace, from the notifications' times.
    static func cadence(_ script: SessionScript) -> RecordedCadence {
        var c = RecordedCadence()
        let steps = script.steps
        // Speaker: DOWNLOADING statuses say how big the image was and how often progress came.
        let downloading = steps.compactMap { s -> (at: Int64, status: SpeakerOTA.Status)? in
            guard s.action == .notification, s.characteristic == SpeakerOTA.status.canonicalString,
                  let v = s.expect?.value.flatMap(Hex.bytes), let st = SpeakerOTA.Status.decode(v).0, st.state == .downloading
            else { return nil }
            return (s.at, st)
        }
        if let last = downloading.last, last.status.totalKB > 0 {
            c.firmwareKB = last.status.totalKB
            // What the statuses between START and the download said of the image size.
            let before = steps.compactMap { s -> UInt16? in
                guard s.action == .notification, s.characteristic == SpeakerOTA.status.canonicalString,
                      let v = s.expect?.value.flatMap(Hex.bytes), let st = SpeakerOTA.Status.decode(v).0,
                      st.state == .wifiConnecting || st.state == .wifiConnected else { return nil }
                return st.totalKB
            }
            if !before.isEmpty { c.totalKBFromDownload = before.allSatisfy { $0 == 0 } }
            let steps = zip(downloading, downloading.dropFirst()).map { Int($1.status.downloadedKB) - Int($0.status.downloadedKB) }.filter { $0 > 0 }
            if let step = Self.median(steps.map(Int64.init)) { c.progressEveryKB = Int(step) }
            if let first = downloading.first, last.at > first.at, last.status.downloadedKB > first.status.downloadedKB {
                let kb = Int64(last.status.downloadedKB - first.status.downloadedKB)
                c.downloadKBPerSecond = Int(max(1, kb * 1_000_000 / (last.at - first.at)))
            }
        }
        // Sensor: the time from SCAN to the first chunk, the gap between chunks, the markers.
        if let scan = steps.firstIndex(where: { $0.action == .write && $0.characteristic == SensorScan.characteristic.canonicalString }) {
            let chunks = steps[(scan + 1)...].prefix { $0.action == .notification && $0.characteristic == SensorScan.characteristic.canonicalString }
            if let first = chunks.first {
                let gaps = zip(chunks, chunks.dropFirst()).map { $1.at - $0.at }
                c.notificationGap = Self.median(gaps) ?? c.notificationGap
                c.scanDuration = max(0, first.at - steps[scan].at - (c.notificationGap ?? 0))
                var joiner = SensorScan.Joiner()
                for chunk in chunks { if let v = chunk.expect?.value.flatMap(Hex.bytes) { joiner.add(v) } }
                c.separateMarkers = joiner.markerStyle == SensorScan.MarkerStyle.separateNotification.rawValue
            }
        }
        // nRF7: the time from START_SCAN to the first scan record.
        if let start = steps.firstIndex(where: { s in
            s.action == .write && s.characteristic == NRF7.controlPoint.canonicalString
                && s.value.flatMap(Hex.bytes).flatMap { NRF7.Request.decode($0).0?.opCode?.raw } == 2
        }), let record = steps[(start + 1)...].first(where: { s in
            s.action == .notification && s.characteristic == NRF7.dataOut.canonicalString
                && s.expect?.value.flatMap(Hex.bytes).flatMap { NRF7.Result.decode($0).0?.scanRecord } != nil
        }) {
            c.scanDuration = max(0, record.at - steps[start].at)
        }
        return c
    }

    /// The link the device lost (a `link-lost` step, the device's side), with the notifications
    /// before it, from which the protocol's model reads the state it failed in. A phone that hung
    /// up is no device fault.
    static func fault(_ script: SessionScript) -> RecordedFault {
        guard let loss = script.steps.lastIndex(where: { $0.action == .linkLost }) else { return RecordedFault() }
        return RecordedFault(notifiedBeforeLinkLoss: script.steps[..<loss].compactMap { s in
            guard s.action == .notification, let characteristic = s.characteristic, let value = s.expect?.value.flatMap(Hex.bytes) else { return nil }
            return RecordedFault.Notification(characteristic: characteristic, value: value)
        })
    }

    static func median(_ values: [Int64]) -> Int64? {
        guard !values.isEmpty else { return nil }
        return values.sorted()[values.count / 2]
    }
}

extension ReplayStep.Expectation {
    /// The recorded ATT error ("0x0F" in the script), when the answer was one.
    var errorCode: ATTErrorCode? {
        guard result == "error", let text = error, let byte = Hex.bytes(text.replacingOccurrences(of: "0x", with: ""))?.first else { return nil }
        return ATTErrorCode(rawValue: byte)
    }
}
