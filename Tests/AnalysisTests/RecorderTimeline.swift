import GATT
import Profiles
@testable import Analysis
@testable import Emulator
import Protocols

extension HCIRecorder {
    /// The timeline of the phone log written so far, through the same pipeline as
    /// `gattlab timeline`: GATT, the device protocols, the builder. `builtInTable` stands in for a
    /// discovery the log does not hold (the speaker's, say).
    func timeline(builtInTable: String? = nil) -> Timeline {
        let decoder = GATTDecoder()
        if let builtInTable {
            decoder.defaultTable = GATTLabProtocols.all.builtInTable(named: builtInTable)?.table
            decoder.defaultTableSource = .builtIn(builtInTable)
        }
        let profiles = ProfileDecoder(protocols: GATTLabProtocols.all)
        let builder = TimelineBuilder(source: "synthetic", format: "btsnoop", protocols: GATTLabProtocols.all)
        recording.forEachRecord { record in
            decoder.consume(record)
            profiles.consume(decoder, record: record)
            builder.consume(record, gatt: decoder.events, profile: profiles.events)
        }
        return builder.finish()
    }
}
