import Foundation

/// The conversions of JsonLogic as the reference evaluator applies them (docs/definitions.md,
/// "JsonLogic"): numbers, strings and truthiness of `JSONValue`s, loose and strict equality,
/// ordering. Booleans count as the numbers 0 and 1 where the reference treats them so; a
/// double may be NaN or infinite here (an intermediate result), never in a served value.
enum LogicCoercion {
    /// A number as the arithmetic operators see it: an exact integer or a double.
    enum Number: Sendable, Equatable {
        case int(Int64)
        case double(Double)

        var doubleValue: Double {
            switch self {
            case .int(let i): Double(i)
            case .double(let d): d
            }
        }

        var isNaN: Bool {
            if case .double(let d) = self { return d.isNaN }
            return false
        }

        var json: JSONValue {
            switch self {
            case .int(let i): .int(i)
            case .double(let d): .double(d)
            }
        }
    }

    /// Whether a value is a number for comparisons (booleans included, as 0 and 1).
    static func isNumeric(_ value: JSONValue) -> Bool {
        switch value {
        case .int, .double, .bool: true
        default: false
        }
    }

    /// `value` as a number: null is 0, booleans 0/1, a decimal string its value (NaN otherwise),
    /// an empty array 0, a one-item array its item, any other array or an object NaN.
    static func number(_ value: JSONValue) -> Number {
        switch value {
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .bool(let b): return .int(b ? 1 : 0)
        case .null: return .int(0)
        case .string(let s): return .double(parseDecimal(s))
        case .array(let items):
            if items.isEmpty { return .int(0) }
            if items.count == 1 { return number(items[0]) }
            return .double(.nan)
        case .object: return .double(.nan)
        }
    }

