public import Foundation

/// What a definitions source has done so far (docs/definitions.md, "Sources").
public struct DefinitionsSourceStats: Sendable, Hashable {
    /// Documents loaded and published (the first one included).
    public var loads = 0
    /// Documents read but refused (malformed or schema-invalid); the previous definitions stayed.
    public var refusals = 0
    /// Checks that found nothing new: a 304, or a file whose content did not change.
    public var notModified = 0
    /// Checks that failed: an unreadable file, a status other than 200 and 304, a transport error.
    public var failures = 0
    /// The error of the last check that did not load (refused or failed); nil once one loads.
    public var lastError: DefinitionsSourceError?
    /// When the published definitions were loaded (wall clock); nil before the first load.
    public var lastLoad: Date?
    /// The number of flags in the published definitions.
    public var flagCount = 0

    /// No activity yet.
    public init() {}
}
