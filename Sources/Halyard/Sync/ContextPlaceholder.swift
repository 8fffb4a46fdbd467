import Foundation

// TODO(ctx): DELETE THIS FILE when main has the `ctx` branch (EvaluationContext, FittedContext,
// SHA-1, JCS). It is a minimal stand-in with the same spellings the sync code uses
// (`EvaluationContext(targetingKey:kind:attributes:privateAttributes:)`, `fitted(limit:)`,
// `FittedContext.canonicalJSON/fingerprint/droppedAttributes`), so deleting it is the whole
// switch. Its fingerprint is NOT SHA-1 and its JSON is not exact JCS for doubles.

/// An evaluation context (placeholder until the context module lands; see SPEC §4).
public struct EvaluationContext: Sendable, Hashable {
    /// The targeting key (`""` for anonymous).
    public var targetingKey: String
    /// The kind (`user` by default).
    public var kind: String
    /// Attributes (top level names to JSON values).
    public var attributes: [String: JSONValue]
    /// Names of top-level attributes that never leave the process.
    public var privateAttributes: Set<String>

    /// Creates a context.
    public init(
        targetingKey: String, kind: String = "user", attributes: [String: JSONValue] = [:],
        privateAttributes: Set<String> = []
    ) {
        self.targetingKey = targetingKey
        self.kind = kind
        self.attributes = attributes
        self.privateAttributes = privateAttributes
    }

    /// An anonymous context.
    public static var anonymous: EvaluationContext { EvaluationContext(targetingKey: "") }

    /// Fits the context to `limit` UTF-16 code units (placeholder: no trimming, only validation).
    public func fitted(limit: Int = 4096) throws -> FittedContext {
        let kindOK =
            !kind.isEmpty && kind.utf8.count <= 64
            && kind.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
        guard kindOK, attributes["targetingKey"] == nil, attributes["kind"] == nil,
            attributes.values.allSatisfy(\.isFinite)
        else { throw PlaceholderContextError() }
        var members = attributes.filter { !privateAttributes.contains($0.key) }
        members["targetingKey"] = .string(targetingKey)
        members["kind"] = .string(kind)
        let json = FoundationJSON.write(.object(members))
        guard json.utf16.count <= limit else { throw PlaceholderContextError() }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in json.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        let fingerprint = String(repeating: "0", count: 40 - hex.count) + hex
        return FittedContext(canonicalJSON: json, fingerprint: fingerprint, droppedAttributes: [])
    }
}

/// A fitted context (placeholder).
public struct FittedContext: Sendable, Hashable {
    /// The canonical JSON of the wire form.
    public let canonicalJSON: String
    /// The fingerprint (placeholder: not SHA-1).
    public let fingerprint: String
    /// Dropped attribute names.
    public let droppedAttributes: [String]
}

/// Placeholder error for an invalid context.
struct PlaceholderContextError: Error {}
