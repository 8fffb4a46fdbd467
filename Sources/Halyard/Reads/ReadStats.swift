/// Reads that did not succeed, by outcome. Successful reads are not counted (a shared counter
/// would cost an atomic read-modify-write on every read).
public struct ReadStats: Sendable, Hashable {
    /// Reads before any values existed (`PROVIDER_NOT_READY` / `PROVIDER_FATAL`).
    public var notReady = 0
    /// Reads of keys absent from the snapshot.
    public var flagNotFound = 0
    /// Reads of the wrong type.
    public var typeMismatch = 0
    /// Reads of flags the control plane served with an error code.
    public var servedError = 0

    /// Creates counters.
    public init(notReady: Int = 0, flagNotFound: Int = 0, typeMismatch: Int = 0, servedError: Int = 0) {
        self.notReady = notReady
        self.flagNotFound = flagNotFound
        self.typeMismatch = typeMismatch
        self.servedError = servedError
    }
}
