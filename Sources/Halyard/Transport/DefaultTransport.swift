import Foundation

/// The transport a client uses when ``FlagClientOptions/transport`` is `nil`: ``CurlTransport``
/// where libcurl loads (Linux), ``URLSessionTransport`` elsewhere (Apple platforms) and when it
/// does not (no `libcurl.so.4`, a libcurl older than 7.68 or without TLS, `curl_multi_init`
/// failing): then one warning says why, through `logHandler`.
/// `options.transport = URLSessionTransport()` selects URLSession on Linux too. Package-visible:
/// `halyard-bench-service` measures the transport a service gets by default.
package func makeDefaultTransport(logHandler: HalyardLogRecordHandler? = nil) -> any FlagTransport {
    #if canImport(CHalyardCurl)
        switch CurlMulti.shared {
        case .success: return CurlTransport()
        case .failure(let why): return fallbackTransport(why, logHandler: logHandler)
        }
    #else
        URLSessionTransport()
    #endif
}

#if canImport(CHalyardCurl)
    /// The default transport when libcurl is looked for under `libraryNames` instead of the
    /// process's libcurl (tests of the fallback): a curl transport on its own multi handle, or the
    /// URLSession fallback.
    func makeDefaultTransport(libraryNames: [String], logHandler: HalyardLogRecordHandler?) -> any FlagTransport {
        let multi = CurlLibrary.load(names: libraryNames).flatMap { library in
            Result { () throws(CurlUnavailable) in try CurlMulti(library: library) }
        }
        switch multi {
        case .success(let multi): return CurlTransport(multi: multi)
        case .failure(let why): return fallbackTransport(why, logHandler: logHandler)
        }
    }

    private func fallbackTransport(_ why: CurlUnavailable, logHandler: HalyardLogRecordHandler?) -> any FlagTransport {
        logHandler?(
            HalyardLogRecord(
                .warning, "libcurl transport unavailable (\(why.reason)); using URLSessionTransport", .transport,
                [HalyardLogRecord.Key.reason: "libcurl_unavailable"]))
        return URLSessionTransport()
    }
#endif
