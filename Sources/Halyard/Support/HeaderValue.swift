/// SPEC §5's rule for what may reach a request header: no control character (U+0000–U+001F,
/// U+007F) in a name or a value, and a name that is an HTTP token. One rule for the key, the app
/// id, OTLP headers and, as a last guard, every request the transports send.
package enum HeaderValue {
    /// Whether `text` holds no control character (U+0000–U+001F, U+007F).
    package static func isClean(_ text: String) -> Bool {
        !text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// The name of the first field (in name order) that must not be sent: a name that is not
    /// an HTTP token, or a value with a control character; nil when every field may be sent.
    package static func firstUnsafeField(_ headers: [String: String]) -> String? {
        for name in headers.keys.sorted() {
            guard let value = headers[name] else { continue }
            if !isToken(name) || !isClean(value) { return name }
        }
        return nil
    }

    /// Whether `name` is an HTTP field-name token (RFC 9110).
    package static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// `name` as it may be shown in a log line or an error: control characters as `?`.
    package static func shown(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }
}