    /// A decimal number with optional surrounding whitespace, sign, fraction and exponent; NaN
    /// for anything else (hexadecimal, `inf`, empty).
    static func parseDecimal(_ text: String) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        var sawDigit = false
        var index = trimmed.utf8.startIndex
        let bytes = trimmed.utf8
        func peek() -> UInt8? { index < bytes.endIndex ? bytes[index] : nil }
        if let b = peek(), b == UInt8(ascii: "+") || b == UInt8(ascii: "-") { index = bytes.index(after: index) }
        while let b = peek(), b >= 48, b <= 57 {
            sawDigit = true
            index = bytes.index(after: index)
        }
        if let b = peek(), b == UInt8(ascii: ".") {
            index = bytes.index(after: index)
            while let b = peek(), b >= 48, b <= 57 {
                sawDigit = true
                index = bytes.index(after: index)
            }
        }
        guard sawDigit else { return .nan }
        if let b = peek(), b == UInt8(ascii: "e") || b == UInt8(ascii: "E") {
            index = bytes.index(after: index)
            if let b = peek(), b == UInt8(ascii: "+") || b == UInt8(ascii: "-") { index = bytes.index(after: index) }
            var expDigit = false
            while let b = peek(), b >= 48, b <= 57 {
                expDigit = true
                index = bytes.index(after: index)
            }
            guard expDigit else { return .nan }
        }
        guard index == bytes.endIndex else { return .nan }
        return Double(trimmed) ?? .nan
    }

    /// `value` as a string for `cat`, `in` and comparisons: doubles as `%.15g`, null as
    /// `"null"`, booleans as `"True"`/`"False"` (the reference converts them as integers of its
    /// language, before its own `"true"` branch), arrays joined with commas, objects as
    /// `"[object Object]"`.
    static func string(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return String(format: "%.15g", d)
        case .null: return "null"
        case .bool(let b): return b ? "True" : "False"
        case .array(let items): return items.map(string).joined(separator: ",")
        case .object: return "[object Object]"
        }
    }

    /// The reference's plain string form of a value (how a targeting result or a `sem_ver`
    /// argument becomes text): integers in decimal, doubles in shortest round-trip form with
    /// `.0` when integral; `nil` for values that have none here (null, arrays, objects).
    static func plainString(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return pythonRepr(d)
        case .bool(let b): return b ? "True" : "False"
        case .null, .array, .object: return nil
        }
    }

    /// A double as the reference prints it: shortest round-trip digits, `1.0` for integral
    /// values, exponent form from 1e16 and below 1e-4.
    static func pythonRepr(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        var text = d.description
        if let e = text.firstIndex(of: "e") {
            // Swift writes "1e-05" / "1e+16" as Python does; keep it.
            _ = e
            return text
        }
        if !text.contains(".") { text += ".0" }
        return text
    }

    /// JsonLogic truthiness: null, false, 0, NaN, `""` and `[]` are false; objects are true.
    static func truthy(_ value: JSONValue) -> Bool {
        switch value {
        case .null: false
        case .bool(let b): b
        case .int(let i): i != 0
        case .double(let d): !(d.isNaN || d == 0)
        case .string(let s): !s.isEmpty
        case .array(let items): !items.isEmpty
        case .object: true
        }
    }

    /// Two numbers compared for equality (integers exactly, otherwise as doubles).
    static func numbersEqual(_ a: Number, _ b: Number) -> Bool {
        if case .int(let x) = a, case .int(let y) = b { return x == y }
        return a.doubleValue == b.doubleValue
    }

    /// `a < b` for numbers; false when either is NaN.
    static func numberLess(_ a: Number, _ b: Number) -> Bool {
        if case .int(let x) = a, case .int(let y) = b { return x < y }
        return a.doubleValue < b.doubleValue
    }

    /// Code-point equality of two strings (no canonical equivalence: `é` and `e` + U+0301
    /// differ, as in the reference).
    /// Native strings (and small ones) compare their UTF-8 storage in one `memcmp`; the generic
    /// byte-by-byte walk (~700 instructions for a 10-byte key, measured) is left for bridged
    /// strings.
    static func stringsEqual(_ a: String, _ b: String) -> Bool {
        let count = a.utf8.count
        guard count == b.utf8.count else { return false }
        // Two strings with the same representation (the same small string, or the same
        // storage) have the same bytes: no closure, no `memcmp` (the common case of a name
        // written in a rule and the same short name in a context).
        if MemoryLayout<String>.size == 16 {
            let x = unsafeBitCast(a, to: (UInt64, UInt64).self)
            let y = unsafeBitCast(b, to: (UInt64, UInt64).self)
            if x == y { return true }
            // Two small strings with other words have other contents (StringLayout): the
            // usual case of a context's value against a rule's constant, decided without a
            // closure or a `memcmp`.
            if StringLayout.available, StringLayout.isSmall(x.1), StringLayout.isSmall(y.1) { return false }
        }
        let equal = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                guard let l = left.baseAddress, let r = right.baseAddress else { return count == 0 }
                return memcmp(l, r, count) == 0
            }
        }
        if let equal, let equal { return equal }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// `dictionary[key]` with names compared by code points: Swift's `String` keys match
    /// canonically equivalent spellings (`é` and `e` + U+0301), the reference's do not.
    static func exactValue<Value>(_ dictionary: [String: Value], _ key: String) -> Value? {
        guard let index = dictionary.index(forKey: key) else { return nil }
        let entry = dictionary[index]
        return stringsEqual(entry.key, key) ? entry.value : nil
    }

    /// Code-point order of two strings (UTF-8 byte order is code-point order).
    static func stringLess(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Loose equality (`==`): numbers (booleans included) compare as numbers and convert the
    /// other side; null equals only null (or a number equal to 0, as in the reference); a
    /// string against an array or object compares with its string form; arrays and objects
    /// never equal each other.
    static func looseEquals(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.string(let x), .string(let y)): return stringsEqual(x, y)
        case (.bool(let x), .bool(let y)): return x == y
        case (.array, .array), (.object, .object), (.array, .object), (.object, .array): return false
        default: break
        }
        if isNumeric(a) { return numbersEqual(number(a), number(b)) }
        if isNumeric(b) { return numbersEqual(number(a), number(b)) }
        if case .null = a { return false }
        if case .null = b { return false }
        switch (a, b) {
        case (.string(let s), .array), (.string(let s), .object): return stringsEqual(s, string(b))
        case (.array, .string(let s)), (.object, .string(let s)): return stringsEqual(string(a), s)
        default: return false
        }
    }

    /// Strict equality (`===`, `in` over an array) as the reference's language compares values:
    /// numbers and booleans numerically, strings by code points, arrays and objects by content.
    static func strictEquals(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.string(let x), .string(let y)): return stringsEqual(x, y)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { strictEquals($0, $1) }
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            for (name, value) in x {
                guard let other = y[name], strictEquals(value, other) else { return false }
            }
            return true
        default:
            if isNumeric(a), isNumeric(b) { return numbersEqual(number(a), number(b)) }
            return false
        }
    }

    /// The order comparisons: numbers when either side is one, else strings when either side
    /// is one, else numbers.
    static func compare(_ a: JSONValue, _ b: JSONValue, _ op: LogicOperator) -> Bool {
        if isNumeric(a) || isNumeric(b) {
            let x = number(a)
            let y = number(b)
            if x.isNaN || y.isNaN { return false }
            switch op {
            case .less: return numberLess(x, y)
            case .lessOrEqual: return numberLess(x, y) || numbersEqual(x, y)
            case .greater: return numberLess(y, x)
            default: return numberLess(y, x) || numbersEqual(x, y)
            }
        }
        if case .string = a {
        } else if case .string = b {
        } else {
            let x = number(a)
            let y = number(b)
            if x.isNaN || y.isNaN { return false }
            switch op {
            case .less: return numberLess(x, y)
            case .lessOrEqual: return numberLess(x, y) || numbersEqual(x, y)
            case .greater: return numberLess(y, x)
            default: return numberLess(y, x) || numbersEqual(x, y)
            }
        }
        let x = string(a)
        let y = string(b)
        switch op {
        case .less: return stringLess(x, y)
        case .lessOrEqual: return !stringLess(y, x)
        case .greater: return stringLess(y, x)
        default: return !stringLess(x, y)
        }
    }
}
