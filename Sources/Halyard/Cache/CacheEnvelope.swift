public import Foundation

/// One cache entry as it is stored (docs/cache.md, "Format"): the served flags of one context
/// slot, with what is needed to decide whether they may be served, and nothing else (no rules,
/// no attributes, no raw targeting key).
///
/// The bytes are a header line and a payload:
///
/// ```
/// {"checksum":"<sha-1 of the payload, 40 hex>","format":"halyard-cache","length":<payload bytes>,"version":1}\n
/// {"etag":…,"fingerprint":"…","flags":[…],"kind":"user","targetingKeyHash":"…","writtenAt":<ms>}
/// ```
///
/// Both are parsed with the package's own strict JSON parser; a wrong format, version, length
/// or checksum, or a payload that is not exactly the expected shape, is a typed
/// ``CacheEnvelopeError``. (SPI for the `FuzzCache` harness; not API.)
@_spi(Fuzzing) public struct CacheEnvelope: Sendable, Hashable {
    /// The format version this build writes and reads.
    public static let version = 1
    /// The `format` member of the header.
    public static let format = "halyard-cache"

    /// The fingerprint of the fitted context the flags were served for (40 lowercase hex).
    public var fingerprint: String
    /// The context kind.
    public var kind: String
    /// A salted SHA-1 of the targeting key (or, for an anonymous context, of the install id).
    public var targetingKeyHash: String
    /// The ETag the control plane sent with the flags.
    public var etag: String?
    /// When the entry was written (the control plane's last confirmation), milliseconds since 1970.
    public var writtenAt: Int64
    /// The served flags, as the control plane served them (original reasons), unique keys.
    public var flags: [ServedFlag]

    /// Creates an envelope.
    public init(
        fingerprint: String, kind: String, targetingKeyHash: String, etag: String?, writtenAt: Int64,
        flags: [ServedFlag]
    ) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.targetingKeyHash = targetingKeyHash
        self.etag = etag
        self.writtenAt = writtenAt
        self.flags = flags
    }

    /// When the entry was written.
    public var writtenDate: Date { Date(timeIntervalSince1970: Double(writtenAt) / 1000) }
}

/// Why stored bytes are not a usable cache entry. None of them is ever served.
@_spi(Fuzzing) public enum CacheEnvelopeError: Error, Sendable, Hashable {
    /// More bytes than the store's size limit.
    case tooLarge(limit: Int)
    /// No header line, or a header that is not the expected JSON object.
    case badHeader
    /// A header of another format or version.
    case unsupportedVersion
    /// The payload's length or SHA-1 does not match the header (truncated or corrupted).
    case checksumMismatch
    /// The payload is not the expected shape (what is wrong, for the log).
    case badPayload(String)
}

@_spi(Fuzzing) extension CacheEnvelope {
    /// The stored bytes of this envelope.
    public func encoded() -> Data {
        var payload: [String: JSONValue] = [
            "fingerprint": .string(fingerprint),
            "kind": .string(kind),
            "targetingKeyHash": .string(targetingKeyHash),
            "writtenAt": .int(writtenAt),
            "flags": .array(flags.map(Self.encode)),
        ]
        if let etag { payload["etag"] = .string(etag) }
        let body = Data(JSONValue.object(payload).jsonString.utf8)
        let header: JSONValue = .object([
            "format": .string(Self.format),
            "version": .int(Int64(Self.version)),
            "length": .int(Int64(body.count)),
            "checksum": .string(SHA1.hexDigest(body)),
        ])
        var data = Data(header.jsonString.utf8)
        data.append(0x0A)
        data.append(body)
        return data
    }

    static func encode(_ flag: ServedFlag) -> JSONValue {
        var m: [String: JSONValue] = ["key": .string(flag.key), "reason": .string(flag.reason.rawValue)]
        if let value = flag.value { m["value"] = value }
        if let variant = flag.variant { m["variant"] = .string(variant) }
        if let code = flag.errorCode { m["errorCode"] = .string(code.rawValue) }
        if let message = flag.errorMessage { m["errorMessage"] = .string(message) }
        if !flag.metadata.isEmpty { m["metadata"] = flag.metadata.jsonObject }
        return .object(m)
    }

