/// Per-call limits for the strict JSON parser.
///
/// Every limit is checked while parsing, so a document that breaks one is rejected as soon as
/// the offending byte is reached, in time proportional to the bytes read so far.
///
/// Presets:
/// - ``default``: the generic parser — 1 MiB of input, depth 64, 10,000 members per object.
/// - ``context``: evaluation contexts (docs/context.md) — 64 KiB, depth 32, 1,000 members per object.
/// - ``ofrepResponse``: OFREP bulk responses and cache files — 8 MiB, depth 64,
///   100,000 members per object.
///
/// ```swift
/// let body = try JSONValue(parsing: data, limits: .ofrepResponse)
/// ```
public struct JSONParsingLimits: Sendable, Hashable {
    /// The largest accepted input, in bytes (UTF-8).
    public var maxInputBytes: Int
    /// The deepest accepted nesting of arrays and objects. The outermost container is at
    /// depth 1, so `maxDepth: 1` accepts `[1]` but not `[[1]]`. Values above
    /// ``maxSupportedDepth`` are treated as ``maxSupportedDepth`` (the parser is recursive and
    /// must not exhaust a thread's stack).
    public var maxDepth: Int
    /// The largest accepted number of members in any one object (arrays are bounded by
    /// ``maxInputBytes`` only).
    public var maxObjectMembers: Int

    /// The hard ceiling applied to ``maxDepth`` whatever the caller asks for (128). The parser is
    /// recursive; 128 levels fit in a 512 KiB thread stack even in a debug build.
    public static let maxSupportedDepth = 128

    /// Creates limits.
    /// - Parameters:
    ///   - maxInputBytes: the largest accepted input in bytes.
    ///   - maxDepth: the deepest accepted nesting (outermost container = 1), at most
    ///     ``maxSupportedDepth``.
    ///   - maxObjectMembers: the largest number of members of any one object.
    public init(maxInputBytes: Int, maxDepth: Int, maxObjectMembers: Int) {
        self.maxInputBytes = maxInputBytes
        self.maxDepth = maxDepth
        self.maxObjectMembers = maxObjectMembers
    }

    /// Generic defaults: 1 MiB input, depth 64, 10,000 members per object.
    public static let `default` = JSONParsingLimits(
        maxInputBytes: 1 << 20, maxDepth: 64, maxObjectMembers: 10_000)

    /// Evaluation-context defaults (docs/context.md): 64 KiB input, depth 32, 1,000 members per object
    /// (the top-level object's members include `targetingKey` and `kind`).
    public static let context = JSONParsingLimits(
        maxInputBytes: 64 << 10, maxDepth: 32, maxObjectMembers: 1_000)

    /// OFREP response and cache-file defaults (docs/protocol.md): 8 MiB input, depth 64,
    /// 100,000 members per object.
    public static let ofrepResponse = JSONParsingLimits(
        maxInputBytes: 8 << 20, maxDepth: 64, maxObjectMembers: 100_000)
}
