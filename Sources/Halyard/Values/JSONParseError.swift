/// A JSON document was rejected: what was wrong (``kind``) and where (``offset``).
///
/// ``offset`` is the zero-based byte offset, in the UTF-8 input, of the byte at which the
/// problem was detected (for example the first byte of an invalid UTF-8 sequence, the `\` of a
/// bad escape, the opening `"` of a duplicate member name, or the `[`/`{` that is one level too
/// deep). For ``Kind/inputTooLarge(limit:)`` it is the limit itself (the first byte beyond it).
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the input.
    public enum Kind: Sendable, Hashable {
        /// The input ended before the document was complete (includes empty input).
        case unexpectedEndOfInput
        /// A byte that cannot start or continue the current token.
        case unexpectedCharacter(UInt8)
        /// `NaN`, `Infinity` or `-Infinity`: not JSON.
        case nonFiniteLiteral
        /// A number with a superfluous leading zero such as `01` or `-00`.
        case leadingZero
        /// A malformed number such as `1.`, `.5`, `1e`, `-` or `+1`.
        case invalidNumber
        /// A number whose magnitude does not fit in a finite double (such as `1e400`).
        case numberOutOfRange
        /// A malformed literal: something that starts like `true`, `false` or `null` but is not.
        case invalidLiteral
        /// Bytes that are not well-formed UTF-8 (overlong forms, encoded surrogates, values
        /// above U+10FFFF, truncated or stray continuation bytes).
        case invalidUTF8
        /// An unescaped control character (U+0000–U+001F) inside a string.
        case controlCharacterInString
        /// A backslash followed by something other than `" \ / b f n r t u`.
        case invalidEscape
        /// `\u` not followed by four hexadecimal digits.
        case invalidUnicodeEscape
        /// A `\uD800`–`\uDFFF` escape that is not part of a high+low surrogate pair.
        case unpairedSurrogate
        /// The same member name appears twice in one object.
        case duplicateMemberName(String)
        /// Non-whitespace bytes after the complete document.
        case trailingData
        /// The input is larger than ``JSONParsingLimits/maxInputBytes``.
        case inputTooLarge(limit: Int)
        /// Arrays/objects nest deeper than ``JSONParsingLimits/maxDepth``.
        case nestingTooDeep(limit: Int)
        /// An object has more members than ``JSONParsingLimits/maxObjectMembers``.
        case tooManyMembers(limit: Int)
    }

    /// What was wrong.
    public let kind: Kind
    /// The zero-based byte offset at which the problem was detected.
    public let offset: Int

    /// Creates an error (public so that tests and wrappers can build expected values).
    public init(_ kind: Kind, offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// A readable, single-line description such as
    /// `invalid JSON at byte 12: duplicate member name "a"`.
    public var description: String {
        let what: String
        switch kind {
        case .unexpectedEndOfInput: what = "unexpected end of input"
        case .unexpectedCharacter(let b):
            if b >= 0x21 && b < 0x7F {
                what = "unexpected character '\(Character(Unicode.Scalar(b)))'"
            } else {
                what = "unexpected byte 0x\(String(b, radix: 16, uppercase: true))"
            }
        case .nonFiniteLiteral: what = "NaN and Infinity are not JSON"
        case .leadingZero: what = "number with a leading zero"
        case .invalidNumber: what = "malformed number"
        case .numberOutOfRange: what = "number out of the range of a double"
        case .invalidLiteral: what = "invalid literal (expected true, false or null)"
        case .invalidUTF8: what = "invalid UTF-8"
        case .controlCharacterInString: what = "unescaped control character in string"
        case .invalidEscape: what = "invalid escape sequence"
        case .invalidUnicodeEscape: what = "invalid \\u escape (need four hex digits)"
        case .unpairedSurrogate: what = "unpaired UTF-16 surrogate escape"
        case .duplicateMemberName(let name): what = "duplicate member name \(JSONValue.string(name).jsonString)"
        case .trailingData: what = "unexpected data after the JSON document"
        case .inputTooLarge(let limit): what = "input larger than \(limit) bytes"
        case .nestingTooDeep(let limit): what = "nesting deeper than \(limit) levels"
        case .tooManyMembers(let limit): what = "object with more than \(limit) members"
        }
        return "invalid JSON at byte \(offset): \(what)"
    }
}
