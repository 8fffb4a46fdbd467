extension TransportRequest {
    /// The bytes `headers` took on the wire, near enough: each field's name, value, `: ` and
    /// CRLF, and a status line. (Transports hand fields over joined by name; the count is within
    /// a few bytes per repeated field of what arrived.)
    static func headerBytes(_ headers: [String: String]) -> Int {
        headers.reduce(32) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
    }

    /// Takes what a redirect's response head used (`headers`) off this request's
    /// ``maxResponseHeaderBytes``, so that the bound holds for every hop of the exchange together
    /// (SPEC §5: 3 redirects with 60 KiB of headers each must not pass a 64 KiB bound). Throws
    /// ``TransportError/responseTooLarge(limit:)`` with the exchange's `limit` when nothing is
    /// left for the next hop.
    mutating func spendHeaderBudget(on headers: [String: String], limit: Int) throws(TransportError) {
        let left = maxResponseHeaderBytes - Self.headerBytes(headers)
        guard left > 0 else { throw .responseTooLarge(limit: limit) }
        maxResponseHeaderBytes = left
    }
}

extension HeaderValue {
    /// The ``TransportError`` for a request holding a field that must not be sent
    /// (``firstUnsafeField(_:)``): named, never its value.
    static func refusal(_ name: String) -> TransportError {
        .network("the header field \(shown(name)) holds a control character or an invalid name: not sent")
    }
}
