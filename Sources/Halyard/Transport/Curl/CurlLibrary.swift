#if canImport(CHalyardCurl)
    import CHalyardCurl

    /// libcurl, loaded at run time: `dlopen` of `libcurl.so.4` (then `libcurl.so`), every function
    /// Halyard calls resolved once into a table (`CHalyardCurl`), and the version checked against
    /// what Halyard relies on. No libcurl header or `-dev` package is needed to build Halyard; the
    /// run-time library is the one FoundationNetworking itself links (Debian/Ubuntu `libcurl4`).
    ///
    /// `@unchecked Sendable`: the table is written once by `hal_curl_open` and only read after;
    /// libcurl's functions are thread-safe on distinct handles (Halyard never shares an easy or
    /// multi handle between threads at once, see ``CurlMulti``).
    final class CurlLibrary: @unchecked Sendable {
        /// The resolved function table (`hal_curl *`), alive for the life of the process.
        let api: OpaquePointer
        /// The library's version string, e.g. `7.88.1`.
        let version: String
        /// `0xXXYYZZ`.
        let versionNumber: UInt32
        /// Whether `CURLOPT_PROTOCOLS_STR` exists (7.85.0); older libraries get the bit mask.
        let hasProtocolsString: Bool

        /// The names tried, in order, by the process's shared library.
        static let defaultNames = ["libcurl.so.4", "libcurl.so"]

        /// The process's libcurl: loaded, checked and globally initialised once, on first use.
        static let shared: Result<CurlLibrary, CurlUnavailable> = load(names: defaultNames).flatMap { library in
            initialize(library) { hal_curl_global_init(library.api, CurlABI.globalAll) }
        }

        /// Runs `globalInit` (`curl_global_init`) serialized with FoundationNetworking's own calls
        /// (``LibcurlGlobalInit``) and checks its result: a library that cannot initialise is not
        /// used (the default transport falls back to URLSession, with one log line saying why).
        static func initialize(_ library: CurlLibrary, globalInit: () -> Int32) -> Result<CurlLibrary, CurlUnavailable>
        {
            let code = LibcurlGlobalInit.serialized(globalInit)
            guard code == CurlABI.ok else {
                return .failure(
                    CurlUnavailable(
                        reason: "curl_global_init failed (libcurl \(library.version)): \(library.describe(code))"))
            }
            return .success(library)
        }

        private init(api: OpaquePointer, version: String, versionNumber: UInt32) {
            self.api = api
            self.version = version
            self.versionNumber = versionNumber
            hasProtocolsString = versionNumber >= CurlABI.protocolsStringVersion
        }

        /// Loads the first of `names` that opens, resolves and passes ``unsupportedReason(versionNumber:features:)``.
        /// A library that loads but is refused is closed again. The failure names every attempt.
        static func load(names: [String]) -> Result<CurlLibrary, CurlUnavailable> {
            var reasons: [String] = []
            for name in names {
                var error = [CChar](repeating: 0, count: 512)
                guard let api = hal_curl_open(name, &error, error.count) else {
                    reasons.append(
                        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                    continue
                }
                let number = hal_curl_version_num(api)
                let version = hal_curl_version_string(api).map { String(cString: $0) } ?? "?"
                if let refusal = unsupportedReason(versionNumber: number, features: hal_curl_version_features(api)) {
                    reasons.append("\(name) is libcurl \(version): \(refusal)")
                    hal_curl_close(api)
                    continue
                }
                return .success(CurlLibrary(api: api, version: version, versionNumber: number))
            }
            return .failure(
                CurlUnavailable(reason: reasons.isEmpty ? "no library name given" : reasons.joined(separator: "; ")))
        }

        /// Why a libcurl of this version and these features cannot carry Halyard's requests, or
        /// `nil` when it can: 7.68.0 or newer (`curl_multi_poll`, `curl_multi_wakeup`), with TLS.
        static func unsupportedReason(versionNumber: UInt32, features: Int32) -> String? {
            if versionNumber < CurlABI.minimumVersion {
                return "older than 7.68.0, the oldest Halyard uses"
            }
            if features & CurlABI.featureSSL == 0 { return "built without TLS" }
            return nil
        }

        /// The text of a `CURLcode`.
        func describe(_ code: Int32) -> String {
            hal_curl_easy_strerror(api, code).map { String(cString: $0) } ?? "CURLcode \(code)"
        }
    }

    /// Why the libcurl transport cannot be used in this process (the default transport then falls
    /// back to ``URLSessionTransport``).
    struct CurlUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
        /// What failed: the `dlopen` error, a missing function, the version, `curl_multi_init`.
        var reason: String

        var description: String { reason }
    }
#endif
