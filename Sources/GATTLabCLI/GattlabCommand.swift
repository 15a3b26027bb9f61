import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// The `gattlab` command: parsing and wiring only; the work is in the library modules.
public struct GattlabCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gattlab",
        abstract: "Record, decode, replay and fuzz BLE GATT traffic of Wi-Fi provisioning and OTA devices.",
        discussion: """
            Reads btsnoop (Android, btmon), Apple PacketLogger, pcap and pcapng (HCI, Linux \
            monitor, nRF Sniffer and other over-the-air sniffers), detected from content.

            Exit codes: 0 success, 1 finding, 64 usage error, 65 damaged or unreadable input \
            (the error names file, record and byte offset), 66 input not found, 70 a redacted \
            file failed its own checks (nothing written), 73 output not created. Secrets (LTKs, Wi-Fi passwords) print as <redacted:N bytes> unless \
            --reveal-secrets.

            Start with:  gattlab timeline FILE   (what happened and why it failed)
            then         gattlab decode FILE     (every PDU)
            Security:    gattlab audit FILE      (where credentials and keys went)
            Sharing:     gattlab redact FILE -o SHAREABLE   (every secret overwritten, checked)
            """,
        version: "0.1.0",
        subcommands: [InfoCommand.self, DecodeCommand.self, TimelineCommand.self, AuditCommand.self, RedactCommand.self,
                      ConvertCommand.self, EmulateCommand.self, ReplayCommand.self, FuzzCommand.self, CaptureCommand.self, CorpusCommand.self])

    public init() {}

    /// Entry point: a closed pipe must end output quietly, not kill the process with SIGPIPE.
    public static func start() {
        signal(SIGPIPE, SIG_IGN)
        main()
    }
}
