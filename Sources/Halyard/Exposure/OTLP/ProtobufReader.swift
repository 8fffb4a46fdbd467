/// A protobuf wire-format reader for the small answers of an OTLP receiver
/// (`ExportLogsServiceResponse`, `google.rpc.Status`): it walks the fields of one message,
/// skipping any it does not know, and fails (nil) on malformed input rather than guess.
package struct ProtobufReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// One field: its number, and its value (a varint or the bytes of a length-delimited field;
    /// fixed-width fields are skipped and reported with an empty payload).
    package enum Value: Equatable {
        /// Wire type 0.
        case varint(UInt64)
        /// Wire type 2.
        case bytes([UInt8])
        /// Wire types 1 and 5 (not used by the messages read here).
        case fixed
    }

    /// A reader of `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    private mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// The next field, nil at the end; throws on malformed input.
    package mutating func next() throws(ProtobufReaderError) -> (field: UInt64, value: Value)? {
        guard offset < bytes.count else { return nil }
        guard let key = varint(), key >> 3 > 0 else { throw ProtobufReaderError() }
        switch key & 7 {
        case 0:
            guard let v = varint() else { throw ProtobufReaderError() }
            return (key >> 3, .varint(v))
        case 1, 5:
            let width = key & 7 == 1 ? 8 : 4
            guard bytes.count - offset >= width else { throw ProtobufReaderError() }
            offset += width
            return (key >> 3, .fixed)
        case 2:
            guard let length = varint(), length <= UInt64(bytes.count - offset) else { throw ProtobufReaderError() }
            let end = offset + Int(length)
            defer { offset = end }
            return (key >> 3, .bytes(Array(bytes[offset..<end])))
        default:
            throw ProtobufReaderError()  // groups (3, 4) and reserved types: not in these messages
        }
    }
}

/// Malformed protobuf input.
package struct ProtobufReaderError: Error {}
