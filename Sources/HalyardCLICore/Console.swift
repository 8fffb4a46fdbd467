import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the command writes: lines to standard output (unbuffered, so `watch` shows each change
/// at once, also through a pipe), errors to standard error, and colour only when standard output
/// is a terminal and `NO_COLOR` is unset (https://no-color.org).
///
/// A reader that goes away (`halyard watch | head -1`) is not an error: SIGPIPE is ignored (see
/// ``HalyardCommandLine/run(_:environment:)``), the first write that fails with `EPIPE` marks
/// standard output closed, later lines are dropped, and the command ends quietly with status
/// 141 (docs/cli.md).
struct Console: Sendable {
    /// Whether styles are applied.
    let colour: Bool
    /// Whether standard output was found closed (a write failed with `EPIPE`).
    private let closed = Guarded(false)

    /// Styles for people on a terminal.
    enum Style: String {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
    }

    init(environment: [String: String]) {
        colour = isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil
    }

    /// `text` in `style` when colour is on.
    func styled(_ text: String, _ style: Style) -> String {
        colour ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// Writes one line to standard output (dropped once standard output is closed).
    func line(_ text: String) {
        write(text + "\n")
    }

    /// Writes `text` as is to standard output (dropped once standard output is closed).
    func write(_ text: String) {
        guard !outputClosed else { return }
        if !Self.writeAll(Array(text.utf8), to: STDOUT_FILENO) { closed.withLock { $0 = true } }
    }

    /// Whether the reader of standard output went away (a write failed with `EPIPE`), or
    /// ``markOutputClosed()`` was called.
    var outputClosed: Bool { closed.withLock { $0 } }

    /// Records that standard output has no reader any more (seen by a watcher before a write).
    func markOutputClosed() { closed.withLock { $0 = true } }

    /// Writes `halyard: <cause>` to standard error, control characters escaped
    /// (``Swift/String/terminalSafe``: a cause may quote the control plane).
    func error(_ cause: String) {
        _ = Self.writeAll(Array("halyard: \(cause.terminalSafe)\n".utf8), to: STDERR_FILENO)
    }

    /// Writes every byte, retrying short writes and `EINTR`; false when the descriptor failed
    /// (`EPIPE`: no reader; any other error ends output the same way, quietly).
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, base + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Writes rows as aligned columns (two spaces apart, the last column unpadded); with
    /// `header`, the first row is a header, in bold. Cells are shown with their control
    /// characters escaped (``Swift/String/terminalSafe``). `style` may colour a cell after it was
    /// padded.
    func table(
        _ rows: [[String]], header: Bool = true,
        style: (_ row: Int, _ column: Int, _ cell: String) -> String = { $2 }
    ) {
        let rows = rows.map { $0.map(\.terminalSafe) }
        guard let columns = rows.map(\.count).max() else { return }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        for (index, row) in rows.enumerated() {
            let cells = row.enumerated().map { column, cell -> String in
                let padded =
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                return header && index == 0 ? styled(padded, .bold) : style(index, column, padded)
            }
            line(cells.joined(separator: "  "))
        }
    }
}

/// `write(2)` (the name is taken by ``Console/write(_:)`` inside the type).
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(descriptor, bytes, count)
    #else
        Darwin.write(descriptor, bytes, count)
    #endif
}
