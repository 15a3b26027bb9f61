import Foundation
import Profiles

/// What the libFuzzer executables (Sources/FuzzTargets/, products fuzz-<target>) share. In the
/// fuzz build (`make fuzz`, compiled with GATTLAB_LIBFUZZER) libFuzzer calls `runOne` per input
/// and a finding must crash the process so libFuzzer writes the input as `crash-<sha1>`. In the
/// normal build the same executables are libFuzzer-style standalone drivers: every file (or
/// folder of files) on the command line once, exit 1 on a finding, to reproduce without clang's
/// runtime.
public enum LibFuzzerHarness {
    /// The environment variable with the device targets' quirks (comma-separated), read once.
    public static let quirksVariable = "GATTLAB_FUZZ_QUIRKS"

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
        for arg in arguments where !arg.hasPrefix("-") {
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
            exit(arguments.isEmpty ? 0 : 2)
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
