public import Foundation

/// Where the on-device cache (docs/cache.md) keeps its entries: a flat namespace of small,
/// opaque blobs, each under a name Halyard derives (12 lowercase hex digits, never a key or a
/// targeting key).
///
/// The shape is the one the OpenFeature-provider SDKs' caching providers use: read, write,
/// remove, and a size limit. ``FileCacheStore`` is the default; plug in another one with
/// ``FlagClientOptions/cacheStore``. Halyard calls a store only from its own serial cache queue,
/// never from a read, a publish or the thread that creates the client, so an implementation may
/// block. It must be safe to call from any one thread at a time; two clients (or two processes)
/// may share the underlying storage, so ``write(_:for:)`` must replace an entry atomically
/// (a reader sees the whole old blob or the whole new one).
public protocol CacheStore: Sendable {
    /// The largest entry, in bytes, the store accepts and serves. Larger entries are removed
    /// with one warning and never served.
    var sizeLimit: Int { get }
    /// The blob stored under `name`, or `nil` when there is none. A store may return more than
    /// ``sizeLimit`` bytes (at most `sizeLimit + 1` is enough) to signal an oversized entry.
    /// - Throws: when the storage cannot be read (the client logs it once and goes on from memory).
    func read(_ name: String) throws -> Data?
    /// Stores `data` under `name`, replacing any previous blob atomically.
    /// - Throws: when the storage cannot be written (permission denied, disk full, ...).
    func write(_ data: Data, for name: String) throws
    /// Removes the blob under `name`; removing a missing one is not an error.
    func remove(_ name: String) throws
    /// The names of the blobs stored, or `nil` when the store cannot list them (the default).
    /// Halyard uses it to rebuild a lost LRU index and to sweep orphaned, expired or abandoned
    /// entries (docs/cache.md, "Index and sweeps"); a store that cannot list keeps working,
    /// without those repairs.
    func entryNames() throws -> [String]?
}

extension CacheStore {
    /// A store that cannot list its blobs: `nil`.
    public func entryNames() throws -> [String]? { nil }
}

/// Why a ``CacheStore`` operation failed.
public enum CacheStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A system call failed: the operation, the path's last component and `errno`.
    case system(operation: String, name: String, errno: Int32)
    /// A name that is not a plain file name (empty, a path separator, a leading dot).
    case invalidName(String)
    /// The path of the entry exists but is not a regular file (for example a directory).
    case notAFile(name: String)
    /// The cache folder is not safe to use (it is a symbolic link, or another user's): the
    /// client turns its on-device cache off, with one log line.
    case folderRefused(String)

    /// A one-line description (no key, no targeting key: names are derived hashes).
    public var description: String {
        switch self {
        case .system(let operation, let name, let code):
            return "\(operation) \(name) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .invalidName(let name): return "invalid cache entry name \"\(name)\""
        case .notAFile(let name): return "cache entry \(name) is not a regular file"
        case .folderRefused(let reason): return reason
        }
    }
}
