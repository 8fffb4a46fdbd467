public import Foundation

/// Where the install id lives. The install id is a random UUID created once and sent with every
/// request as `X-Halyard-Install-Id`, so the control plane can count installs without a user id.
public enum InstallIDStorage: Sendable {
    /// A file under the platform's per-user data directory: Application Support on Apple
    /// platforms, `$XDG_DATA_HOME` (or `~/.local/share`) on Linux, in a `halyard` folder. Falls
    /// back to a per-process id when the file cannot be read or written.
    case automatic
    /// A file at this URL (created with its folder when missing).
    case file(URL)
    /// A fresh random id per process; nothing is stored.
    case memory
    /// Exactly this id (tests, or an app that manages its own).
    case fixed(String)

    /// Reads or creates the install id. Never throws: falls back to a random id.
    func resolve() -> String {
        switch self {
        case .fixed(let id): return id
        case .memory: return UUID().uuidString.lowercased()
        case .file(let url): return Self.loadOrCreate(at: url)
        case .automatic:
            guard let url = Self.automaticURL() else { return UUID().uuidString.lowercased() }
            return Self.loadOrCreate(at: url)
        }
    }

    static func automaticURL() -> URL? {
        #if canImport(Darwin)
            guard let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            else {
                return nil
            }
            return base.appendingPathComponent("halyard", isDirectory: true).appendingPathComponent("install-id")
        #else
            let env = ProcessInfo.processInfo.environment
            let base: URL
            if let xdg = env["XDG_DATA_HOME"], xdg.hasPrefix("/") {
                base = URL(fileURLWithPath: xdg, isDirectory: true)
            } else if let home = env["HOME"], home.hasPrefix("/") {
                base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
                    ".local/share", isDirectory: true)
            } else {
                return nil
            }
            return base.appendingPathComponent("halyard", isDirectory: true).appendingPathComponent("install-id")
        #endif
    }

    static func loadOrCreate(at url: URL) -> String {
        if let data = try? Data(contentsOf: url), let text = String(data: data, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                return id
            }
        }
        let id = UUID().uuidString.lowercased()
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(id.utf8).write(to: url, options: .atomic)
        } catch {
            // Not persisted: the id is per process. Never fatal.
        }
        return id
    }
}
