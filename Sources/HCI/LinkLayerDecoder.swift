import Capture

/// State for over-the-air captures; filled in once the link-layer rules are settled.
struct LinkLayerState {}

extension LinkDecoder {
    func consumeLinkLayer(_ record: CaptureRecord) {}
}
