import Foundation

extension FlagClient {
    /// The Halyard version (`"0.1.0"`), as sent in the `User-Agent` and in exposure uploads.
    public static var sdkVersion: String { ClientIdentity.sdkVersion }

    /// Every flag of the values served now, as the control plane (or the offline values) gave
    /// them, sorted by key; empty before values exist.
    ///
    /// For tools and diagnostics (the `halyard` command prints these): it copies the whole set,
    /// records no exposure and counts no read. Read flags with the typed reads.
    public var servedFlags: [ServedFlag] {
        // Copy the array out of the protected snapshot; sort after the protection ended.
        let flags = store.withCurrent { $0?.flags ?? [] }
        return flags.sorted { $0.key < $1.key }
    }
}
