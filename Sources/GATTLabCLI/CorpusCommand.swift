import ArgumentParser
import ATT
import Capture
import Foundation
import Fuzz
import GATT
import HCI
import Profiles
import Protocols
import Redact

/// `gattlab corpus`: seeds the fuzz corpora (Corpus/<target>/) from captures and keeps them small.
struct CorpusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "corpus",
        abstract: "Seed the fuzz corpora from captures; minimize them.",
        discussion: """
            Corpus/<target>/ holds one file per input, named by a hash of its content (the layout \
            of libFuzzer and of gattlab fuzz --corpus).

            import decodes each capture and writes every distinct value of the speaker's status, \
            credentials, URL and control characteristics, the sensor's scan responses (a chunk \
            size byte, then the joined notifications), nRF7 and ESP-IDF provisioning values, the \
            capture's ATT PDUs and the capture itself (64 KiB at most, for capture and timeline). \
            Secrets never reach the corpus: the capture is first redacted as gattlab redact does \
            (checked), and Wi-Fi passwords and URL credentials in values are overwritten with '*'.

            minimize keeps the smallest inputs that together show every feature the target \
            reports and removes the rest.

            Examples:
              gattlab corpus import Captures/emulated/*.btsnoop
              gattlab corpus minimize scan
            """,
        subcommands: [Import.self, Minimize.self])

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "import", abstract: "Add the values of captures to the corpora.", discussion: ExitStatus.help([.success, .usage, .badInput, .cannotCreate]))

        @Argument(help: ArgumentHelp("Captures to import.", valueName: "capture"))
        var captures: [String]

        @Option(name: .long, help: ArgumentHelp("The corpora's root folder (one subfolder per target).", valueName: "dir"))
        var corpus: String = "Corpus"

        @Option(name: .customLong("max-att"), help: ArgumentHelp("At most this many distinct ATT PDUs per capture.", valueName: "n"))
        var maxATT: Int = 48

        func run() throws {
            var added: [String: Int] = [:]
            var skipped = 0
            for path in captures {
                let inputs: [String: [[UInt8]]]
                do { inputs = try CorpusImporter.extract(path, maxATT: maxATT) } catch {
                    Diagnostics.warning("\(error); skipped", file: path)
                    skipped += 1
                    continue
                }
                var line: [String] = []
                for folder in inputs.keys.sorted() {
                    let dir = (corpus as NSString).appendingPathComponent(folder)
                    do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
                        throw Failure(.cannotCreate, "cannot create the corpus folder", file: dir,
                                      hint: "give a folder you can write to with --corpus")
                    }
                    var new = 0
                    for input in inputs[folder] ?? [] {
                        let exists = FileManager.default.fileExists(atPath: (dir as NSString).appendingPathComponent(Storage.name(input)))
                        do { try Storage.writeInput(input, to: dir) } catch {
                            throw Failure(.cannotCreate, error.description, file: dir, hint: "check that the corpus folder is writable (--corpus)")
                        }
                        if !exists { new += 1 }
                    }
                    added[folder, default: 0] += new
                    line.append("\(folder) +\(new)")
                }
                print("\(path): \(line.isEmpty ? "nothing to import" : line.joined(separator: ", "))")
            }
            let total = added.values.reduce(0, +)
            print("\(corpus): \(total) new input\(total == 1 ? "" : "s") from \(captures.count - skipped) capture\(captures.count - skipped == 1 ? "" : "s")")
            if skipped > 0 && skipped == captures.count {
                throw Failure(.badInput, "no capture could be imported", hint: "the warnings above say why for each")
            }
        }
    }

    struct Minimize: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "minimize", abstract: "Keep the smallest inputs that show every feature of a target.", discussion: ExitStatus.help([.success, .usage, .noInput, .cannotCreate]))

        @Argument(help: ArgumentHelp("The target (gattlab fuzz list).", valueName: "target"))
        var target: String

        @Option(name: .long, help: ArgumentHelp("The corpora's root folder: TARGET's inputs are in DIR/TARGET.", valueName: "dir"))
        var corpus: String = "Corpus"

        @Option(name: .long, help: ArgumentHelp("Quirks of the emulated device (device targets).", valueName: "name"))
        var quirk: [String] = []

        func run() throws {
            let fuzzTarget: FuzzTarget
            do { fuzzTarget = try FuzzTargets.named(target, quirks: quirk, protocols: GATTLabProtocols.all) } catch {
                throw Failure(.usage, error.description, hint: "`gattlab fuzz list` names the targets and their quirks")
            }
            let dir = (corpus as NSString).appendingPathComponent(target)
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
                throw Failure(.noInput, "no corpus folder for \(target)", file: dir,
                              hint: "give the corpora's root with --corpus (TARGET's inputs are in DIR/TARGET)")
            }
            let before: Int, after: Int
            do { (before, after) = try CorpusImporter.minimize(fuzzTarget, dir: dir) } catch {
                throw Failure(.cannotCreate, "\(error)", file: dir, hint: "check that the corpus folder is writable")
            }
            print("\(dir): \(before) -> \(after) input\(after == 1 ? "" : "s")")
        }
    }
}

/// The work of `gattlab corpus`, apart from the command line.
enum CorpusImporter {
    struct ImportError: Error, CustomStringConvertible {
        var description: String
    }

