public import Halyard

/// The service benchmarks' workload, one definition for `halyard-bench-service` and the
/// `halyard-warm-path` callgrind driver: a user's evaluation context (targeting key, kind
/// `user`, 10 attributes), the 64 flag keys served per context and the 4 routes of 10 flags a
/// request reads.
public enum ServiceWorkload {
    /// User `id`'s context.
    public static func context(_ id: Int) -> EvaluationContext {
        EvaluationContext(
            targetingKey: "user-\(id)",
            attributes: [
                "email": .string("user\(id)@example.com"), "plan": .string(id % 7 == 0 ? "enterprise" : "free"),
                "country": .string(["de", "fr", "us", "jp", "br"][id % 5]), "beta": .bool(id % 11 == 0),
                "age": .int(Int64(18 + id % 60)), "sessions": .int(Int64(id % 1000)),
                "device": .string(id % 2 == 0 ? "ios" : "android"), "appVersion": .string("5.\(id % 20).0"),
                "tenant": .string("tenant-\(id % 500)"), "score": .double(Double(id % 100) / 10),
            ])
    }

    /// The 64 flags served per context: 40 Booleans, 10 integers, 10 short strings, 4 small
    /// objects (in this order).
    public static let flagKeys: [String] = (0..<64).map { "service.feature-\($0)" }

    /// The 10 flags a request reads: one of 4 routes, each with its own 10 of the 64 flags.
    public static let routes: [[String]] = (0..<4).map { route in (0..<10).map { flagKeys[route * 10 + $0] } }
}
