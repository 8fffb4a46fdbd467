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
/// ten minutes (only names of that exact pattern with a 12-hex entry name: other software's
/// files in a shared folder are never touched). The directory is created on first write (mode
/// 0700), re-created when it was removed meanwhile, and, on Apple platforms, excluded from
/// backups.
///
/// Hostile folders (docs/cache.md, "Hostile or broken folders"): every operation opens the
/// directory itself without following a symbolic link and checks it (the components of its
/// path may be links). A directory that is a symbolic link or belongs to another user is
/// refused (``CacheStoreError/folderRefused(_:)``: the client turns its cache off); one with
/// group or other permission bits is made 0700. Entries are opened relative to that directory,
/// without following links and without blocking: anything but a regular file at an entry's
/// name (a FIFO, a socket, a device, a link) is removed and reads as no entry.
public final class FileCacheStore: CacheStore {
    /// The directory holding the entries.
    public let directory: URL
    /// The largest entry in bytes; *default* 256 KiB.
    public let sizeLimit: Int
    /// Whether this store swept old temporary files (and, on Apple platforms, excluded the
    /// directory from backups) already.
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

    /// The directory's path, without a trailing slash (which would make `open` follow a link).
    private var directoryPath: String {
        var path = directory.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private var folderName: String { directory.lastPathComponent }

    /// Reads the entry, at most ``sizeLimit`` + 1 bytes of it (all of it for `.max`). Anything
    /// but a regular file at the name is removed and reads as `nil`.
    public func read(_ name: String) throws -> Data? {
        try Self.check(name)
        guard let folder = try openFolder(create: false) else { return nil }
        defer { _ = close(folder) }
        let fd = openat(folder, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        if fd < 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            // ELOOP: a symbolic link (to a FIFO, a device, anything); ENXIO: a socket.
            if code == ELOOP || code == ENXIO || code == EOPNOTSUPP {
                try removeOddity(name, in: folder)
                return nil
            }
            throw CacheStoreError.system(operation: "open", name: name, errno: code)
        }
        defer { _ = close(fd) }  // read-only: nothing is lost when close fails
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw CacheStoreError.system(operation: "stat", name: name, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            try removeOddity(name, in: folder)
            return nil
        }
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

    /// Writes the entry atomically (temporary file, `fsync`, `rename`, directory `fsync`); the
    /// directory is (re-)created when missing.
    public func write(_ data: Data, for name: String) throws {
        try Self.check(name)
        // A second attempt when the directory was removed between its opening and the write.
        if try writeOnce(data, for: name) { return }
        if try writeOnce(data, for: name) { return }
        throw CacheStoreError.system(operation: "create", name: name, errno: ENOENT)
    }

    /// One attempt; `false` when the directory vanished meanwhile (`ENOENT`).
    private func writeOnce(_ data: Data, for name: String) throws(CacheStoreError) -> Bool {
        guard let folder = try openFolder(create: true) else { return false }
        defer { _ = close(folder) }
        prepareOnce(folder)
        do {
            try write(data, for: name, in: folder)
        } catch {
            if case .system(_, _, let code) = error, code == ENOENT { return false }
            throw error
        }
        return true
    }

    private func write(_ data: Data, for name: String, in folder: Int32) throws(CacheStoreError) {
        let temp = ".\(name).\(UInt64.random(in: 0 ... .max)).tmp"
        let fd = openat(folder, temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .system(operation: "create", name: temp, errno: errno) }
        var ok = false
        defer {
            if !ok { _ = unlinkat(folder, temp, 0) }
        }
        var failure: CacheStoreError?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glue.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .system(operation: "write", name: temp, errno: errno)
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = .system(operation: "fsync", name: temp, errno: errno) }
        // A failed close can mean lost data (NFS, quotas): the entry is not replaced then.
        if close(fd) != 0, failure == nil { failure = .system(operation: "close", name: temp, errno: errno) }
        if let failure { throw failure }
        guard renameat(folder, temp, folder, name) == 0 else {
            throw .system(operation: "rename", name: name, errno: errno)
        }
        ok = true
        _ = fsync(folder)
    }

    /// Removes the entry (a missing one is fine; an empty directory in its place too).
    public func remove(_ name: String) throws {
        try Self.check(name)
        guard let folder = try openFolder(create: false) else { return }
        defer { _ = close(folder) }
        try remove(name, in: folder)
    }

    private func remove(_ name: String, in folder: Int32) throws(CacheStoreError) {
        if unlinkat(folder, name, 0) != 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return }
            if code == EISDIR || code == EPERM {
                // A directory where the entry should be: take it away if it is empty, else leave it.
                if unlinkat(folder, name, AT_REMOVEDIR) == 0 { return }
                throw .notAFile(name: name)
            }
            throw .system(operation: "remove", name: name, errno: code)
        }
    }

    /// Something that is not a regular file sits at an entry's name: it is removed, never
    /// opened for real (a FIFO would block, a device would stream).
    private func removeOddity(_ name: String, in folder: Int32) throws(CacheStoreError) {
        try remove(name, in: folder)
    }

    /// The names of the entries in the directory (files whose names a store accepts; temporary
    /// files and other dot files are not entries), at most 4,096 of them.
    public func entryNames() throws -> [String]? {
        guard let folder = try openFolder(create: false) else { return [] }
        defer { _ = close(folder) }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directoryPath)) ?? []
        return Array(names.lazy.filter { (try? Self.check($0)) != nil }.prefix(4096))
    }

    // MARK: - The directory

    /// Opens the directory itself (never through a symbolic link), checks its owner and makes
    /// its mode 0700; creates it (mode 0700, parents as needed) when `create` and it is
    /// missing. `nil` when it is missing and `create` is false.
    private func openFolder(create: Bool) throws(CacheStoreError) -> Int32? {
        let path = directoryPath
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        var fd = open(path, flags)
        if fd < 0 && errno == ENOENT {
            guard create else { return nil }
            try createFolder(path)
            fd = open(path, flags)
        }
        guard fd >= 0 else {
            let code = errno
            // A link at the folder's own name: ELOOP on Apple platforms, ENOTDIR on Linux.
            var info = stat()
            if code == ELOOP || (code == ENOTDIR && lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK) {
                throw .folderRefused("the cache folder \(folderName) is a symbolic link")
            }
            throw .system(operation: "open", name: folderName, errno: code)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            _ = close(fd)
            throw .system(operation: "stat", name: folderName, errno: code)
        }
        guard info.st_uid == geteuid() else {
            _ = close(fd)
            throw .folderRefused("the cache folder \(folderName) belongs to another user (uid \(info.st_uid))")
        }
        if (info.st_mode & 0o077) != 0 {
            // Open to others and not fixable (a read-only file system): not used, like a failing store.
            guard fchmod(fd, 0o700) == 0 else {
                let code = errno
                _ = close(fd)
                throw .system(operation: "chmod", name: folderName, errno: code)
            }
        }
        return fd
    }

    /// Creates the parents (default modes) and the directory itself (0700).
    private func createFolder(_ path: String) throws(CacheStoreError) {
        let parent = directory.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let code = underlying.map { Int32(truncatingIfNeeded: $0.code) } ?? EIO
            throw .system(operation: "mkdir", name: parent.lastPathComponent, errno: code)
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .system(operation: "mkdir", name: folderName, errno: errno)
        }
    }

    /// Once per store: excludes the directory from backups (Apple), and removes temporary files
    /// a crash left behind more than ten minutes ago (Halyard's own pattern only).
    private func prepareOnce(_ folder: Int32) {
        let first = prepared.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        #if canImport(Darwin)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            var url = directory
            try? url.setResourceValues(values)
        #endif
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directoryPath) else { return }
        let old = Int64(Date().timeIntervalSince1970) - 600
        for temp in names where Self.isOwnTemporaryName(temp) {
            var info = stat()
            guard fstatat(folder, temp, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                continue
            }
            #if canImport(Darwin)
                let modified = Int64(info.st_mtimespec.tv_sec)
            #else
                let modified = Int64(info.st_mtim.tv_sec)
            #endif
            if modified < old { _ = unlinkat(folder, temp, 0) }
        }
    }

    /// Whether `name` is a temporary file of this store: `.<12 lowercase hex>.<1 to 20 digits>.tmp`.
    static func isOwnTemporaryName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[3] == "tmp" else { return false }
        let digits = parts[2].utf8
        return CacheIndex.isSlotName(String(parts[1])) && (1...20).contains(digits.count)
            && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
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
