public import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The default ``CacheStore``: one file per entry in a directory, written atomically.
///
/// A write creates a temporary file in the same directory (`.<name>.<random>.tmp`, mode 0600),
/// writes the whole blob, `fsync`s it, `rename`s it over the entry and `fsync`s the directory,
/// so a crash at any point leaves either the old entry or the new one, never a torn file; a
/// leftover temporary file is never read and is removed by a later write once it is older than
/// ten minutes. The directory is created on first write (mode 0700) and, on Apple platforms,
/// excluded from backups.
public final class FileCacheStore: CacheStore {
    /// The directory holding the entries.
    public let directory: URL
    /// The largest entry in bytes; *default* 256 KiB.
    public let sizeLimit: Int
    private let prepared = Locked(false)

    /// Creates a store over `directory` (created on first write).
    public init(directory: URL, sizeLimit: Int = 256 << 10) {
        self.directory = directory
        self.sizeLimit = max(sizeLimit, 0)
    }

    /// The platform's default cache directory for Halyard: the caches directory on Apple
    /// platforms, `$XDG_CACHE_HOME` (or `~/.cache`) on Linux, each with a `halyard` folder.
    /// `nil` when none can be found (then the cache is off).
    public static var defaultDirectory: URL? {
        #if canImport(Darwin)
            guard let base = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first else {
                return nil
            }
            return base.appendingPathComponent("halyard", isDirectory: true)
        #else
            let env = ProcessInfo.processInfo.environment
            if let xdg = env["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("halyard", isDirectory: true)
            }
            if let home = env["HOME"], home.hasPrefix("/") {
                return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
                    ".cache/halyard", isDirectory: true)
            }
            return nil
        #endif
    }

    static func check(_ name: String) throws(CacheStoreError) {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"), !name.contains("\0") else {
            throw .invalidName(name)
        }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Reads the entry, at most ``sizeLimit`` + 1 bytes of it.
    public func read(_ name: String) throws -> Data? {
        try Self.check(name)
        let fd = open(path(name), O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw CacheStoreError.system(operation: "open", name: name, errno: code)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw CacheStoreError.system(operation: "stat", name: name, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw CacheStoreError.notAFile(name: name) }
        // `.max` is a valid limit ("unlimited"): no `+ 1` past it. The size is clamped in
        // `Int64` before it becomes an `Int` (32 bits on arm64_32).
        let cap = sizeLimit == .max ? Int.max : sizeLimit + 1
        var data = Data(count: Int(min(max(Int64(info.st_size), 0), Int64(cap))))
        var total = 0
        while total < cap {
            if total == data.count { data.count = data.count >= cap / 2 ? cap : min(max(data.count * 2, 4096), cap) }
            let n = data.withUnsafeMutableBytes { raw in
                Glue.read(fd, raw.baseAddress! + total, raw.count - total)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheStoreError.system(operation: "read", name: name, errno: errno)
            }
            if n == 0 { break }
            total += n
        }
        data.count = total
        return data
    }

    /// Writes the entry atomically (temporary file, `fsync`, `rename`, directory `fsync`).
    public func write(_ data: Data, for name: String) throws {
        try Self.check(name)
        try prepareDirectory()
        let temp = ".\(name).\(UInt64.random(in: 0 ... .max)).tmp"
        let tempPath = path(temp)
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheStoreError.system(operation: "create", name: temp, errno: errno) }
        var ok = false
        defer {
            if !ok { unlink(tempPath) }
        }
        do {
            defer { close(fd) }
            try data.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glue.write(fd, raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw CacheStoreError.system(operation: "write", name: temp, errno: errno)
                    }
                    offset += n
                }
            }
            guard fsync(fd) == 0 else { throw CacheStoreError.system(operation: "fsync", name: temp, errno: errno) }
        }
        guard rename(tempPath, path(name)) == 0 else {
            throw CacheStoreError.system(operation: "rename", name: name, errno: errno)
        }
        ok = true
        let dir = open(directory.path, O_RDONLY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
        }
    }

    /// Removes the entry (a missing one is fine).
    public func remove(_ name: String) throws {
        try Self.check(name)
        if unlink(path(name)) != 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return }
            if code == EISDIR || code == EPERM {
                // A directory where the entry should be: take it away if it is empty, else leave it.
                if rmdir(path(name)) == 0 { return }
            }
            throw CacheStoreError.system(operation: "remove", name: name, errno: code)
        }
    }

    /// Creates the directory once, excludes it from backups (Apple), and removes temporary
    /// files a crash left behind more than ten minutes ago.
    private func prepareDirectory() throws {
        let done = prepared.withLock { $0 }
        if done { return }
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let code = underlying.map { Int32(truncatingIfNeeded: $0.code) } ?? EIO
            throw CacheStoreError.system(operation: "mkdir", name: directory.lastPathComponent, errno: code)
        }
        #if canImport(Darwin)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            var url = directory
            try? url.setResourceValues(values)
        #endif
        if let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let old = Date().addingTimeInterval(-600)
            for temp in names where temp.hasPrefix(".") && temp.hasSuffix(".tmp") {
                let full = path(temp)
                if let date = (try? FileManager.default.attributesOfItem(atPath: full))?[.modificationDate] as? Date,
                    date < old
                {
                    unlink(full)
                }
            }
        }
        prepared.withLock { $0 = true }
    }
}

/// The libc `read`/`write`, named apart from the store's own methods.
private enum Glue {
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.read(fd, buffer, count)
        #elseif canImport(Glibc)
            Glibc.read(fd, buffer, count)
        #else
            Musl.read(fd, buffer, count)
        #endif
    }
    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.write(fd, buffer, count)
        #elseif canImport(Glibc)
            Glibc.write(fd, buffer, count)
        #else
            Musl.write(fd, buffer, count)
        #endif
    }
}
