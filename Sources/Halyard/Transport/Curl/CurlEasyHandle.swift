#if canImport(CHalyardCurl)
    import CHalyardCurl
    import Foundation

    /// One libcurl easy handle and what every Halyard transfer sets up on it the same way: the
    /// policy (``CurlEasyOptions/setPolicy(url:trustedCAFile:)``), the error buffer, the request's
    /// header list, and the header and write callbacks, which hand each line and each body chunk
    /// to the transfer (``CurlTransfer/receiveHeader(_:)``, ``CurlTransfer/receiveBody(_:)``).
    /// A request (``CurlExchange``) and an event stream (``CurlStreamTransfer``) each own one and
    /// add only their own options: method, body, timeouts.
    ///
    /// Not `Sendable`: its transfer owns it and touches it under that transfer's rules (set up
    /// before the handle is added to ``CurlMulti``, callbacks on the driver thread).
    final class CurlEasyHandle {
        /// The easy handle (owned; cleaned up in `deinit`).
        let easy: UnsafeMutableRawPointer
        /// The libcurl the handle belongs to.
        let library: CurlLibrary
        private var headerList: UnsafeMutableRawPointer?
        private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlABI.errorSize + 1)
        /// Who the callbacks report to: the transfer that owns this handle, so it outlives every
        /// callback (as the transfer itself did when it was libcurl's callback context).
        private unowned(unsafe) var receiver: (any CurlTransfer)?

        /// A new easy handle; throws when libcurl is out of memory.
        init(library: CurlLibrary) throws(TransportError) {
            guard let easy = hal_curl_easy_init(library.api) else { throw .network("curl_easy_init failed") }
            self.easy = easy
            self.library = library
            errorBuffer.initialize(repeating: 0, count: CurlABI.errorSize + 1)
        }

        deinit {
            hal_curl_easy_cleanup(library.api, easy)
            hal_curl_slist_free_all(library.api, headerList)
            errorBuffer.deallocate()
        }

        /// Sets options on the handle (the transfer's own: method, body, timeouts).
        var options: CurlEasyOptions { CurlEasyOptions(library: library, easy: easy) }

        /// Sets up what every transfer shares: the policy for `url` and `trustedCAFile`, the error
        /// buffer, `headerLines` as the request's headers, and the header and write callbacks,
        /// which report to `receiver` from now on. Throws when libcurl refuses any of them.
        func configure(
            url: URL, trustedCAFile: String?, headerLines: [String], receiver: any CurlTransfer,
            proxy: String? = nil
        ) throws(TransportError) {
            self.receiver = receiver
            let options = self.options
            try options.setPolicy(url: url, trustedCAFile: trustedCAFile)
            if let proxy { try options.setString(CurlABI.proxy, proxy, "PROXY") }
            try options.setPointer(CurlABI.errorBuffer, errorBuffer, "ERRORBUFFER")
            try options.setHeaders(headerLines, into: &headerList)

            let context = Unmanaged.passUnretained(self).toOpaque()
            let onHeader: hal_curl_data_callback = { data, size, count, context in
                guard let data, let context else { return 0 }
                let handle = Unmanaged<CurlEasyHandle>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                let line = UnsafeRawBufferPointer(start: data, count: length)
                return handle.receiver?.receiveHeader(line) == true ? length : 0
            }
            try options.check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.headerFunction, onHeader),
                "HEADERFUNCTION")
            try options.setPointer(CurlABI.headerData, context, "HEADERDATA")
            let onBody: hal_curl_data_callback = { data, size, count, context in
                guard let context else { return 0 }
                let handle = Unmanaged<CurlEasyHandle>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                let bytes = UnsafeRawBufferPointer(start: data, count: length)
                return handle.receiver?.receiveBody(bytes) == true ? length : 0
            }
            try options.check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.writeFunction, onBody), "WRITEFUNCTION")
            try options.setPointer(CurlABI.writeData, context, "WRITEDATA")
        }

        /// libcurl's result for the transfer as an error: `nil` for `CURLE_OK`,
        /// ``TransportError/timedOut`` for `CURLE_OPERATION_TIMEDOUT`, else
        /// ``TransportError/network(_:)`` with libcurl's own words for it.
        func error(for code: Int32) -> TransportError? {
            switch code {
            case CurlABI.ok: return nil
            case CurlABI.operationTimedOut: return .timedOut
            default:
                let detail = String(cString: errorBuffer)
                return .network("curl \(code): \(detail.isEmpty ? library.describe(code) : detail)")
            }
        }
    }

    /// A response head as libcurl's header callback hands it over, one line at a time, for both
    /// transfers: the lines' bytes counted against a limit, the status of the latest status line,
    /// and the fields by lowercased name (repeated ones joined with `, `). A status line starts a
    /// new head (after a 1xx): the previous head's fields go, their bytes still count.
    struct CurlResponseHead {
        /// What one header line was.
        enum Line: Equatable {
            /// The lines so far are above ``limit``: the transfer fails with
            /// ``TransportError/responseTooLarge(limit:)``.
            case overLimit
            /// A status line (`HTTP/…`): a new head begins.
            case statusLine
            /// A field, its name lowercased and both sides trimmed (already in ``fields``).
            case field(name: String, value: String)
            /// The blank line that ends a head (a 1xx head is followed by another).
            case end
            /// Anything else (no colon, an empty name): ignored.
            case other
        }

        /// The most header bytes accepted in all (0: no limit).
        let limit: Int
        /// Header bytes received so far, every head of the response included.
        private(set) var receivedBytes = 0
        /// The status of the latest status line (0 until one arrived, or when it has none).
        private(set) var status = 0
        /// The current head's fields by lowercased name.
        private(set) var fields: [String: String] = [:]

        /// A head accumulator that accepts up to `limit` header bytes (0: any number).
        init(limit: Int) {
            self.limit = limit
        }

        /// Takes one raw header line and says what it was.
        mutating func receive(_ line: UnsafeRawBufferPointer) -> Line {
            receivedBytes += line.count
            if limit > 0, receivedBytes > limit { return .overLimit }
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.hasPrefix("HTTP/") {
                let parts = text.split(separator: " ", maxSplits: 2)
                status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
                fields = [:]
                return .statusLine
            }
            if text.isEmpty { return .end }
            guard let colon = text.firstIndex(of: ":") else { return .other }
            let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return .other }
            let key = name.lowercased()
            fields[key] = fields[key].map { $0 + ", " + value } ?? value
            return .field(name: key, value: value)
        }
    }
#endif
