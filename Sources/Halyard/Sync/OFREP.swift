import Foundation

/// Why an OFREP response body could not be used. Any of these is treated like a 5xx: the body
/// is never applied.
enum OFREPDecodingError: Error, Sendable, Hashable {
    case tooLarge(limit: Int)
    case notJSON
    case notAnObject
    case missingFlags
}

/// A decoded OFREP bulk evaluation response (`{"flags": [...], "metadata": {...}}`).
struct OFREPResponse: Sendable, Hashable {
    /// The served flags, one per key (a later duplicate replaces an earlier one).
    var flags: [ServedFlag]
    /// The response-level metadata (bool, string and number members only).
    var metadata: FlagMetadata
    /// Items that had no string `key` and were skipped.
    var skippedItems: Int

    /// Decodes a response body.
    ///
    /// - An item with a non-null `errorCode` is a failure whatever else it has: no value, reason
    ///   `ERROR`, the code (unknown or non-string codes become `GENERAL`), `errorDetails` as message.
    /// - A success without `value` (or with `value: null`) is a code default: no value, the
    ///   server's reason or `DEFAULT`.
    /// - Any reason string is accepted and kept; a missing reason on an item with a value is `UNKNOWN`.
    ///
    /// TODO(ctx): switch the parsing to `JSONValue(parsing:)` once main has the project's own JSON
    /// parser; this temporary version uses `JSONSerialization` and recovers the integer/float
    /// distinction from `NSNumber.objCType`.
    static func decode(_ body: Data, limit: Int) throws(OFREPDecodingError) -> OFREPResponse {
        guard body.count <= limit else { throw .tooLarge(limit: limit) }
        let root: JSONValue
        do {
            root = try FoundationJSON.parse(body)
        } catch {
            throw .notJSON
        }
        guard case .object(let members) = root else { throw .notAnObject }
        guard case .array(let items)? = members["flags"] else { throw .missingFlags }
        var flags: [ServedFlag] = []
        flags.reserveCapacity(items.count)
        var index: [String: Int] = [:]
        var skipped = 0
        for item in items {
            guard let flag = servedFlag(item) else {
                skipped += 1
                continue
            }
            if let existing = index[flag.key] {
                flags[existing] = flag
            } else {
                index[flag.key] = flags.count
                flags.append(flag)
            }
        }
        return OFREPResponse(flags: flags, metadata: metadata(members["metadata"]), skippedItems: skipped)
    }

    static func servedFlag(_ item: JSONValue) -> ServedFlag? {
        guard case .object(let m) = item, case .string(let key)? = m["key"] else { return nil }
        let meta = metadata(m["metadata"])
        var variant: String?
        if case .string(let v)? = m["variant"] { variant = v }
        if let code = m["errorCode"], code != .null {
            let errorCode: FlagErrorCode
            if case .string(let s) = code { errorCode = FlagErrorCode(wireValue: s) } else { errorCode = .general }
            var details: String?
            if case .string(let d)? = m["errorDetails"] { details = d }
            return ServedFlag(
                key: key, value: nil, variant: nil, reason: .error, errorCode: errorCode, errorMessage: details,
                metadata: meta)
        }
        var value: JSONValue? = m["value"]
        if value == .null { value = nil }
        let reason: EvaluationReason
        if case .string(let r)? = m["reason"] {
            reason = EvaluationReason(rawValue: r)
        } else {
            reason = value == nil ? .defaultValue : .unknown
        }
        return ServedFlag(key: key, value: value, variant: variant, reason: reason, metadata: meta)
    }

    static func metadata(_ value: JSONValue?) -> FlagMetadata {
        guard case .object(let members)? = value else { return [:] }
        var result: FlagMetadata = [:]
        for (name, v) in members {
            switch v {
            case .bool(let b): result[name] = .bool(b)
            case .string(let s): result[name] = .string(s)
            case .int(let i): result[name] = .number(Double(i))
            case .double(let d): result[name] = .number(d)
            case .null, .array, .object: continue
            }
        }
        return result
    }
}

/// Temporary JSON bridge over `JSONSerialization`.
///
/// TODO(ctx): delete once `JSONValue(parsing:)` and the canonical JSON writer land on main.
enum FoundationJSON {
    struct Invalid: Error {}