    /// Decodes stored bytes (at most `limit` of them).
    public static func decode(_ data: Data, limit: Int) throws(CacheEnvelopeError) -> CacheEnvelope {
        guard data.count <= limit else { throw .tooLarge(limit: limit) }
        guard let newline = data.firstIndex(of: 0x0A) else { throw .badHeader }
        let headerBytes = data[data.startIndex..<newline]
        let body = data[data.index(after: newline)...]
        let header: JSONValue
        do {
            header = try JSONValue(
                parsing: Data(headerBytes),
                limits: JSONParsingLimits(maxInputBytes: 512, maxDepth: 2, maxObjectMembers: 8))
        } catch {
            throw .badHeader
        }
        guard case .object(let h) = header, case .string(let format)? = h["format"] else { throw .badHeader }
        guard format == Self.format, h["version"] == .int(Int64(Self.version)) else { throw .unsupportedVersion }
        guard h.count == 4, case .int(let length)? = h["length"], case .string(let checksum)? = h["checksum"] else {
            throw .badHeader
        }
        guard length == Int64(body.count), SHA1.hexDigest(body) == checksum else { throw .checksumMismatch }
        var limits = JSONParsingLimits.ofrepResponse
        limits.maxInputBytes = max(limit, 0)
        let payload: JSONValue
        do {
            payload = try JSONValue(parsing: Data(body), limits: limits)
        } catch {
            throw .badPayload("not JSON")
        }
        return try Self.envelope(payload)
    }

    private static func envelope(_ payload: JSONValue) throws(CacheEnvelopeError) -> CacheEnvelope {
        guard case .object(let p) = payload else { throw .badPayload("not an object") }
        let known: Set<String> = ["etag", "fingerprint", "flags", "kind", "targetingKeyHash", "writtenAt"]
        guard Set(p.keys).isSubset(of: known) else { throw .badPayload("unknown member") }
        guard case .string(let fingerprint)? = p["fingerprint"], isHex40(fingerprint) else {
            throw .badPayload("fingerprint")
        }
        guard case .string(let hash)? = p["targetingKeyHash"], isHex40(hash) else {
            throw .badPayload("targetingKeyHash")
        }
        guard case .string(let kind)? = p["kind"], EvaluationContext.isValidKind(kind) else {
            throw .badPayload("kind")
        }
        guard case .int(let writtenAt)? = p["writtenAt"], writtenAt >= 0 else { throw .badPayload("writtenAt") }
        var etag: String?
        switch p["etag"] {
        case nil: etag = nil
        case .string(let e)?: etag = e
        default: throw .badPayload("etag")
        }
        guard case .array(let items)? = p["flags"] else { throw .badPayload("flags") }
        var flags: [ServedFlag] = []
        flags.reserveCapacity(items.count)
        var keys = Set<String>()
        for item in items {
            let flag = try Self.flag(item)
            guard keys.insert(flag.key).inserted else { throw .badPayload("duplicate key") }
            flags.append(flag)
        }
        return CacheEnvelope(
            fingerprint: fingerprint, kind: kind, targetingKeyHash: hash, etag: etag, writtenAt: writtenAt, flags: flags
        )
    }

    private static func flag(_ item: JSONValue) throws(CacheEnvelopeError) -> ServedFlag {
        guard case .object(let m) = item else { throw .badPayload("flag not an object") }
        let known: Set<String> = ["errorCode", "errorMessage", "key", "metadata", "reason", "value", "variant"]
        guard Set(m.keys).isSubset(of: known) else { throw .badPayload("unknown flag member") }
        guard case .string(let key)? = m["key"], !key.isEmpty else { throw .badPayload("flag key") }
        guard case .string(let reason)? = m["reason"] else { throw .badPayload("flag reason") }
        let value = m["value"]
        if value == .null { throw .badPayload("null value") }
        var variant: String?
        if let v = m["variant"] {
            guard case .string(let s) = v else { throw .badPayload("variant") }
            variant = s
        }
        var errorCode: FlagErrorCode?
        if let c = m["errorCode"] {
            guard case .string(let s) = c, let code = FlagErrorCode(rawValue: s) else { throw .badPayload("errorCode") }
            errorCode = code
        }
        var errorMessage: String?
        if let e = m["errorMessage"] {
            guard case .string(let s) = e, errorCode != nil else { throw .badPayload("errorMessage") }
            errorMessage = s
        }
        if errorCode != nil && value != nil { throw .badPayload("error with a value") }
        var metadata: FlagMetadata = [:]
        if let meta = m["metadata"] {
            guard case .object(let members) = meta, !members.isEmpty else { throw .badPayload("metadata") }
            for (name, v) in members {
                switch v {
                case .bool(let b): metadata[name] = .bool(b)
                case .string(let s): metadata[name] = .string(s)
                case .double(let d): metadata[name] = .number(d)
                case .int(let i): metadata[name] = .int(i)
                default: throw .badPayload("metadata value")
                }
            }
        }
        return ServedFlag(
            key: key, value: value, variant: variant, reason: EvaluationReason(rawValue: reason), errorCode: errorCode,
            errorMessage: errorMessage, metadata: metadata)
    }

    static func isHex40(_ s: String) -> Bool {
        s.utf8.count == 40 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
