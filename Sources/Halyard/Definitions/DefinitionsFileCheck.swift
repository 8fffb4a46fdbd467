import Foundation

/// How a file source notices a change, portably (docs/definitions.md, "Sources"): at each check
/// the path is resolved (symbolic links followed, so a swapped link counts) and its modification
/// time, size and file number are compared with the last read; the file is read and hashed
/// (SHA-1) only when they differ, or while the last read was "racy" (the file was modified
/// within ``racyWindow`` of it: a second write within the file system's timestamp granularity
/// keeps the time and possibly the size). The hash, compared with the last document's, decides.
///
/// The racy test compares file system times with the real wall clock (`Date()`), not the
/// owner's injected clock: both sides are the file system's notion of now.
struct DefinitionsFileCheck: Sendable {
    /// What a check found.
    enum Finding: Sendable {
        /// The file is as it was (same status and not racy, or the same content).
        case unchanged
        /// New content, with its hash (the validator).
        case document(Data, hash: String)
        /// The file could not be read.
        case failed(DefinitionsSourceError)
    }

    /// A file's status as compared between checks.
    struct Stamp: Sendable, Hashable {
        var path: String
        var modified: Date?
        var size: Int
        var fileNumber: UInt64?
    }

    /// A file modified this close to its last read is read again at the next check.
    static let racyWindow: TimeInterval = 2

    let url: URL
    /// The status at the last read (nil: read at the next check).
    private(set) var lastStamp: Stamp?
    /// When the file was last read (real wall clock).
    private(set) var lastRead: Date?

    init(url: URL) {
        self.url = url
    }

    /// Checks the file; `validator` is the hash of the last document handled.
    mutating func check(validator: String?) -> Finding {
        let path = url.resolvingSymlinksInPath().path
        let stamp: Stamp
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let type = attributes[.type] as? FileAttributeType, type != .typeRegular {
                lastStamp = nil
                return .failed(.unreadable(path: url.path, reason: "not a regular file"))
            }
            stamp = Stamp(
                path: path, modified: attributes[.modificationDate] as? Date,
                size: (attributes[.size] as? NSNumber)?.intValue ?? -1,
                fileNumber: (attributes[.systemFileNumber] as? NSNumber)?.uint64Value)
        } catch {
            lastStamp = nil
            return .failed(.unreadable(path: url.path, reason: Self.reason(error)))
        }
        if validator != nil, stamp == lastStamp, !isRacy(stamp) { return .unchanged }
        let limit = FlagDefinitions.parsingLimits.maxInputBytes
        if stamp.size > limit {
            lastStamp = nil
            return .failed(.tooLarge(limit: limit))
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            lastStamp = nil
            return .failed(.unreadable(path: url.path, reason: Self.reason(error)))
        }
        if data.count > limit {
            lastStamp = nil
            return .failed(.tooLarge(limit: limit))
        }
        lastStamp = stamp
        lastRead = Date()
        let hash = SHA1.hash(data).map { String(format: "%02x", $0) }.joined()
        return hash == validator ? .unchanged : .document(data, hash: hash)
    }

    /// Whether the last read may have missed a write within the same timestamp granule.
    private func isRacy(_ stamp: Stamp) -> Bool {
        guard let modified = stamp.modified, let lastRead else { return true }
        return modified.timeIntervalSince(lastRead) > -Self.racyWindow
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError {
            return underlying.localizedDescription
        }
        return nsError.localizedDescription
    }
}
