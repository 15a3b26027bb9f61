import ArgumentParser
import ATT
import Capture
import GATT
import HCI
import Profiles
import Protocols
import Report

struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Print every ATT PDU and notable HCI, SMP and GATT event of captures.",
        discussion: """
            One line per ATT PDU: frame (record number, as Wireshark numbers frames), time, \
            connection, direction, opcode, handle with its characteristic, and the value as hex \
            and text. Link events (connections, encryption, disconnections), SMP pairing and \
            joined GATT operations (long writes and reads, subscriptions, MTU) have lines of \
            their own.

            Directions: '>' the capturing host sent it, '<' it received it; sniffer captures \
            show C>P (central to peripheral) and P>C.

            Advertising has a line per report: every report of an HCI LE Advertising Report \
            event (legacy, directed, extended), or every advertising PDU a sniffer caught with \
            a good CRC, with address, event type, RSSI, PHY and the AD structures.

            --format json writes JSON Lines, one object per line with a "type" of att, gatt, \
            link, adv, smp, malformed or note. The schema is in the README.

            Examples:
              gattlab decode phone.btsnoop
              gattlab decode --uuid OTA_STATUS --absolute-time phone.btsnoop
              gattlab decode --format json capture.pcapng | jq 'select(.type=="att")'
              gattlab decode --profile speaker --handle 0x0014 late-start.log
              gattlab decode --ltk 7f62c053f104a5bbe68b1d896a2ed49c sniffed.pcap

            Sniffed links (nRF Sniffer, Ubertooth) that are encrypted show a line per PDU that \
            stays encrypted and why; --ltk or --ltk-file decrypts them (AES-CCM with the session \
            key of LL_ENC_REQ/LL_ENC_RSP), and what they carry is decoded like any other traffic. \
            A sniffed LE legacy pairing gives its keys away: its TK is recovered (Just Works or \
            passkey), its STK decrypts the pairing and the LTK distributed there the later links \
            (--no-pairing-keys turns this off); notes say which key decrypted what, never the key.
            """ + "\n\n" + ExitStatus.help([.success, .usage, .badInput, .noInput, .noMatch, .cannotCreate]))

    @Option(name: .long, help: "Output format: text for people, json for machines (JSON Lines).")
    var format: OutputFormatOption = .text

    @OptionGroup var options: DecodeOptions

    @OptionGroup var linkKeys: LinkKeyOptions

    @Option(name: .long, help: ArgumentHelp("Only this connection: a handle (0x40), hci1/0x40, or aa:ACCESS_ADDRESS.", valueName: "id"))
    var connection: [ConnectionFilter] = []

    @Option(name: .long, help: ArgumentHelp("Only ATT PDUs and operations on this attribute handle (repeatable).", valueName: "handle"))
    var handle: [HandleFilter] = []

    @Option(name: .long, help: ArgumentHelp("Only ATT PDUs on attributes of this UUID or name (repeatable), e.g. 2a19 or OTA_STATUS.", valueName: "uuid"))
    var uuid: [UUIDFilter] = []

    @Flag(name: .customLong("att-only"), help: "Only ATT PDUs: no link, SMP or GATT operation lines.")
    var attOnly = false

    @Flag(name: .customLong("absolute-time"), help: "Times as UTC ISO 8601 instead of seconds since the first record (text output).")
    var absoluteTime = false

    @Argument(help: ArgumentHelp("Capture files: btsnoop, PacketLogger, pcap or pcapng (format detected from content); - reads standard input.", valueName: "file"))
    var files: [String]

    func run() throws {
        let style = Style.forStdout(disabled: options.noColor)
        let out = BufferedOutput()
        var status = ExitStatus.success
        var written = 0
        let files = try CaptureFiles.expand(self.files)
        let keys = try linkKeys.keys()
        for file in files {
            let renderer = EventRenderer(out: out, json: format == .json, style: style,
                                         reveal: options.revealSecrets, absoluteTime: absoluteTime,
                                         file: files.count > 1 ? file : nil, protocols: GATTLabProtocols.all)
            renderer.connectionFilter = connection
            renderer.handleFilter = handle.map(\.handle)
            renderer.uuidFilter = uuid
            renderer.attOnly = attOnly
            let decoder = try options.makeDecoder()
            decoder.link.linkLayerKeys = keys
            decoder.link.recoversPairingKeys = !linkKeys.noPairingKeys
            decoder.link.revealsPasskeys = options.revealSecrets
            let profiles = ProfileDecoder(protocols: GATTLabProtocols.all, keys: options.protocolKeys())
            var decoded = 0
            var progress = Progress(path: file)
            do {
                let reader = try openCapture(file)
                while let record = try reader.next() {
                    renderer.see(record)
                    decoder.consume(record)
                    decoded += 1
                    if !decoder.events.isEmpty {
                        renderer.render(decoder.events, record: record, decoder: decoder)
                        profiles.consume(decoder, record: record)
                        if !profiles.events.isEmpty { renderer.render(profiles.events, record: record) }
                    }
                    progress.update(records: decoded, offset: record.fileOffset)
                }
                progress.finish()
            } catch {
                progress.finish()
                out.flush()
                status = status.worst(report(error, decoded: decoded))
            }
            out.flush()
            written += renderer.written
        }
        let filters = connection.map { "--connection \($0.argument)" } + handle.map { "--handle \($0.argument)" }
            + uuid.map { "--uuid \($0.argument)" }
        if status == .success, written == 0, !filters.isEmpty {
            throw Failure(.noMatch, "nothing matched \(filters.joined(separator: " "))", file: files.count == 1 ? files[0] : "\(files.count) captures",
                          hint: "`gattlab info FILE` lists the connections and the GATT table with handles and UUIDs")
        }
        if status != .success { throw status.exitCode }
    }
}