    static func parse(_ data: Data) throws -> JSONValue {
        let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        return try convert(object, depth: 0)
    }

    private static func convert(_ object: Any, depth: Int) throws -> JSONValue {
        guard depth <= 64 else { throw Invalid() }
        switch object {
        case is NSNull: return .null
        case let s as String: return .string(s)
        case let n as NSNumber:
            let type = String(cString: n.objCType)
            if type == "c" || type == "B" { return .bool(n.boolValue) }
            if type == "d" || type == "f" {
                let d = n.doubleValue
                guard d.isFinite else { throw Invalid() }
                return .double(d)
            }
            if type == "Q" {
                let u = n.uint64Value
                if u <= UInt64(Int64.max) { return .int(Int64(u)) }
                return .double(n.doubleValue)
            }
            return .int(n.int64Value)
        case let a as [Any]: return .array(try a.map { try convert($0, depth: depth + 1) })
        case let o as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (k, v) in o { members[k] = try convert(v, depth: depth + 1) }
            return .object(members)
        default: throw Invalid()
        }
    }

    /// Canonical-ish JSON text (sorted members, no whitespace) for request bodies.
    static func write(_ value: JSONValue) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d == d.rounded(), abs(d) < 1e21 { out += String(Int64(d)) } else { out += "\(d)" }
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, key) in members.keys.sorted(by: { $0.utf16.lexicographicallyPrecedes($1.utf16) }).enumerated() {
                if i > 0 { out += "," }
                writeString(key, into: &out)
                out += ":"
                write(members[key]!, into: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

/// Builds the OFREP bulk evaluation request (SPEC §5).
struct OFREPRequestBuilder: Sendable {
    /// The SDK name sent in `User-Agent`.
    static let sdkName = "Halyard"
    /// The SDK version sent in `User-Agent`.
    static let sdkVersion = "0.1.0"
    /// The header carrying the app id.
    static let appIDHeader = "X-Halyard-App-Id"
    /// The header carrying the install id.
    static let installIDHeader = "X-Halyard-Install-Id"
    /// The endpoint path below the base URL.
    static let evaluatePath = "ofrep/v1/evaluate/flags"

    var baseURL: URL
    var key: String
    var appID: String?
    var installID: String
    var timeout: Duration
    var maxResponseBytes: Int

    /// `{baseURL}/ofrep/v1/evaluate/flags`, keeping any path prefix of the base URL.
    var endpoint: URL {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + "/" + Self.evaluatePath) ?? baseURL.appendingPathComponent(Self.evaluatePath)
    }

    static var userAgent: String {
        #if os(Linux)
        let platform = "Linux"
        #elseif os(macOS)
        let platform = "macOS"
        #elseif os(iOS)
        let platform = "iOS"
        #else
        let platform = "Apple"
        #endif
        return "\(sdkName)-Swift/\(sdkVersion) (\(platform))"
    }

    /// The request for a fitted context's canonical JSON, with `If-None-Match` when given.
    func request(contextJSON: String, ifNoneMatch: String?) -> TransportRequest {
        var headers: [String: String] = [
            "Authorization": "Bearer \(key)",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            "User-Agent": Self.userAgent,
            Self.installIDHeader: installID,
        ]
        if let appID { headers[Self.appIDHeader] = appID }
        if let ifNoneMatch { headers["If-None-Match"] = ifNoneMatch }
        return TransportRequest(
            method: "POST",
            url: endpoint,
            headers: headers,
            body: Data(("{\"context\":" + contextJSON + "}").utf8),
            timeout: timeout,
            maxResponseBytes: maxResponseBytes
        )
    }
}

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
            if !flag.metadata.isEmpty {
                var meta: [String: JSONValue] = [:]
                for (name, value) in flag.metadata {
                    switch value {
                    case .bool(let b): meta[name] = .bool(b)
                    case .string(let s): meta[name] = .string(s)
                    case .number(let d): meta[name] = .double(d)
                    }
                }
                item["metadata"] = .object(meta)
            }
            items.append(.object(item))
        }
        return Data(FoundationJSON.write(.object(["flags": .array(items)])).utf8)
    }

    /// Parses a JSON body (a request's `{"context": ...}`), nil when it is not JSON.
    package static func parse(_ body: Data) -> JSONValue? {
        try? FoundationJSON.parse(body)
    }
}
