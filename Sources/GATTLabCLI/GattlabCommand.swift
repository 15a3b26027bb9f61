import ArgumentParser
import CBuildInfo
#if canImport(Glibc)
import Glibc
#endif
import Protocols
import Report

/// `gattlab --version`: the release and the git revision it was built from (recorded by
/// Scripts/revision.sh when make builds; "unknown" for a plain `swift build`).
let gattlabVersion = "0.2.0 (git \(String(cString: gattlab_git_revision())))"

/// The `gattlab` command: parsing and wiring only; the work is in the library modules.
public struct GattlabCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gattlab",
        abstract: "Record, decode, replay and fuzz BLE GATT traffic of Wi-Fi provisioning and OTA devices.",
        discussion: """
            Reads btsnoop (Android, btmon), Apple PacketLogger, pcap and pcapng (HCI, Linux \
            monitor, nRF Sniffer and other over-the-air sniffers), detected from content.

            Errors go to stderr in one form: `gattlab: error: WHAT (FILE, record N, byte \
            offset M)`, then `gattlab: hint: WHAT TO TRY`. Secrets (LTKs, Wi-Fi passwords) \
            print as <redacted:N bytes> unless --reveal-secrets. NO_COLOR turns colour off.

            Start with:  gattlab timeline FILE   (what happened and why it failed)
            then         gattlab decode FILE     (every PDU)
            Security:    gattlab audit FILE      (where credentials and keys went)
            Sharing:     gattlab redact FILE -o SHAREABLE   (every secret overwritten, checked)
            """ + "\n\n" + ExitStatus.help(ExitStatus.allCases) + "\n\nEach command's --help lists the codes it returns; docs/exit-codes.md explains them.",
        version: gattlabVersion,
        subcommands: [InfoCommand.self, DecodeCommand.self, TimelineCommand.self, AuditCommand.self, RedactCommand.self,
                      ConvertCommand.self, EmulateCommand.self, ReplayCommand.self, FuzzCommand.self, CaptureCommand.self, CorpusCommand.self,
                      ProtocolsCommand.self])

    public init() {}

    /// Entry point: a closed pipe must end output quietly, not kill the process with SIGPIPE;
    /// every error leaves in the one voice of `Diagnostics`, with its exit status.
    public static func start() {
        signal(SIGPIPE, SIG_IGN)
        BufferedOutput.standardOutputFailed = { error in
            Diagnostics.emit(.error, "cannot write the output (\(String(cString: strerror(error))))", location: InputLocation(file: "standard output"),
                             hint: "check the free space of the disk the output goes to")
            Glibc.exit(ExitStatus.cannotCreate.rawValue)
        }
        // The registration list registers the protocols' UUID names before anything is shown.
        _ = GATTLabProtocols.all
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            Diagnostics.exit(with: error)
        }
    }
}
