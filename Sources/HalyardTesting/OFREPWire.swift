package import Foundation
package import Halyard

/// Wire helpers shared with `HalyardTesting` (not API).
package enum OFREPWire {
    /// Encodes served flags as an OFREP bulk response body.
    package static func encodeResponse(_ flags: [ServedFlag]) -> Data {
        var items: [JSONValue] = []
        items.reserveCapacity(flags.count)
        for flag in flags {
            var item: [String: JSONValue] = ["key": .string(flag.key)]
            if let code = flag.errorCode {
                item["errorCode"] = .string(code.rawValue)
                if let message = flag.errorMessage { item["errorDetails"] = .string(message) }
            } else {
                if let value = flag.value { item["value"] = value }
                item["reason"] = .string(flag.reason.rawValue)
                if let variant = flag.variant { item["variant"] = .string(variant) }
            }
            if !flag.metadata.isEmpty { item["metadata"] = flag.metadata.jsonObject }
            items.append(.object(item))
        }
        return JSONValue.object(["flags": .array(items)]).canonicalJSONData
    }

    /// Inflates a gzip body, nil when it is invalid or inflates beyond `limit` bytes.
    package static func gunzip(_ body: Data, limit: Int = 16 << 20) -> Data? {
        try? Gzip.inflate(body, limit: limit)
    }

    /// Parses a JSON body (a request's `{"context": ...}`), nil when it is not JSON.
    package static func parse(_ body: Data) -> JSONValue? {
        try? JSONValue(parsing: body, limits: .ofrepResponse)
    }
}
