import Foundation

extension OFREPRequestBuilder {
    /// The characters a `flagConfig*` query value keeps as they are (RFC 3986 unreserved);
    /// everything else is percent-encoded (a `+` as `%2B`, a quote as `%22`).
    static let flagConfigAllowed: CharacterSet = {
        var set = CharacterSet()
        set.insert(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return set
    }()

    /// The bulk request of ``request(contextJSON:ifNoneMatch:key:)`` with the event's
    /// `flagConfigEtag` / `flagConfigLastModified` query parameters (SPEC §14), each forwarded
    /// as received and percent-encoded. Without a version it is the plain request.
    func request(
        contextJSON: String, ifNoneMatch: String?, flagConfig: FlagConfigVersion?, key: String? = nil
    ) -> TransportRequest {
        var request = request(contextJSON: contextJSON, ifNoneMatch: ifNoneMatch, key: key)
        request.url = Self.endpoint(request.url, flagConfig: flagConfig)
        return request
    }

    /// `url` with `flagConfig`'s query parameters appended (none: `url` itself).
    static func endpoint(_ url: URL, flagConfig: FlagConfigVersion?) -> URL {
        var items: [String] = []
        if let etag = flagConfig?.etag { items.append("flagConfigEtag=" + encode(etag)) }
        if let lastModified = flagConfig?.lastModified {
            items.append("flagConfigLastModified=" + encode(lastModified))
        }
        guard !items.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url
        }
        let existing = components.percentEncodedQuery.map { $0.isEmpty ? [] : [$0] } ?? []
        components.percentEncodedQuery = (existing + items).joined(separator: "&")
        return components.url ?? url
    }

    private static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: flagConfigAllowed) ?? ""
    }
}
