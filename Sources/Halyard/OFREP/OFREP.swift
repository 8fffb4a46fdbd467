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
