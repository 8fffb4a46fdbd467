import Foundation
import Halyard

// How the commands show library values, on a terminal and in `--json` (docs/cli.md).

extension ServedFlag {
    /// The `--json` form: every member always present (`null` when absent), so scripts can rely
    /// on the shape.
    var jsonObject: JSONValue {
        .object([
            "key": .string(key),
            "value": value ?? .null,
            "variant": variant.map(JSONValue.string) ?? .null,
            "reason": .string(reason.rawValue),
            "errorCode": errorCode.map { .string($0.rawValue) } ?? .null,
            "errorMessage": errorMessage.map(JSONValue.string) ?? .null,
            "metadata": metadata.jsonObject,
        ])
    }

    /// The value as JSON text for a terminal (`-` for "use the code default").
    var valueText: String { value?.jsonString ?? "-" }
}

extension Dictionary where Key == String, Value == FlagMetadataValue {
    /// Flag or response metadata as a JSON object.
    var jsonObject: JSONValue {
        .object(
            mapValues { value in
                switch value {
                case .bool(let b): .bool(b)
                case .string(let s): .string(s)
                case .number(let d): .double(d)
                case .int(let i): .int(i)
                }
            })
    }
}

extension JSONValue {
    /// One line of stable JSON for `--json`: members sorted, no whitespace, and every number
    /// as the control plane sent it. Not RFC 8785's canonical form, whose numbers are IEEE
    /// doubles (a served `9007199254740993` would print as `9007199254740992`): integers are
    /// written with all their 64 bits, doubles in their shortest round-trip form, with `.0`
    /// when integral, so that they read back as what they were (``JSONValue/jsonString``).
    var outputLine: String { jsonString }
}

/// `HH:mm:ss.SSS` in local time, for `watch` on a terminal.
func clockTime(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "HH:mm:ss.SSS"
    return formatter.string(from: date)
}

/// ISO 8601 UTC with milliseconds, for `watch --json`.
func isoTime(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
}

/// A duration as people read it (`12 ms`, `1.5 s`).
func readable(_ duration: Duration) -> String {
    let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    return milliseconds < 1000 ? "\(Int(milliseconds.rounded())) ms" : "\((milliseconds / 100).rounded() / 10) s"
}
