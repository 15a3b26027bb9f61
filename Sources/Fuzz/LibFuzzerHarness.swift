import Foundation
import Profiles

/// What the one libFuzzer driver (Sources/FuzzDriver/, product `gattlab-fuzz`) runs: every
/// in-process target of `gattlab fuzz list`, chosen when the process starts (`choose`). In the
/// fuzz build (`make fuzz`, compiled with GATTLAB_LIBFUZZER) libFuzzer calls `runOne` per input
/// and a finding must crash the process so libFuzzer writes the input as `crash-<sha1>`. In the
/// normal build the same executable is a libFuzzer-style standalone driver: every file (or
/// folder of files) on the command line once, exit 1 on a finding, to reproduce without clang's
/// runtime.
public enum LibFuzzerHarness {
    /// The environment variable with the device targets' quirks (comma-separated), read once.
    public static let quirksVariable = "GATTLAB_FUZZ_QUIRKS"
    /// The environment variable naming the target, when the executable's name does not.
    public static let targetVariable = "GATTLAB_FUZZ_TARGET"
    /// The driver's own name; a copy or link named `fuzz-<target>` runs that target.
    public static let driverName = "gattlab-fuzz"
    /// Exit status when no target is chosen or the name is unknown (EX_USAGE): distinct from a
    /// finding (1) and an unreadable input or quirk (2).
    public static let noTargetStatus: Int32 = 64

    /// What the driver was asked for at start.
    public enum Request: Equatable, Sendable {
        /// Run this target (a name `gattlab fuzz list` shows).
        case run(String)
        /// `--list`: the targets, their -max_len and dictionary sizes, then exit.
        case list
        /// No target, or one that does not exist: the one-line message to print.
        case refused(String)
    }

    /// The names the driver serves: every in-process target (not the black-box `device`, which
    /// needs a device to talk to), in `gattlab fuzz list` order.
    public static func targetNames(protocols: ProtocolSet) -> [String] { FuzzTargets.names(protocols: protocols) }

    /// Picks the target, first match wins: `--target NAME` or `--target=NAME` in the arguments
    /// (libFuzzer ignores flags that start with `--`), then `GATTLAB_FUZZ_TARGET`, then the
    /// executable's name `fuzz-<target>` (one copy per target in $OUT, as OSS-Fuzz and
    /// ClusterFuzzLite want). `executable` is argv[0]; `arguments` the rest.
    public static func choose(executable: String, arguments: [String], environment: [String: String],
                              protocols: ProtocolSet) -> Request {
        if arguments.contains("--list") { return .list }
        let names = targetNames(protocols: protocols)
        var asked: String?
        for (i, arg) in arguments.enumerated() {
            if arg.hasPrefix("--target=") { asked = String(arg.dropFirst("--target=".count)); break }
            if arg == "--target" { asked = i + 1 < arguments.count ? arguments[i + 1] : ""; break }
        }
        if asked == nil, let env = environment[targetVariable], !env.isEmpty { asked = env }
        let me = (executable as NSString).lastPathComponent
        if asked == nil, me.hasPrefix("fuzz-") { asked = String(me.dropFirst("fuzz-".count)) }
        let known = "targets: \(names.joined(separator: ", "))"
        guard let asked else {
            return .refused("\(me): no fuzz target chosen: run it as fuzz-<target> (a copy or link), set \(targetVariable), or give --target=NAME; \(known)")
        }
        guard names.contains(asked) else {
            return .refused("\(me): no fuzz target '\(asked)'; \(known)")
        }
        return .run(asked)
    }

    /// The arguments that are inputs: not flags, and not the value of a `--target NAME`.
    public static func inputs(_ arguments: [String]) -> [String] {
        withoutTarget(arguments).filter { !$0.hasPrefix("-") }
    }

    /// The arguments without the target's (`--target NAME`, `--target=NAME`).
    static func withoutTarget(_ arguments: [String]) -> [String] {
        var out: [String] = [], skip = false
        for arg in arguments {
            if skip { skip = false; continue }
            if arg == "--target" { skip = true; continue }
            if !arg.hasPrefix("--target=") { out.append(arg) }
        }
        return out
    }

    /// What `--list` prints: `name<TAB>maxLength<TAB>dictionary tokens<TAB>instrumented
    /// modules`, one target a line; the modules comma-separated, or `*` for every module the
    /// targets exercise (.clusterfuzzlite/build.sh reads it and builds the driver once per set of
    /// modules; the driver needs no gattlab beside it).
    public static func listing(protocols: ProtocolSet) -> String {
        (FuzzTargets.decoders(protocols) + FuzzTargets.devices(protocols).compactMap { try? $0.make([], protocols) })
            .map { "\($0.name)\t\($0.maxLength)\t\($0.dictionary.count)\t\($0.instrumentedModules?.joined(separator: ",") ?? "*")" }
            .joined(separator: "\n")
    }

