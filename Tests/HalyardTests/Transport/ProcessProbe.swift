import Foundation

/// Reads the test process's memory and thread figures from `/proc/self` (Linux; `nil` elsewhere).
enum ProcessProbe {
    /// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`, ...).
    static func statusBytes(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let number = line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first
                .flatMap { Int($0) }
            return number.map { $0 * 1024 }
        }
        return nil
    }

    /// Resident memory now.
    static var residentBytes: Int? { statusBytes("VmRSS") }

    /// The resident memory high-water mark.
    static var peakResidentBytes: Int? { statusBytes("VmHWM") }

    /// Resets the high-water mark to the current resident size (`/proc/self/clear_refs`, value 5);
    /// whether the kernel accepted it.
    static func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data("5".utf8))
            return true
        } catch {
            return false
        }
    }

    /// The number of threads of this process (`/proc/self/task` entries).
    static var threadCount: Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.count
    }
}
