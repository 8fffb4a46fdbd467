package import Foundation

extension URL {
    /// `self` + `path` (with or without a leading slash), keeping any path prefix of the base URL
    /// and never doubling the slash between them: the one place request URLs are joined.
    package func appendingEndpoint(_ path: String) -> URL {
        var base = absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let tail = path.hasPrefix("/") ? path : "/" + path
        return URL(string: base + tail) ?? appendingPathComponent(path)
    }
}
