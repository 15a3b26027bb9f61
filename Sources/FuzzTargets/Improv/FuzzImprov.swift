import Fuzz
import Protocols

// libFuzzer target `improv` (make fuzz TARGET=improv); without the fuzzer build, a standalone driver.
let target = LibFuzzerHarness.target("improv", protocols: GATTLabProtocols.all)

#if GATTLAB_LIBFUZZER
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    LibFuzzerHarness.runOne(target, start, count)
    return 0
}
#else
@main
enum Driver {
    static func main() { LibFuzzerHarness.standalone(target, arguments: Array(CommandLine.arguments.dropFirst())) }
}
#endif
