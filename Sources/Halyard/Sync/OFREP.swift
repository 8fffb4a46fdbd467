public import Foundation

/// Why an OFREP response body could not be used. Any of these is treated like a 5xx: the body
/// is never applied. (SPI for the fuzz package; not API.)
@_spi(Fuzzing) public enum OFREPDecodingError: Error, Sendable, Hashable {
    case tooLarge(limit: Int)
    case notJSON
    case notAnObject
    case missingFlags
}

/// A decoded OFREP bulk evaluation response (`{"flags": [...], "metadata": {...}}`).
///
/// ``decode(_:limit:)`` is the one place that turns OFREP bytes into served flags, and the only
/// place keys are de-duplicated: everything downstream (the snapshot builder, the table) relies
/// on the keys being unique. (SPI for the `FuzzOFREP` harness; not API.)
@_spi(Fuzzing) public struct OFREPResponse: Sendable, Hashable {
    /// The served flags, one per key (a later duplicate replaces an earlier one).
    public var flags: [ServedFlag]
    /// The response-level metadata (bool, string and number members only).
    public var metadata: FlagMetadata
    /// Items that had no string `key`, or an empty one, and were skipped.
    public var skippedItems: Int
    /// The change streams the response advertises (`eventStreams`, ADR-0008), resolved and
    /// checked; empty when it advertises none (see `OFREPEventStream.streams(from:controlPlane:)`).
    package var eventStreams: [OFREPEventStream] = []

    /// Decodes a response body.
    ///
    /// - An item with a non-null `errorCode` is a failure whatever else it has: no value, reason
    ///   `ERROR`, the code (unknown or non-string codes become `GENERAL`), `errorDetails` as message.
    /// - A success without `value` (or with `value: null`) is a code default: no value, the
    ///   server's reason or `DEFAULT`.
    /// - Any reason string is accepted and kept; a missing reason on an item with a value is `UNKNOWN`.
    ///
    /// Parsing is the project's strict RFC 8259 parser (integer/float distinction kept;
    /// duplicate member names, invalid UTF-8 and trailing data rejected), with
    /// ``JSONParsingLimits/ofrepResponse`` limits capped at `limit` bytes.
    ///
    /// `controlPlane` (the base URL) resolves `eventStreams` entries given as an `endpoint`
    /// without `origin`, and decides which streams are on the control plane's own origin; without
    /// it such entries are dropped and no stream counts as same-origin. An invalid
    /// `eventStreams` never makes the body unusable.
    public static func decode(_ body: Data, limit: Int, controlPlane: URL? = nil) throws(OFREPDecodingError)
        -> OFREPResponse
    {
        guard body.count <= limit else { throw .tooLarge(limit: limit) }
        var limits = JSONParsingLimits.ofrepResponse
        limits.maxInputBytes = max(limit, 0)
        let root: JSONValue
        do {
            root = try JSONValue(parsing: body, limits: limits)
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
        var response = OFREPResponse(flags: flags, metadata: metadata(members["metadata"]), skippedItems: skipped)
        response.eventStreams = OFREPEventStream.streams(from: members["eventStreams"], controlPlane: controlPlane)
        return response
    }

    static func servedFlag(_ item: JSONValue) -> ServedFlag? {
        // One rule with the cache envelope (docs/cache.md): a flag's key is a non-empty string.
        guard case .object(let m) = item, case .string(let key)? = m["key"], !key.isEmpty else { return nil }
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
            case .int(let i): result[name] = .int(i)
            case .double(let d): result[name] = .number(d)
            case .null, .array, .object: continue
            }
        }
        return result
    }
}

/// Builds the OFREP bulk evaluation request (docs/protocol.md).
struct OFREPRequestBuilder: Sendable {
    /// The endpoint path below the base URL.
    static let evaluatePath = "ofrep/v1/evaluate/flags"

    /// The credential and identity headers (shared with the exposure uploader).
    var identity: ClientIdentity
    var timeout: Duration
    var maxResponseBytes: Int

    /// `{baseURL}/ofrep/v1/evaluate/flags`, keeping any path prefix of the base URL.
    var endpoint: URL { identity.endpoint(Self.evaluatePath) }

    /// The request for a fitted context's canonical JSON, with `If-None-Match` when given,
    /// carrying `key` (*default* the identity's key now).
    func request(contextJSON: String, ifNoneMatch: String?, key: String? = nil) -> TransportRequest {
        var headers = identity.headers(key: key ?? identity.key)
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "application/json"
        headers["Accept-Encoding"] = "gzip"
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

extension RefreshMachine.Outcome {
    /// The status policy of docs/protocol.md applied to one response: 200 with a body that
    /// decodes → `updated` (with the decoded flags), 304, 400, 401/403, 429, other 2xx and
    /// unparseable or oversized bodies → transient (like a 5xx), anything else → transient with
    /// its status. `Retry-After` is parsed against `wallNow`; `controlPlane` (the base URL)
    /// resolves the advertised event streams (``OFREPResponse/decode(_:limit:controlPlane:)``).
    static func classify(_ response: TransportResponse, maxResponseBytes: Int, wallNow: Date, controlPlane: URL? = nil)
        -> (outcome: RefreshMachine.Outcome, decoded: OFREPResponse?)
    {
        let retryAfter = response.header("Retry-After").flatMap { RetryAfter.parse($0, now: wallNow) }
        switch response.status {
        case 200:
            do {
                let decoded = try OFREPResponse.decode(
                    response.body, limit: maxResponseBytes, controlPlane: controlPlane)
                return (.updated(etag: response.header("ETag")), decoded)
            } catch .tooLarge {
                return (.transient(.tooLarge, retryAfter: nil), nil)
            } catch {
                return (.transient(.invalidBody, retryAfter: nil), nil)
            }
        case 304: return (.notModified, nil)
        case 400: return (.badRequest, nil)
        case 401, 403: return (.unauthorized(status: response.status), nil)
        case 429: return (.rateLimited(retryAfter: retryAfter), nil)
        case 200..<300: return (.transient(.invalidBody, retryAfter: nil), nil)
        default: return (.transient(.status(response.status), retryAfter: retryAfter), nil)
        }
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
