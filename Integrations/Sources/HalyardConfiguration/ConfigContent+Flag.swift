public import Configuration
import Foundation
public import Halyard

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ConfigContent {
    /// A flag's value as `type` (docs/integrations.md, "Configuration"), or nil when the flag has
    /// no value (JSON `null`: a missing flag, a flag served without a value or with an error).
    ///
    /// - `string`: a JSON string; an object or array as its canonical JSON (``JSONValue/canonicalJSON``).
    /// - `int`: a JSON integer; `double`: any JSON number; `bool`: a JSON boolean.
    /// - `bytes`: a base64 string; the arrays: a JSON array of elements of that type (`byteChunkArray`:
    ///   base64 strings).
    ///
    /// - Throws: ``HalyardConfigError/typeMismatch(key:requested:actual:)`` for anything else.
    public init?(flag key: String, value: JSONValue, as type: ConfigType) throws(HalyardConfigError) {
        if case .null = value { return nil }
        let mismatch = HalyardConfigError.typeMismatch(key: key, requested: type, actual: value.typeName)
        func elements<T>(_ convert: (JSONValue) -> T?) throws(HalyardConfigError) -> [T] {
            guard case .array(let items) = value else { throw mismatch }
            var result: [T] = []
            result.reserveCapacity(items.count)
            for item in items {
                guard let converted = convert(item) else { throw mismatch }
                result.append(converted)
            }
            return result
        }
        switch type {
        case .string:
            switch value {
            case .string(let text): self = .string(text)
            case .object, .array: self = .string(value.canonicalJSON)
            default: throw mismatch
            }
        case .int:
            guard case .int(let number) = value, let int = Int(exactly: number) else { throw mismatch }
            self = .int(int)
        case .double:
            guard let number = Self.number(value) else { throw mismatch }
            self = .double(number)
        case .bool:
            guard case .bool(let flag) = value else { throw mismatch }
            self = .bool(flag)
        case .bytes:
            guard let bytes = Self.decodedBytes(value) else { throw mismatch }
            self = .bytes(bytes)
        case .stringArray:
            self = .stringArray(try elements { if case .string(let text) = $0 { text } else { nil } })
        case .intArray:
            self = .intArray(try elements { if case .int(let number) = $0 { Int(exactly: number) } else { nil } })
        case .doubleArray:
            self = .doubleArray(try elements(Self.number))
        case .boolArray:
            self = .boolArray(try elements { if case .bool(let flag) = $0 { flag } else { nil } })
        case .byteChunkArray:
            self = .byteChunkArray(try elements(Self.decodedBytes))
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .double(let number): number
        case .int(let number): Double(number)
        default: nil
        }
    }

    private static func decodedBytes(_ value: JSONValue) -> [UInt8]? {
        guard case .string(let text) = value, let data = Data(base64Encoded: text) else { return nil }
        return [UInt8](data)
    }
}
