import Capture
import Foundation
import Report
#if canImport(Glibc)
import Glibc
#endif

// The inputs and outputs every command shares: which capture files a command line names, and
// text outputs that never replace an input or an existing file without --force.

/// Which files a list of paths and folders names. Files named on the command line are taken as
/// they are (a damaged or missing one gets its error from the reader); in folders, files are picked by their first bytes,
/// never by name, so rotated logs (`btsnoop_hci.log.last`, `.cfa`, `.log.1`) are found and notes
/// beside them are listed as skipped.
enum CaptureFiles {
    static func expand(_ arguments: [String]) throws -> [String] {
        var out: [String] = []
        for a in arguments {
            if a == "-" { out.append(a); continue }  // standard input, where a command reads it
            // A file, or a path that is not there: the reader opens it and says what is wrong,
            // and the other inputs are still read.
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: a, isDirectory: &isDir), isDir.boolValue else { out.append(a); continue }
            var skipped: [String] = []
            let found = (FileManager.default.enumerator(atPath: a)?.compactMap { $0 as? String } ?? []).sorted()
            for relative in found where !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
                let path = (a as NSString).appendingPathComponent(relative)
                var entry = stat()
                guard stat(path, &entry) == 0, entry.st_mode & S_IFMT == S_IFREG else { continue }
                if CaptureFormat.sniff(path: path) != nil { out.append(path) } else { skipped.append(relative) }
            }
            if !skipped.isEmpty {
                let shown = skipped.prefix(5).joined(separator: ", ") + (skipped.count > 5 ? " and \(skipped.count - 5) more" : "")
                let what = skipped.count == 1 ? "1 file that is not a capture" : "\(skipped.count) files that are not captures"
                Diagnostics.note("skipped \(what): \(shown)", file: a)
            }
        }
        return out
    }

    /// One output name per input for -o FOLDER: the file name, with as many parent folders
    /// (joined by "__") as it takes to tell inputs with equal names apart, so that
    /// `a/btsnoop_hci.log` and `b/btsnoop_hci.log` never write over each other.
    static func outputNames(_ paths: [String]) -> [String] {
        let parts = paths.map { URL(fileURLWithPath: $0).standardizedFileURL.pathComponents.filter { $0 != "/" } }
        var depth = Array(repeating: 1, count: paths.count)
        func name(_ i: Int) -> String { parts[i].suffix(depth[i]).joined(separator: "__") }
        while true {
            let names = (0..<paths.count).map(name)
            let counts = Dictionary(names.map { ($0, 1) }, uniquingKeysWith: +)
            let clashing = (0..<paths.count).filter { counts[names[$0]]! > 1 && depth[$0] < parts[$0].count }
            if clashing.isEmpty { break }
            for i in clashing { depth[i] += 1 }
        }
        // The same file given twice (or paths that differ only above the root): number them.
        var seen: [String: Int] = [:]
        return (0..<paths.count).map { i in
            let n = name(i)
            seen[n, default: 0] += 1
            return seen[n]! == 1 ? n : "\(n)-\(seen[n]!)"
        }
    }
}

/// Text outputs: written to a temporary file and renamed, never over an input, and over an
/// existing file only with --force.
enum OutputFiles {
    static func makeFolder(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Failure(.cannotCreate, "cannot create the folder: \(error.localizedDescription)", file: path,
                          hint: "choose a folder you can write to with -o")
        }
    }

    /// Whether two paths name one file: the same path spelled differently, a symbolic or a hard link.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var sa = stat(), sb = stat()
        guard stat(a, &sa) == 0, stat(b, &sb) == 0 else {
            return URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path
        }
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }

    /// Output made as it is written, to stdout (no path, or "-") or into `path` as
    /// `write(to:force:protecting:_:)` does, then saying where it went.
    static func emit(to path: String?, force: Bool, protecting inputs: [String], _ body: (BufferedOutput) -> Void) throws {
        guard let path, path != "-" else {
            let out = BufferedOutput()
            body(out)
            out.flush()
            return
        }
        try write(to: path, force: force, protecting: inputs, body)
        printError("gattlab: wrote \(path)")
    }

    static func write(_ text: String, to path: String, force: Bool, protecting inputs: [String]) throws {
        try write(to: path, force: force, protecting: inputs) { $0.write(text) }
    }

    /// The output written by `body` as it makes it (a large timeline's text is never one string
    /// in memory), with the same care: into a temporary file, renamed when all of it is written.
    static func write(to path: String, force: Bool, protecting inputs: [String], _ body: (BufferedOutput) -> Void) throws {
        if inputs.contains(where: { sameFile($0, path) }) {
            throw Failure(.cannotCreate, "the output is an input; nothing written", file: path, hint: "choose another output with -o")
        }
        if FileManager.default.fileExists(atPath: path), !force {
            throw Failure(.cannotCreate, "the output exists; nothing written", file: path, hint: "add --force to replace it, or choose another -o")
        }
        let temp = path + ".tmp-\(getpid())"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else {
            throw Failure(.cannotCreate, "cannot write the output", file: path, hint: "check that the folder exists and is writable")
        }
        let out = BufferedOutput(fd: fd)
        body(out)
        out.flush()
        let closed = close(fd) == 0 ? 0 : errno
        let failure = out.failure != 0 ? out.failure : closed
        guard failure == 0 else {
            unlink(temp)
            throw Failure(.cannotCreate, "cannot write the output (\(String(cString: strerror(failure))))", file: path,
                          hint: "check the free space of the disk")
        }
        guard rename(temp, path) == 0 else {
            unlink(temp)
            throw Failure(.cannotCreate, "cannot write the output", file: path, hint: "check that the folder exists and is writable")
        }
    }
}
