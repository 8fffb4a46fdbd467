/// The loopback rule shared by every URL Halyard may reach over plain `http` (the control
/// plane's base URL and the OTLP endpoint).
package enum LoopbackHost {
    /// Whether a host names the loopback interface: `localhost`, `*.localhost`, `::1`
    /// (bracketed or not) or a dotted-quad in `127.0.0.0/8`.
    package static func contains(_ rawHost: String) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && UInt8(part) != nil
        }
    }
}
