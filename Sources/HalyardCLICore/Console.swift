import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the command writes: lines to standard output (unbuffered, so `watch` shows each change
/// at once, also through a pipe), errors to standard error, and colour only when standard output
/// is a terminal and `NO_COLOR` is unset (https://no-color.org).
struct Console: Sendable {
    /// Whether styles are applied.
    let colour: Bool

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

    /// Writes one line to standard output.
    func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `halyard: <cause>` to standard error.
    func error(_ cause: String) {
        FileHandle.standardError.write(Data("halyard: \(cause)\n".utf8))
    }

    /// Writes rows as aligned columns (two spaces apart, the last column unpadded); with
    /// `header`, the first row is a header, in bold. `style` may colour a cell after it was padded.
    func table(
        _ rows: [[String]], header: Bool = true,
        style: (_ row: Int, _ column: Int, _ cell: String) -> String = { $2 }
    ) {
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