    /// A dictionary in libFuzzer's format (`-dict=FILE`): one quoted token a line, bytes outside
    /// printable ASCII, quotes and backslashes as \xNN. Empty for a target without tokens.
    public static func dictionaryFile(_ target: FuzzTarget) -> String {
        var out = target.dictionary.isEmpty ? "" : "# \(target.name): tokens of its format (gattlab-fuzz --dictionary)\n"
        for token in target.dictionary {
            out += "\""
            for b in token {
                if b >= 0x20, b < 0x7F, b != 0x22, b != 0x5C { out.unicodeScalars.append(Unicode.Scalar(b)) } else {
                    out += "\\x" + (b < 16 ? "0" : "") + String(b, radix: 16)
                }
            }
            out += "\"\n"
        }
        return out
    }

    /// `--seeds=DIR`: the target's codec-made seeds as files `seed-N` (a seed corpus for targets
    /// with no Corpus/ folder, the device targets). 0 when written, 2 when DIR cannot be.
    static func writeSeeds(_ target: FuzzTarget, to dir: String) -> Int32 {
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for (i, seed) in target.seeds().enumerated() {
                try Data(seed.prefix(target.maxLength)).write(to: URL(fileURLWithPath: dir).appendingPathComponent("seed-\(i)"))
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("fuzz-\(target.name): cannot write seeds to \(dir): \(error.localizedDescription)\n".utf8))
            return 2
        }
    }

    /// The target named `name`, quirks from the environment. A bad name or quirk is a harness
    /// set-up error: it stops at once, before libFuzzer's loop could count it as a crash input.
    public static func target(_ name: String, protocols: ProtocolSet) -> FuzzTarget {
        let quirks = (ProcessInfo.processInfo.environment[quirksVariable] ?? "")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        do { return try FuzzTargets.named(name, quirks: quirks, protocols: protocols) } catch {
            FileHandle.standardError.write(Data("fuzz-\(name): \(error.description)\n".utf8))
            exit(2)
        }
    }

    /// The driver's start, in both builds: `--list` prints the targets and exits 0; without a
    /// known target it prints one line naming the targets and exits 64; `--dictionary` prints
    /// the target's dictionary and `--seeds=DIR` writes its seeds, then exit. Otherwise the
    /// target, quirks from the environment.
    public static func start(executable: String, arguments: [String], protocols: ProtocolSet) -> FuzzTarget {
        switch choose(executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment, protocols: protocols) {
        case .list:
            print(listing(protocols: protocols))
            exit(0)
        case .refused(let why):
            FileHandle.standardError.write(Data((why + "\n").utf8))
            exit(noTargetStatus)
        case .run(let name):
            let t = target(name, protocols: protocols)
            if arguments.contains("--dictionary") {
                print(dictionaryFile(t), terminator: "")
                exit(0)
            }
            if let dir = arguments.first(where: { $0.hasPrefix("--seeds=") }).map({ String($0.dropFirst("--seeds=".count)) }) {
                exit(writeSeeds(t, to: dir))
            }
            return t
        }
    }

    /// One feature map for the process: the libFuzzer builds are guided by compiler coverage, so
    /// the target's own features are computed and ignored; a fresh 32 KiB map per input would
    /// cost more than most targets. libFuzzer calls the target from one thread only.
    static let features = Features()

    /// One libFuzzer input. A finding becomes a trap, which libFuzzer records as a crash.
    public static func runOne(_ target: FuzzTarget, _ start: UnsafeRawPointer, _ count: Int) {
        let input = [UInt8](UnsafeRawBufferPointer(start: start, count: min(count, target.maxLength)))
        if case .finding(let kind, let detail) = target.execute(input, features) {
            fatalError("finding \(kind): \(detail)")
        }
    }

    /// The standalone driver: arguments are files or folders (their files, dot files skipped);
    /// libFuzzer-style flags (-runs=0, -max_len=...) are ignored so one command line serves both
    /// builds. Exit 0 when nothing was found, 1 on a finding, 2 when an argument cannot be read.
    public static func standalone(_ target: FuzzTarget, arguments: [String]) -> Never {
        let me = "fuzz-\(target.name)"
        var files: [String] = []
        for arg in inputs(arguments) {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: arg, isDirectory: &isDir) else {
                FileHandle.standardError.write(Data("\(me): \(arg): no such file or folder\n".utf8))
                exit(2)
            }
            if isDir.boolValue {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: arg)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
                files += names.map { (arg as NSString).appendingPathComponent($0) }
            } else {
                files.append(arg)
            }
        }
        if files.isEmpty {
            print("\(me): a libFuzzer target built without the fuzzer runtime; give inputs to run once each:")
            print("  \(me) FILE|DIR...        (make fuzz TARGET=\(target.name) runs it under libFuzzer)")
            exit(withoutTarget(arguments).isEmpty ? 0 : 2)
        }
        var findings = 0, ran = 0
        for path in files {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else { continue }
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("\(me): \(path): cannot read\n".utf8))
                exit(2)
            }
            ran += 1
            if case .finding(let kind, let detail) = target.run(Array(data)) {
                findings += 1
                print("\(path): finding \(kind): \(detail)")
                print("  reproduce: gattlab fuzz reproduce \(path) --target \(target.name)")
            }
        }
        print("\(me): \(ran) input\(ran == 1 ? "" : "s"), \(findings) finding\(findings == 1 ? "" : "s")")
        exit(findings > 0 ? 1 : 0)
    }
}
