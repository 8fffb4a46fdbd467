import Foundation

/// One context's served flags as the fleet's shared cache holds them (SPEC §15, docs/fleet.md,
/// "Entries"): the §8 envelope, the flag-set version it was fetched for, and a MAC that only a
/// holder of the SDK key can make.
///
/// The value's bytes:
///
/// ```
/// halyard-shared 2 <stamp> <0|1> <HMAC-SHA1, 40 hex>\n
/// {"flagConfigEtag":…,"flagConfigLastModified":…}\n      (members only when known)
/// <the §8 envelope: header line and payload, CacheEnvelope.encoded()>
/// ```
///
/// `stamp` is ``confirmedAt`` (decimal) and the digit is 1 when the entry was fetched for a
/// named flag-set version: the ordered write reads them (`SharedTier.orderedSetScript`) without
/// decoding the rest; a reader checks they agree with the envelope and the version line.
/// The MAC covers the namespace, the entry id and everything after the first line, so an
/// entry copied from another namespace or context, or written without the SDK key, is refused.
/// Nothing in it names the context: the envelope's `fingerprint` and `targetingKeyHash` both
/// hold the entry id (a MAC of the fingerprint) and its `kind` is `service`.
struct SharedEntry: Sendable, Hashable {
    /// The served flags.
    var flags: [ServedFlag]
    /// The control plane's ETag for them.
    var etag: String?
    /// When the control plane last confirmed them (milliseconds since 1970).
    var confirmedAt: Int64
    /// The flag-set version of the event whose fetch wrote them, when known.
    var flagConfig: FlagConfigVersion?
    /// How much earlier than its entry's time the values count as due on this pod (never
    /// written: a per-pod draw, so the fleet's pods do not refresh a context together).
    var dueEarlierMilliseconds: Int64 = 0

    static let magic = "halyard-shared 2 "
    /// The envelope's `kind`: no context's own kind is written.
    static let kind = "service"
}

/// Why bytes read from the shared cache are not a usable entry. None is ever served.
enum SharedEntryError: Error, Sendable, Hashable {
    /// More bytes than the entry limit.
    case tooLarge
    /// Not the entry format (another writer, truncated bytes).
    case badFormat
    /// The MAC does not verify: written by another namespace, without the SDK key, or altered.
    case unauthenticated
    /// The MAC verifies but the envelope does not decode, or names another entry.
    case badEnvelope
}

extension SharedEntry {
    /// The value's bytes for the entry `id` of `namespace`, MAC'd with `secret`.
    func encoded(namespace: String, id: String, secret: [UInt8]) -> [UInt8] {
        var meta: [String: JSONValue] = [:]
        if let etag = flagConfig?.etag { meta["flagConfigEtag"] = .string(etag) }
        if let modified = flagConfig?.lastModified { meta["flagConfigLastModified"] = .string(modified) }
        var body = Array(JSONValue.object(meta).jsonString.utf8)
        body.append(0x0A)
        let envelope = CacheEnvelope(
            fingerprint: id, kind: Self.kind, targetingKeyHash: id, etag: etag, writtenAt: confirmedAt, flags: flags)
        body.append(contentsOf: envelope.encoded())
        let mac = Self.mac(namespace: namespace, id: id, body: body, secret: secret)
        var bytes = Array((Self.magic + "\(confirmedAt) \(flagConfig == nil ? 0 : 1) " + mac).utf8)
        bytes.append(0x0A)
        bytes.append(contentsOf: body)
        return bytes
    }

    /// Decodes and authenticates the value of entry `id` (at most `limit` bytes).
    static func decode(
        _ bytes: [UInt8], namespace: String, id: String, secret: [UInt8], limit: Int
    ) throws(SharedEntryError) -> SharedEntry {
        guard bytes.count <= limit else { throw .tooLarge }
        let magic = Array(Self.magic.utf8)
        // `<stamp> <0|1> <MAC>\n` after the magic: at most 19 + 1 + 1 + 1 + 40 + 1 bytes.
        guard bytes.starts(with: magic),
            let end = bytes[magic.count...].prefix(64).firstIndex(of: 0x0A)
        else { throw .badFormat }
        let fields = bytes[magic.count..<end].split(separator: 0x20, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0].count <= 19, fields[0].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let stamp = Int64(String(decoding: fields[0], as: UTF8.self)), fields[1].count == 1,
            fields[1].first == 0x30 || fields[1].first == 0x31, fields[2].count == 40
        else { throw .badFormat }
        let versioned = fields[1].first == 0x31
        let macBytes = fields[2]
        let body = Array(bytes[(end + 1)...])
        let expected = Array(Self.mac(namespace: namespace, id: id, body: body, secret: secret).utf8)
        // Compared in full whatever differs first (no early exit).
        var difference: UInt8 = 0
        for (a, b) in zip(macBytes, expected) { difference |= a ^ b }
        guard difference == 0 else { throw .unauthenticated }
        guard let newline = body.firstIndex(of: 0x0A) else { throw .badEnvelope }
        let meta: JSONValue
        do {
            meta = try JSONValue(
                parsing: Data(body[..<newline]),
                limits: JSONParsingLimits(maxInputBytes: 4096, maxDepth: 1, maxObjectMembers: 2))
        } catch {
            throw .badEnvelope
        }
        guard case .object(let members) = meta else { throw .badEnvelope }
        var etag: String?
        var modified: String?
        for (name, value) in members {
            guard case .string(let s) = value else { throw .badEnvelope }
            switch name {
            case "flagConfigEtag": etag = s
            case "flagConfigLastModified": modified = s
            default: throw .badEnvelope
            }
        }
        let envelope: CacheEnvelope
        do {
            envelope = try CacheEnvelope.decode(Data(body[(newline + 1)...]), limit: limit)
        } catch {
            throw .badEnvelope
        }
        guard envelope.fingerprint == id, envelope.targetingKeyHash == id, envelope.kind == Self.kind else {
            throw .badEnvelope
        }
        let flagConfig = FlagConfigVersion(etag: etag, lastModified: modified)
        // The header's stamp and version digit (not MAC'd: what the ordered write reads) agree
        // with the authenticated body.
        guard stamp == envelope.writtenAt, versioned == (flagConfig != nil) else { throw .badFormat }
        return SharedEntry(
            flags: envelope.flags, etag: envelope.etag, confirmedAt: envelope.writtenAt, flagConfig: flagConfig)
    }

    /// HMAC-SHA1 (RFC 2104) of namespace, id and body, 40 lowercase hex.
    static func mac(namespace: String, id: String, body: [UInt8], secret: [UInt8]) -> String {
        var message = Array("\(namespace)\n\(id)\n".utf8)
        message.append(contentsOf: body)
        return SHA1.hex(hmac(secret, message))
    }

    /// HMAC-SHA1 of `message` under `key` (64-byte blocks).
    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA1.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA1.hash(block.map { $0 ^ 0x36 } + message)
        return SHA1.hash(block.map { $0 ^ 0x5C } + inner)
    }
}
