public import Configuration
import Foundation
import Halyard

/// A ``HalyardConfigProvider``'s state at one moment: every value comes from the flag values
/// served when the snapshot was taken (a client's: one pinned snapshot; a service's: for each
/// context, the values held for it when the snapshot first read it), however they change
/// meanwhile.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public struct HalyardConfigSnapshot: ConfigSnapshot {
    /// Where the values come from.
    enum Source: Sendable {
        /// A client's values, pinned.
        case pinned(PinnedFlags)
        /// A service's values, pinned per context on first use.
        case service(FlagService, PinnedContexts)
    }

    /// The provider's name (``HalyardConfigProvider/providerName``).
    public let providerName: String
    let source: Source

    /// The value of the flag named by `key`'s components joined with dots, as `type` (see
    /// ``HalyardConfigProvider``); recorded as an exposure, as any flag read.
    ///
    /// - Throws: ``HalyardConfigError/typeMismatch(key:requested:actual:)``.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        switch source {
        case .pinned(let pinned):
            return try HalyardConfigProvider.lookup(key, type, in: pinned)
        case .service(let service, let contexts):
            return try HalyardConfigProvider.lookup(key, type, in: contexts.flags(for: key.context, in: service))
        }
    }
}

/// The views a service snapshot has pinned, one per context, taken with
/// ``FlagService/flagsIfCached(for:)`` (never waits) on the context's first read.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
final class PinnedContexts: @unchecked Sendable {
    private let lock = NSLock()
    private var views: [[String: ConfigContextValue]: ContextFlags] = [:]
    private let makeContext: @Sendable ([String: ConfigContextValue]) -> EvaluationContext

    init(makeContext: @escaping @Sendable ([String: ConfigContextValue]) -> EvaluationContext) {
        self.makeContext = makeContext
    }

    func flags(for context: [String: ConfigContextValue], in service: FlagService) -> ContextFlags {
        lock.lock()
        defer { lock.unlock() }
        if let view = views[context] { return view }
        let view = service.flagsIfCached(for: makeContext(context))
        views[context] = view
        return view
    }
}
