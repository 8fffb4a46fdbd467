#if canImport(CHalyardCurl)
    import CHalyardCurl
    import Foundation

    /// Sets options on one libcurl easy handle, for ``CurlExchange`` (a request) and
    /// ``CurlStreamTransfer`` (an event stream), which configure the same policy (through
    /// ``CurlEasyHandle/configure(url:trustedCAFile:headerLines:receiver:)``) and differ only in
    /// their method, body and timeouts.
    ///
    /// A refused option fails the request with a ``TransportError/network(_:)`` naming it:
    /// Halyard never sends a request weaker than the one it configured (no protocol restriction,
    /// no TLS verification, no timeout). The one exception is said where it is made
    /// (``setPolicy(url:trustedCAFile:)``, HTTP/2).
    struct CurlEasyOptions {
        let library: CurlLibrary
        /// The easy handle (owned by the transfer, not by this value).
        let easy: UnsafeMutableRawPointer

        /// What every Halyard transfer on libcurl sets, whatever it is for: no signals, the URL,
        /// `http` and `https` only, redirects never followed by libcurl (``RedirectPolicy/send(_:perform:)``
        /// for requests and ``RedirectPolicy/openStream(_:open:)`` for streams apply SPEC §5's rule — same
        /// origin only, at most 3, never https → http — and send the next request), HTTP/2 preferred, the
        /// peer's certificate and host name verified, and `trustedCAFile` as the CA bundle when given.
        func setPolicy(url: URL, trustedCAFile: String?) throws(TransportError) {
            try setLong(CurlABI.noSignal, 1, "NOSIGNAL")
            try setString(CurlABI.url, url.absoluteString, "URL")  // libcurl copies strings
            if library.hasProtocolsString {
                try setString(CurlABI.protocolsString, "http,https", "PROTOCOLS_STR")
            } else {
                try setLong(CurlABI.protocols, CurlABI.protoHTTPAndHTTPS, "PROTOCOLS")
            }
            try setLong(CurlABI.followLocation, 0, "FOLLOWLOCATION")
            // HTTP/2 is a preference, not a guard: a libcurl built without it refuses this option
            // (CURLE_UNSUPPORTED_PROTOCOL) and speaks HTTP/1.1, which is as safe.
            _ = hal_curl_easy_setopt_long(library.api, easy, CurlABI.httpVersion, CurlABI.httpVersion2TLS)
            try setLong(CurlABI.sslVerifyPeer, 1, "SSL_VERIFYPEER")
            try setLong(CurlABI.sslVerifyHost, 2, "SSL_VERIFYHOST")
            if let trustedCAFile { try setString(CurlABI.caInfo, trustedCAFile, "CAINFO") }
            // Behind an HTTPS proxy (`https_proxy`), the proxy's own `200 Connection established`
            // head would reach the header callback first: a stream would take it for its head.
            try setLong(CurlABI.suppressConnectHeaders, 1, "SUPPRESS_CONNECT_HEADERS")
        }

        /// One header as a libcurl header line: the value trimmed, and an empty value written
        /// `Name;`, libcurl's spelling of a header with no value (`Name:` removes the header).
        static func headerLine(_ name: String, _ value: String) -> String {
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? "\(name);" : "\(name): \(trimmed)"
        }

        /// Appends `lines` to `list` (which the transfer owns and frees with
        /// `curl_slist_free_all`) and sets it as `CURLOPT_HTTPHEADER`.
        func setHeaders(_ lines: [String], into list: inout UnsafeMutableRawPointer?) throws(TransportError) {
            for line in lines {
                guard let appended = hal_curl_slist_append(library.api, list, line) else {
                    throw .network("curl_slist_append failed")
                }
                list = appended
            }
            try setPointer(CurlABI.httpHeader, list, "HTTPHEADER")
        }

        /// `code`, a `curl_easy_setopt` result for `CURLOPT_<name>`, as a typed error.
        func check(_ code: Int32, _ name: String) throws(TransportError) {
            guard code == CurlABI.ok else {
                throw .network("libcurl \(library.version) refused CURLOPT_\(name): \(library.describe(code))")
            }
        }

        func setLong(_ option: Int32, _ value: Int, _ name: String) throws(TransportError) {
            try check(hal_curl_easy_setopt_long(library.api, easy, option, value), name)
        }

        func setPointer(_ option: Int32, _ value: UnsafeRawPointer?, _ name: String) throws(TransportError) {
            try check(hal_curl_easy_setopt_ptr(library.api, easy, option, value), name)
        }

        func setString(_ option: Int32, _ value: String, _ name: String) throws(TransportError) {
            let code = value.withCString { hal_curl_easy_setopt_ptr(library.api, easy, option, $0) }
            try check(code, name)
        }

        /// `duration` in whole milliseconds for a `*_MS` option, at least 1 (0 would mean "no
        /// timeout" to libcurl).
        static func milliseconds(_ duration: Duration) -> Int {
            Int(clamping: max(duration.saturatingMilliseconds, 1))
        }
    }
#endif
