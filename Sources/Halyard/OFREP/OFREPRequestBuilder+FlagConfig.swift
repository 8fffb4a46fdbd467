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
    /// as received and percent-encoded. Without either it is the plain request.
    func request(
        contextJSON: String, ifNoneMatch: String?, flagConfigEtag: String?, flagConfigLastModified: String?,
        key: String? = nil
    ) -> TransportRequest {
        var request = request(contextJSON: contextJSON, ifNoneMatch: ifNoneMatch, key: key)
        request.url = Self.endpoint(
            request.url, flagConfigEtag: flagConfigEtag, flagConfigLastModified: flagConfigLastModified)
        return request
    }

    /// `url` with the `flagConfig*` query parameters appended (none: `url` itself).
    static func endpoint(_ url: URL, flagConfigEtag: String?, flagConfigLastModified: String?) -> URL {
        var items: [String] = []
        if let flagConfigEtag { items.append("flagConfigEtag=" + encode(flagConfigEtag)) }
        if let flagConfigLastModified { items.append("flagConfigLastModified=" + encode(flagConfigLastModified)) }
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
