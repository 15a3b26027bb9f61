import Analysis
import Foundation

/// `gattlab timeline --format html`: one self-contained page (no network needed): the timeline's
/// JSON document inside a script element, drawn by the page's own JavaScript (`HTMLTemplate`).
public enum TimelineHTML {
    public static func render(_ t: Timeline, options: RenderOptions = .init()) -> String {
        let out = BufferedOutput.collecting()
        write(t, options: options, to: out)
        return out.text
    }

    /// The same page written to `out` as it is made: the data of a day's capture is tens of
    /// megabytes, never held as text as well.
    public static func write(_ t: Timeline, options: RenderOptions = .init(), to out: BufferedOutput) {
        // JSONWriter escapes `<` as \u003c, so the data cannot close its script element.
        var data = options
        data.pretty = false
        let title = escape("GATTLab timeline: \(t.source)")
        fill(HTMLTemplate.page, [(HTMLTemplate.titlePlaceholder, { $0.write(title) }),
                                 (HTMLTemplate.dataPlaceholder, { TimelineJSON.write([t], options: data, to: $0) })], to: out)
    }

    /// Writes the template with each placeholder's first occurrence in the template itself
    /// replaced by what its writer writes, so text inserted from a capture is never searched for
    /// the other placeholder.
    static func fill(_ template: String, _ values: [(String, (BufferedOutput) -> Void)], to out: BufferedOutput) {
        var pieces: [(Range<String.Index>, (BufferedOutput) -> Void)] = []
        for (placeholder, value) in values {
            if let r = template.range(of: placeholder) { pieces.append((r, value)) }
        }
        pieces.sort { $0.0.lowerBound < $1.0.lowerBound }
        var at = template.startIndex
        for (r, value) in pieces where r.lowerBound >= at {
            out.write(String(template[at..<r.lowerBound]))
            value(out)
            at = r.upperBound
        }
        out.write(String(template[at...]))
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

