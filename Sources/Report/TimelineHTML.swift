import Analysis
import Foundation

/// `gattlab timeline --format html`: one self-contained page (no network needed): the timeline's
/// JSON document inside a script element, drawn by the page's own JavaScript (`HTMLTemplate`).
public enum TimelineHTML {
    public static func render(_ t: Timeline, options: RenderOptions = .init()) -> String {
        // JSONWriter escapes `<` as \u003c, so the data cannot close its script element.
        var data = options
        data.pretty = false
        let json = TimelineJSON.render(t, options: data)
        return fill(HTMLTemplate.page, [(HTMLTemplate.titlePlaceholder, escape("GATTLab timeline: \(t.source)")),
                                         (HTMLTemplate.dataPlaceholder, json)])
    }

    /// Replaces each placeholder's first occurrence in the template itself, so text inserted
    /// from a capture is never searched for the other placeholder.
    static func fill(_ template: String, _ values: [(String, String)]) -> String {
        var pieces: [(Range<String.Index>, String)] = []
        for (placeholder, value) in values {
            if let r = template.range(of: placeholder) { pieces.append((r, value)) }
        }
        pieces.sort { $0.0.lowerBound < $1.0.lowerBound }
        var out = ""
        var at = template.startIndex
        for (r, value) in pieces where r.lowerBound >= at {
            out += template[at..<r.lowerBound]
            out += value
            at = r.upperBound
        }
        out += template[at...]
        return out
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}

