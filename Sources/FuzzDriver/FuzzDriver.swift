import Foundation
import Fuzz
import Protocols

// The one libFuzzer driver (product gattlab-fuzz) for every in-process target of
// `gattlab fuzz list`, chosen at start: a copy or link named fuzz-<target> (what OSS-Fuzz and
// ClusterFuzzLite run), GATTLAB_FUZZ_TARGET, or --target=NAME. A protocol registered in
// Sources/Protocols/Registry.swift brings its targets here with no file and no Package.swift line.
// Without the fuzzer build (GATTLAB_LIBFUZZER) it is a standalone driver that runs files once.

#if GATTLAB_LIBFUZZER
/// The target libFuzzer runs, chosen once in LLVMFuzzerInitialize (before any input; libFuzzer
/// calls both from one thread).
nonisolated(unsafe) var chosen: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    var args: [String] = []
    if let v = argv.pointee {
        for i in 0..<Int(argc.pointee) { if let a = v[i] { args.append(String(cString: a)) } }
    }
    chosen = LibFuzzerHarness.start(executable: args.first ?? LibFuzzerHarness.driverName,
                                    arguments: Array(args.dropFirst()), protocols: GATTLabProtocols.all)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    if let chosen { LibFuzzerHarness.runOne(chosen, start, count) }
    return 0
}

#if GATTLAB_FUZZ_MAIN
// The build that instruments only the fuzzed modules (GATTLAB_FUZZ_INSTRUMENT, Package.swift)
// passes no --sanitize fuzzer to SwiftPM, which then makes this module's main the program's
// instead of libFuzzer's: it hands over to libFuzzer's driver, which calls
// LLVMFuzzerInitialize and then LLVMFuzzerTestOneInput per input, as libFuzzer's main does.
@_silgen_name("LLVMFuzzerRunDriver")
func runLibFuzzer(_ argc: UnsafeMutablePointer<CInt>,
                  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                  _ testOneInput: @convention(c) (UnsafeRawPointer, Int) -> CInt) -> CInt

@main
enum Driver {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runLibFuzzer(&argc, &argv) { fuzz($0, $1) })
    }
}
#endif
#else
@main
enum Driver {
    static func main() {
        let args = CommandLine.arguments
        let target = LibFuzzerHarness.start(executable: args.first ?? LibFuzzerHarness.driverName,
                                            arguments: Array(args.dropFirst()), protocols: GATTLabProtocols.all)
        LibFuzzerHarness.standalone(target, arguments: Array(args.dropFirst()))
    }
}
#endif
