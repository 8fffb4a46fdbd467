public import Foundation

extension JSONValue {
    /// Parses one strict RFC 8259 JSON document from UTF-8 bytes, with
    /// ``JSONParsingLimits/default`` limits.
    ///
    /// Integers written without fraction or exponent that fit in `Int64` become ``int(_:)``;
    /// every other number becomes ``double(_:)`` (integers beyond `Int64` included, never
    /// wrapped). Duplicate member names, invalid UTF-8, unpaired surrogate escapes, leading
    /// zeros, `NaN`/`Infinity`, a byte-order mark and trailing data are rejected.
    /// - Throws: ``JSONParseError`` naming the problem and its byte offset.
    public init(parsing data: Data) throws(JSONParseError) {
        try self.init(parsing: data, limits: .default)
    }

    /// Parses one strict RFC 8259 JSON document from UTF-8 bytes with the given limits.
    /// - Throws: ``JSONParseError`` naming the problem and its byte offset.
    public init(parsing data: Data, limits: JSONParsingLimits) throws(JSONParseError) {
        let result = data.withUnsafeBytes { raw in
            JSONValue.parseResult(UnsafeRawBufferPointer(raw), limits: limits)
        }
        self = try result.get()
    }

    /// Parses one strict RFC 8259 JSON document from a string (its UTF-8 form), with
    /// ``JSONParsingLimits/default`` limits.
    /// - Throws: ``JSONParseError``; offsets count UTF-8 bytes of `text`.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: text, limits: .default)
    }

    /// Parses one strict RFC 8259 JSON document from a string (its UTF-8 form) with the given
    /// limits.
    /// - Throws: ``JSONParseError``; offsets count UTF-8 bytes of `text`.
    public init(parsing text: String, limits: JSONParsingLimits) throws(JSONParseError) {
        var text = text
        let result = text.withUTF8 { buffer in
            JSONValue.parseResult(UnsafeRawBufferPointer(buffer), limits: limits)
        }
        self = try result.get()
    }

    /// Parses one strict RFC 8259 JSON document from raw UTF-8 bytes with the given limits.
    /// - Throws: ``JSONParseError``.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONParsingLimits = .default)
        throws(JSONParseError)
    {
        self = try JSONValue.parseResult(bytes, limits: limits).get()
    }

    static func parseResult(_ bytes: UnsafeRawBufferPointer, limits: JSONParsingLimits)
        -> Result<JSONValue, JSONParseError>
    {
        if bytes.count > limits.maxInputBytes {
            return .failure(
                JSONParseError(
                    .inputTooLarge(limit: limits.maxInputBytes),
                    offset: max(0, limits.maxInputBytes)))
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return .failure(JSONParseError(.unexpectedEndOfInput, offset: 0))
        }
        var parser = StrictJSONParser(
            base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, limits: limits)
        do {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}
