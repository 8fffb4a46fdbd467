package import Foundation

/// One advertised change stream from a bulk response's `eventStreams` (OFREP ADR-0008), already
/// resolved and checked (see ``OFREPResponse/decode(_:limit:controlPlane:)``).
///
/// `url` is sensitive (it may carry the stream's own credentials): it is never logged,
/// persisted, or put in stats, errors, events or the on-device cache. `description`,
/// `debugDescription` and the reflection of this type never show it.
package struct OFREPEventStream: Sendable, Hashable {
    /// The absolute stream URL: `https`, or `http` to a loopback host.
    package var url: URL
    /// Whether the stream is on the control plane's own origin (scheme, host, port): only then
    /// does it get the client's `Authorization` and identity headers.
    package var sameOriginAsControlPlane: Bool
    /// The entry's `inactivityDelaySec`, when it gave a valid one.
    package var inactivityDelay: Duration?

    /// Creates a resolved stream.
    package init(url: URL, sameOriginAsControlPlane: Bool, inactivityDelay: Duration? = nil) {
        self.url = url
        self.sameOriginAsControlPlane = sameOriginAsControlPlane
        self.inactivityDelay = inactivityDelay
    }
}

extension OFREPEventStream: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A description without the URL (it is sensitive).
    package var description: String {
        var text = "OFREPEventStream(sse, "
        text += sameOriginAsControlPlane ? "control plane's origin" : "other origin"
        if let inactivityDelay { text += ", inactivityDelay: \(inactivityDelay)" }
        return text + ")"
    }

    /// The same as ``description``: the URL is never printed.
    package var debugDescription: String { description }

    /// A mirror without the URL, so `dump` and reflection-based printing cannot show it either.
    package var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "sameOriginAsControlPlane": sameOriginAsControlPlane,
                "inactivityDelay": inactivityDelay as Any,
            ], displayStyle: .struct)
    }
}

extension OFREPEventStream {
    /// The most streams a response may advertise; later valid entries are dropped.
    package static let maxStreams = 4
    /// The largest `inactivityDelaySec` kept (a day); larger values are clamped to it.
    package static let maxInactivityDelaySeconds: Int64 = 86_400

    /// The streams of a bulk response's `eventStreams` member (ADR-0008), in order.
    ///
    /// - Entries of a `type` other than `"sse"`, and entries that are not objects, are ignored.
    /// - `{"url": ...}`: an absolute URL. `{"endpoint": {"origin"?, "requestUri"}}`:
    ///   `requestUri` must start with one `/` (not `//`); it is appended to `origin` (scheme,
    ///   host and optional port, no path), or to the control plane's origin when `origin` is
    ///   absent or empty (without a `controlPlane` such an entry is dropped).
    /// - The result must be `https`, or `http` to a loopback host; anything else is dropped.
    /// - `inactivityDelaySec`: an integer of at least 1 (the schema's minimum; an integral
    ///   number is accepted), clamped to a day; anything else, 0 included, is ignored (`nil`).
    /// - Duplicate URLs are kept once; at most ``maxStreams`` streams are returned.
    ///
    /// Nothing here logs or throws: an invalid entry is simply not a stream.
    package static func streams(from value: JSONValue?, controlPlane: URL?) -> [OFREPEventStream] {
        guard case .array(let entries)? = value else { return [] }
        var result: [OFREPEventStream] = []
        for entry in entries {
            guard result.count < maxStreams else { break }
            guard let stream = stream(from: entry, controlPlane: controlPlane) else { continue }
            if result.contains(where: { $0.url == stream.url }) { continue }
            result.append(stream)
        }
        return result
    }

    static func stream(from entry: JSONValue, controlPlane: URL?) -> OFREPEventStream? {
        guard case .object(let members) = entry, case .string("sse")? = members["type"] else { return nil }
        let url: URL
        if case .string(let text)? = members["url"] {
            guard let absolute = URL(string: text), absolute.scheme != nil, absolute.host != nil else { return nil }
            url = absolute
        } else if case .object(let endpoint)? = members["endpoint"] {
            guard case .string(let requestURI)? = endpoint["requestUri"], requestURI.hasPrefix("/"),
                !requestURI.hasPrefix("//")
            else { return nil }
            let origin: String
            switch endpoint["origin"] {
            case .string(let text)? where !text.isEmpty:
                guard let normalized = Self.origin(of: text) else { return nil }
                origin = normalized
            case nil, .null?, .string?:
                guard let controlPlane, let normalized = Self.origin(of: controlPlane.absoluteString, ofURL: true)
                else {
                    return nil
                }
                origin = normalized
            default: return nil
            }
            guard let resolved = URL(string: origin + requestURI) else { return nil }
            url = resolved
        } else {
            return nil
        }
        guard Self.isAllowed(url) else { return nil }
        let origin = RedirectPolicy.Origin(url)
        let same = origin != nil && controlPlane.flatMap { RedirectPolicy.Origin($0) } == origin
        return OFREPEventStream(
            url: url, sameOriginAsControlPlane: same, inactivityDelay: inactivityDelay(members["inactivityDelaySec"]))
    }

    /// `https`, or `http` to a loopback host (SPEC §14).
    static func isAllowed(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return false }
        switch scheme {
        case "https": return true
        case "http": return LoopbackHost.contains(host)
        default: return false
        }
    }

    /// `scheme://host[:port]` of an advertised origin (no user info, no path beyond `/`, no
    /// query or fragment) or, with `ofURL`, of any URL; `nil` when there is none.
    static func origin(of text: String, ofURL: Bool = false) -> String? {
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        if !ofURL {
            guard components.path.isEmpty || components.path == "/", components.query == nil,
                components.fragment == nil
            else { return nil }
        }
        components.scheme = scheme
        components.path = ""
        components.query = nil
        components.fragment = nil
        return components.string
    }

    static func inactivityDelay(_ value: JSONValue?) -> Duration? {
        let seconds: Int64
        switch value {
        case .int(let n)?: seconds = n
        case .double(let d)? where d.isFinite && d.rounded() == d && d >= 0:
            seconds = d >= Double(maxInactivityDelaySeconds) ? maxInactivityDelaySeconds : Int64(d)
        default: return nil
        }
        guard seconds >= 1 else { return nil }
        return .seconds(min(seconds, maxInactivityDelaySeconds))
    }
}
