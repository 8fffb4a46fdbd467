/// Why a flag read served the default: the OpenFeature error codes.
///
/// A closed set: codes from the control plane that are not listed here map to ``general``.
public enum FlagErrorCode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// No values exist yet (the client has not loaded any).
    case providerNotReady = "PROVIDER_NOT_READY"
    /// The key is not in the served flags.
    case flagNotFound = "FLAG_NOT_FOUND"
    /// The control plane could not parse the flag's configuration.
    case parseError = "PARSE_ERROR"
    /// The served value has a different type from the one requested.
    case typeMismatch = "TYPE_MISMATCH"
    /// The flag needs a targeting key and the context had none.
    case targetingKeyMissing = "TARGETING_KEY_MISSING"
    /// The evaluation context was rejected.
    case invalidContext = "INVALID_CONTEXT"
    /// The client can never serve values (for example the key was refused).
    case providerFatal = "PROVIDER_FATAL"
    /// Any other error.
    case general = "GENERAL"

    /// Maps a wire spelling to a code; unknown spellings become ``general``.
    public init(wireValue: String) {
        self = FlagErrorCode(rawValue: wireValue) ?? .general
    }

    public var description: String { rawValue }
}
