/// Where a `JSONValue` keeps its case and payload, for the service memo's encoder, which reads
/// an attribute's value in place (``ContextEncoder/scalar(at:)``) with no `switch` over it.
///
/// **What is assumed**: the enum is 17 bytes, a 16-byte payload then a tag byte; payload cases
/// are numbered in declaration order (`bool` 0, `int` 1, `double` 2, `string` 3), the cases
/// without a scalar payload after them; a Boolean in the low bit of the first byte, an integer
/// and a double in the first word, a string as the `String` itself (its two words,
/// ``StringLayout``). **Where it holds**: ``available`` checks every case once. **Where it does
/// not**, or where ``LayoutReads`` is off: ``available`` is false and the memo copies each value
/// out of its dictionary and switches over it.
enum JSONValueLayout {
    /// The tag byte's offset.
    static let tagOffset = 16
    /// The tag of `.bool`.
    static let boolTag: UInt8 = 0
    /// The tag of `.string`; tags above it are the cases without a scalar payload.
    static let stringTag: UInt8 = 3

    /// Whether the layout reads of `JSONValue` are on: ``LayoutReads/enabled``, the string
    /// layout's own check (a string payload is compared as its words), and every case's tag
    /// and payload where they are assumed to be.
    static let available: Bool = {
        guard LayoutReads.enabled, StringLayout.available, MemoryLayout<JSONValue>.size == tagOffset + 1 else {
            return false
        }
        let kinds: [JSONValue] = [
            .null, .bool(true), .bool(false), .int(-3), .double(2.5), .string("s"),
            .string("a string longer than fifteen bytes"), .array([.int(1)]), .object(["k": .null]),
        ]
        for v in kinds {
            let (tag, w0, w1) = withUnsafeBytes(of: v) {
                (
                    $0.load(fromByteOffset: tagOffset, as: UInt8.self), $0.load(as: UInt64.self),
                    $0.load(fromByteOffset: 8, as: UInt64.self)
                )
            }
            switch v {
            case .bool(let b): guard tag == boolTag, w0 & 1 == (b ? 1 : 0) else { return false }
            case .int(let i): guard tag == 1, w0 == UInt64(bitPattern: i) else { return false }
            case .double(let d): guard tag == 2, w0 == d.bitPattern else { return false }
            case .string(let s): guard tag == stringTag, (w0, w1) == StringLayout.words(s) else { return false }
            case .null, .array, .object: guard tag > stringTag else { return false }
            }
        }
        return true
    }()
}
