import Foundation

/// Serializes the calls to libcurl's `curl_global_init` that Halyard makes or causes in this
/// process: its own, when the libcurl transport loads the library, and FoundationNetworking's,
/// which runs it again in every `URLSession` initializer (``URLSessionTransport/init()``). Before
/// libcurl 7.84.0 `curl_global_init` is not thread-safe, and the version gate admits 7.68.0 on:
/// two of these calls at once could corrupt libcurl's global state. A `URLSession` created
/// elsewhere in the application, on another thread at that very moment, is outside this lock
/// (docs/protocol.md, "libcurl at run time").
enum LibcurlGlobalInit {
    private static let lock = NSLock()

    /// Runs `body` alone among the calls this lock serializes.
    static func serialized<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
