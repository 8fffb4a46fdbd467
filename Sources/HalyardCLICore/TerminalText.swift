/// What a terminal may be shown of text that came from elsewhere (docs/cli.md, "Control
/// characters"): a control plane's flag keys, values, variants, reasons and messages could hold
/// ANSI/OSC escape sequences that recolour, retitle or rewrite an operator's terminal.
extension String {
    /// This text with every control character — C0 (U+0000–U+001F, tab and line breaks
    /// included), DEL (U+007F) and C1 (U+0080–U+009F, which some terminals take as ESC
    /// sequences) — written as `\u` and four upper-case hex digits (`\u001B`). Everything else is
    /// kept as it is. `--json` output needs none of this: JSON escapes C0 itself.
    var terminalSafe: String {
        guard unicodeScalars.contains(where: Self.isControl) else { return self }
        var out = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            guard Self.isControl(scalar) else {
                out.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let escaped = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            out.append(contentsOf: escaped.unicodeScalars)
        }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
