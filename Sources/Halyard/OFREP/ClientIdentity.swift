package import Foundation

/// Who is calling the control plane: the credential, the install id, the app id and the user
/// agent. Every request Halyard sends (flag fetches and exposure uploads) takes its identity
/// headers from here, so they are built in one place.
///
/// A reference type shared by the sync engine and the exposure uploader: each holds it strongly,
/// so an upload that outlives its client (the final flush after `close()` or a dropped client)
/// still identifies itself. The key can be replaced (`setKey`); the rest is fixed.
package final class ClientIdentity: Sendable {
    /// The SDK name sent in `User-Agent` and in the `meta` of exposure uploads.
    package static let sdkName = "Halyard"
    /// The SDK version sent in `User-Agent` and in the `meta` of exposure uploads.
    package static let sdkVersion = "0.1.0"
    /// The header carrying the app id.
    package static let appIDHeader = "X-Halyard-App-Id"
    /// The header carrying the install id.
    package static let installIDHeader = "X-Halyard-Install-Id"

    /// `Halyard-Swift/<version> (<platform>)`.
    package static var userAgent: String {
        #if os(Linux)
            let platform = "Linux"
        #elseif os(macOS)
            let platform = "macOS"
        #elseif os(iOS)
            let platform = "iOS"
        #else
            let platform = "Apple"
        #endif
        return "\(sdkName)-Swift/\(sdkVersion) (\(platform))"
    }

    /// The control plane's base URL.
    package let baseURL: URL
    /// The app id, sent as ``appIDHeader`` when set.
    package let appID: String?
    private let credential: Locked<String>
    private let resolveInstallID: @Sendable () -> String
    private let resolvedInstallID = Locked<String?>(nil)

    /// Creates an identity. `installID` is called once, on first use (it may read or create a
    /// file): the first request builds its headers in a task, never on the creating thread.
    package init(baseURL: URL, key: String, appID: String?, installID: @escaping @Sendable () -> String) {
        self.baseURL = baseURL
        self.appID = appID.map(Self.trimmed)
        resolveInstallID = installID
        credential = Locked(Self.trimmed(key))
    }

    /// `text` without its surrounding whitespace and line breaks (a key file's final newline).
    package static func trimmed(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// The configured field (`"key"`, then `"appID"`) that holds a control character once
    /// trimmed (SPEC §5: refused where it is configured), or nil.
    package static func fieldWithControlCharacter(key: String, appID: String?) -> String? {
        if !HeaderValue.isClean(trimmed(key)) { return "key" }
        if let appID, !HeaderValue.isClean(trimmed(appID)) { return "appID" }
        return nil
    }

    /// Creates an identity with a known install id.
    package convenience init(baseURL: URL, key: String, appID: String?, installID: String) {
        self.init(baseURL: baseURL, key: key, appID: appID, installID: { installID })
    }

    /// The persisted install id, sent as ``installIDHeader``; resolved on first use, once (callers
    /// that race wait for the one resolution).
    package var installID: String {
        resolvedInstallID.withLock { id in
            if let id { return id }
            let resolved = resolveInstallID()
            id = resolved
            return resolved
        }
    }

    /// The key in use.
    package var key: String { credential.value }

    /// Uses `key` from the next request on.
    package func setKey(_ key: String) { credential.withLock { $0 = Self.trimmed(key) } }

    /// The identity headers: `Authorization`, `User-Agent`, the install id and (when set) the app id.
    package var headers: [String: String] { headers(key: key) }

    /// The identity headers with `key` as the credential (a request that must know which key
    /// it carried reads ``key`` once and passes it here).
    package func headers(key: String) -> [String: String] {
        var headers = [
            "Authorization": "Bearer \(key)",
            "User-Agent": Self.userAgent,
            Self.installIDHeader: installID,
        ]
        if let appID { headers[Self.appIDHeader] = appID }
        return headers
    }

    /// The URL of an endpoint below the base URL (see ``Foundation/URL/appendingEndpoint(_:)``).
    package func endpoint(_ path: String) -> URL { baseURL.appendingEndpoint(path) }
}