    /// The inputs a capture gives each target folder, distinct, secrets overwritten.
    static func extract(_ path: String, maxATT: Int) throws -> [String: [[UInt8]]] {
        // Redact a copy first, as `gattlab redact` does (its own checks included): ATT PDUs and
        // the capture file then carry no secret, whatever fragments they were split into.
        let temp = NSTemporaryDirectory() + "gattlab-corpus-\(getpid())-\(UUID().uuidString).redacted"
        defer { unlink(temp) }
        let outcome: RedactionOutcome
        do {
            outcome = try Redactor.redact(input: path, output: temp, options: RedactionOptions(protocols: GATTLabProtocols.all)) { GATTDecoder() }
        } catch {
            throw ImportError(description: "cannot redact it (\(error.description)), so it is not imported")
        }
        let secrets = outcome.secrets.map(\.secret.unsafeBytes).filter { $0.count >= 4 && !$0.allSatisfy { $0 == CredentialLayout.filler } }
        let redacted = try Array(Data(contentsOf: URL(fileURLWithPath: temp)))

        var out = Collector(secrets: secrets)
        let reader = try openCapture(bytes: redacted)
        let gatt = GATTDecoder()
        // Each protocol's router says which of its targets a value goes to (keeping what it
        // needs across values, such as a scan response's chunks); the first to claim it wins.
        var routers = GATTLabProtocols.all.conforming(to: (any FuzzableProtocol.Type).self).map { $0.corpusRouter() }
        var attCount = 0
        func value(_ info: HandleInfo?, handle: UInt16, bytes: [UInt8], table: AttributeTable?, connection: ConnectionKey, notified: Bool) {
            guard let info, info.role == .value else { return }
            let uuid = info.uuid
            let endpoint = table?.userDescriptions[handle]
            let clean = GATTLabProtocols.all.redactingCredentials(bytes, characteristic: uuid, endpoint: endpoint)
            for i in routers.indices {
                guard let inputs = routers[i].route(clean, characteristic: uuid, endpoint: endpoint, connection: connection, notified: notified) else { continue }
                for (target, input) in inputs { out.add(target, input) }
                break
            }
        }
        while let record = try reader.next() {
            gatt.consume(record)
            for event in gatt.events {
                switch event {
                case .att(let e):
                    guard let pdu = e.pdu else { continue }
                    if attCount < maxATT, out.add("att", pdu.encode()) { attCount += 1 }
                    guard let handle = e.handle else { continue }
                    let table = gatt.table(for: e.connection)?.0
                    switch pdu {
                    case .writeRequest(_, let v), .writeCommand(_, let v):
                        value(e.info, handle: handle, bytes: v, table: table, connection: e.connection, notified: false)
                    case .handleValueNotification(_, let v), .handleValueIndication(_, let v):
                        value(e.info, handle: handle, bytes: v, table: table, connection: e.connection, notified: true)
                    case .readResponse(let v) where v.count < e.mtu - 1:
                        value(e.info, handle: handle, bytes: v, table: table, connection: e.connection, notified: false)
                    default:
                        break
                    }
                case .operation(.longWrite(let key, let handle, let info, let v, _, _, _)),
                     .operation(.longRead(let key, let handle, let info, let v, _, _, _)):
                    value(info, handle: handle, bytes: v, table: gatt.table(for: key)?.0, connection: key, notified: false)
                default:
                    break
                }
            }
        }
        // The file itself for the whole-pipeline targets, within their input size.
        if redacted.count <= 1 << 16 {
            out.add("capture", redacted)
            out.add("timeline", redacted)
        }
        return out.inputs
    }

    /// Distinct inputs per folder; anything still holding a secret's bytes is dropped.
    struct Collector {
        let secrets: [[UInt8]]
        var inputs: [String: [[UInt8]]] = [:]
        var seen: Set<[UInt8]> = []

        @discardableResult
        mutating func add(_ folder: String, _ bytes: [UInt8]) -> Bool {
            guard !bytes.isEmpty, !secrets.contains(where: { CorpusSecrets.contains(bytes, $0) }),
                  seen.insert(Array(folder.utf8) + [0] + bytes).inserted else { return false }
            inputs[folder, default: []].append(bytes)
            return true
        }
    }

    /// Greedy by size: an input is kept when it shows a feature no smaller input showed, so the
    /// kept set covers every feature of the whole folder. Returns the counts before and after.
    static func minimize(_ target: FuzzTarget, dir: String) throws -> (Int, Int) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }
        var files: [(name: String, bytes: [UInt8])] = names.compactMap { name in
            let path = (dir as NSString).appendingPathComponent(name)
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue,
                  let data = FileManager.default.contents(atPath: path) else { return nil }
            return (name, Array(data))
        }
        files.sort { ($0.bytes.count, $0.name) < ($1.bytes.count, $1.name) }
        let features = Features()
        var kept: [[UInt8]] = []
        for f in files {
            features.reset()
            let outcome = target.execute(Array(f.bytes.prefix(target.maxLength)), features)
            if case .finding(let kind, _) = outcome {
                Diagnostics.warning("this input gives a finding (\(kind)); kept so it is not lost", file: f.name,
                                    hint: "gattlab fuzz reproduce FILE --target \(target.name) shows it")
                kept.append(f.bytes)
            } else if features.novel > 0 {
                kept.append(f.bytes)
            }
        }
        // Kept inputs first (under their content names), then the rest removed: a minimization
        // stopped half-way leaves a superset, never a loss.
        var keep: Set<String> = []
        for bytes in kept {
            do { try Storage.writeInput(bytes, to: dir) } catch { throw ImportError(description: error.description) }
            keep.insert(Storage.name(bytes))
        }
        for f in files where !keep.contains(f.name) {
            try FileManager.default.removeItem(atPath: (dir as NSString).appendingPathComponent(f.name))
        }
        return (files.count, keep.count)
    }
}

/// What the corpus import keeps out of the corpus: values that still hold a secret the redaction found.
enum CorpusSecrets {
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { i in haystack[i..<(i + needle.count)].elementsEqual(needle) }
    }
}
