/// A protobuf wire-format writer: varints, fixed-width numbers, and length-delimited fields whose
/// length is inserted in front of their content once it is written.
package struct ProtobufWriter {
    /// The bytes written so far.
    package var bytes: [UInt8] = []

    /// Creates an empty writer.
    package init() {}

    private mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    private mutating func tag(_ field: UInt32, _ wireType: UInt8) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    /// A varint field (wire type 0), written whatever its value (one-of members).
    package mutating func varintField(_ field: UInt32, _ value: UInt64) {
        tag(field, 0)
        varint(value)
    }

    /// An `int64` field (two's complement: a negative value takes ten bytes), always written.
    package mutating func int64(_ field: UInt32, _ value: Int64) {
        varintField(field, UInt64(bitPattern: value))
    }

    /// A `fixed64` field (wire type 1, little-endian), left out when zero.
    package mutating func fixed64(_ field: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 1)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `double` field (wire type 1, IEEE 754 little-endian), always written (one-of members).
    package mutating func double(_ field: UInt32, _ value: Double) {
        tag(field, 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `string` field as UTF-8; an empty one is left out unless `always` (a one-of member).
    package mutating func string(_ field: UInt32, _ value: String, always: Bool = false) {
        var value = value
        value.withUTF8 { utf8 in
            guard always || !utf8.isEmpty else { return }
            tag(field, 2)
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// An embedded message: `body` writes its fields, then their length is put in front.
    package mutating func message(_ field: UInt32, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, 2)
        let start = bytes.count
        body(&self)
        let length = UInt64(bytes.count - start)
        if length < 0x80 {
            bytes.insert(UInt8(length), at: start)
        } else {
            var prefix = ProtobufWriter()
            prefix.varint(length)
            bytes.insert(contentsOf: prefix.bytes, at: start)
        }
    }
}
