import Analysis
import Profiles

/// One device's OTA update as its status notifications tell it: a phase per state (credentials,
/// url, wifi-join, http-connect, download, verification...) and the download's progress curve.
struct OTAPhaseTracker: PhaseTracking {
    let device: Int
    var state: SpeakerOTA.State?
    var phaseStart: Int64 = 0
    var phaseFirstFrame = 0
    var phaseLastFrame = 0
    var phaseConnection: Int?
    var lastStatus: SpeakerOTA.Status?
    var downloadStart: (time: Int64, kb: Int)?

    init(device: Int) { self.device = device }

    mutating func add(_ message: any ProfileMessage, connection c: Int, time t: Int64, frame f: Int, to timeline: inout Timeline) {
        guard let s = message as? SpeakerOTA.Status else { return }
        if s.state == .downloading || (s.state == .verifying && state == .downloading) {
            timeline.progress.append(ProgressPoint(device: device, time: t, percent: Int(s.progress), kb: Int(s.downloadedKB)))
        }
        if s.state == .downloading, downloadStart == nil { downloadStart = (t, Int(s.downloadedKB)) }
        let previous = lastStatus
        lastStatus = s
        guard let next = s.state, next != state else {
            phaseLastFrame = f
            return
        }
        closePhase(time: t, frame: f, next: next, previous: previous, to: &timeline)
        state = next
        phaseStart = t
        phaseFirstFrame = f
        phaseLastFrame = f
        phaseConnection = c
        if next != .downloading { downloadStart = nil }
    }

    mutating func linkEnded(connection c: Int, time t: Int64, frame f: Int, to timeline: inout Timeline) {
        guard let state, phaseConnection == c else { return }
        // States the device leaves by itself continue across the drop: only the phone's view ends.
        if [.wifiConnecting, .wifiConnected, .downloading, .verifying].contains(state) {
            closePhase(time: t, frame: f, next: nil, previous: lastStatus, to: &timeline)
            self.state = nil
        }
    }

    mutating func finish(at end: Int64, to timeline: inout Timeline) {
        guard let state else { return }
        if [.idle, .success, .error, .pendingVerify].contains(state) {
            timeline.phases.append(Phase(device: device, connection: phaseConnection, name: state.phaseName, start: phaseStart,
                                         end: max(phaseStart, end), outcome: state == .error ? .failed : .open,
                                         detail: state == .error ? lastStatus?.error.map { "\($0): \($0.meaning)" } : nil,
                                         firstFrame: phaseFirstFrame, lastFrame: phaseLastFrame))
        } else {
            closePhase(time: end, frame: phaseLastFrame, next: nil, previous: lastStatus, to: &timeline)
        }
    }

    private func closePhase(time t: Int64, frame f: Int, next: SpeakerOTA.State?, previous: SpeakerOTA.Status?, to timeline: inout Timeline) {
        guard let state else { return }
        let outcome: Phase.Outcome = next == nil ? .interrupted : next == .error ? .failed : .ok
        var detail: String?
        if state == .downloading, let start = downloadStart, let last = previous {
            let kb = Int(last.downloadedKB) - start.kb
            let seconds = Double(t - start.time) / 1e6
            if seconds > 0 {
                detail = "\(kb) KB at \(TimelineBuilder.decimal(Double(kb) / seconds, 1)) KB/s, reached \(last.progress) %"
            }
        } else if state == .error, let e = previous?.error {
            detail = "\(e): \(e.meaning)"
        }
        // Terminal states and the idle state are points, not stretches: they end at the next state.
        timeline.phases.append(Phase(device: device, connection: phaseConnection, name: state.phaseName, start: phaseStart,
                                     end: t, outcome: outcome, detail: detail, firstFrame: phaseFirstFrame, lastFrame: f))
    }
}

extension SpeakerOTA.State {
    /// The phase this state is, on the timeline.
    var phaseName: String {
        switch self {
        case .idle: "idle"
        case .credentialsReceived: "credentials"
        case .urlReceived: "url"
        case .wifiConnecting: "wifi-join"
        case .wifiConnected: "http-connect"
        case .downloading: "download"
        case .verifying: "verification"
        case .success: "success"
        case .pendingVerify: "pending-verify"
        case .error: "error"
        }
    }
}
