#if canImport(CHalyardCurl)
    /// The libcurl numbers Halyard uses, declared here because libcurl's headers are not needed
    /// to build Halyard (docs/protocol.md, "Transports"). They are libcurl's ABI: an option's number
    /// is its type base (`long` 0, object/string/list 10000, function 20000, `curl_off_t` 30000)
    /// plus its index, and never changes once released.
    enum CurlABI {
        // MARK: Easy options (CURLoption)

        /// `CURLOPT_WRITEDATA` (pointer).
        static let writeData: Int32 = 10_001
        /// `CURLOPT_URL` (string).
        static let url: Int32 = 10_002
        /// `CURLOPT_ERRORBUFFER` (pointer to `CURL_ERROR_SIZE` bytes).
        static let errorBuffer: Int32 = 10_010
        /// `CURLOPT_WRITEFUNCTION` (function).
        static let writeFunction: Int32 = 20_011
        /// `CURLOPT_LOW_SPEED_LIMIT` (long, bytes per second).
        static let lowSpeedLimit: Int32 = 19
        /// `CURLOPT_LOW_SPEED_TIME` (long, seconds).
        static let lowSpeedTime: Int32 = 20
        /// `CURLOPT_HTTPHEADER` (slist).
        static let httpHeader: Int32 = 10_023
        /// `CURLOPT_HEADERDATA` (pointer).
        static let headerData: Int32 = 10_029
        /// `CURLOPT_CUSTOMREQUEST` (string).
        static let customRequest: Int32 = 10_036
        /// `CURLOPT_NOPROGRESS` (long).
        static let noProgress: Int32 = 43
        /// `CURLOPT_NOBODY` (long).
        static let noBody: Int32 = 44
        /// `CURLOPT_POST` (long).
        static let post: Int32 = 47
        /// `CURLOPT_FOLLOWLOCATION` (long).
        static let followLocation: Int32 = 52
        /// `CURLOPT_XFERINFODATA` (pointer).
        static let xferInfoData: Int32 = 10_057
        /// `CURLOPT_SSL_VERIFYPEER` (long).
        static let sslVerifyPeer: Int32 = 64
        /// `CURLOPT_CAINFO` (string).
        static let caInfo: Int32 = 10_065
        /// `CURLOPT_MAXREDIRS` (long).
        static let maxRedirects: Int32 = 68
        /// `CURLOPT_HEADERFUNCTION` (function).
        static let headerFunction: Int32 = 20_079
        /// `CURLOPT_HTTPGET` (long).
        static let httpGet: Int32 = 80
        /// `CURLOPT_SSL_VERIFYHOST` (long).
        static let sslVerifyHost: Int32 = 81
        /// `CURLOPT_HTTP_VERSION` (long).
        static let httpVersion: Int32 = 84
        /// `CURLOPT_NOSIGNAL` (long).
        static let noSignal: Int32 = 99
        /// `CURLOPT_PRIVATE` (pointer).
        static let privateData: Int32 = 10_103
        /// `CURLOPT_MAXFILESIZE_LARGE` (off_t).
        static let maxFileSizeLarge: Int32 = 30_117
        /// `CURLOPT_POSTFIELDSIZE_LARGE` (off_t).
        static let postFieldSizeLarge: Int32 = 30_120
        /// `CURLOPT_TIMEOUT_MS` (long).
        static let timeoutMilliseconds: Int32 = 155
        /// `CURLOPT_CONNECTTIMEOUT_MS` (long).
        static let connectTimeoutMilliseconds: Int32 = 156
        /// `CURLOPT_COPYPOSTFIELDS` (pointer; copied at once, size from POSTFIELDSIZE_LARGE).
        static let copyPostFields: Int32 = 10_165
        /// `CURLOPT_PROTOCOLS` (long bit mask; deprecated by `CURLOPT_PROTOCOLS_STR` in 7.85.0).
        static let protocols: Int32 = 181
        /// `CURLOPT_REDIR_PROTOCOLS` (long bit mask; deprecated in 7.85.0).
        static let redirectProtocols: Int32 = 182
        /// `CURLOPT_XFERINFOFUNCTION` (function).
        static let xferInfoFunction: Int32 = 20_219
        /// `CURLOPT_PROXY` (string): an explicit proxy (tests; users set `https_proxy`).
        static let proxy: Int32 = 10_004
        /// `CURLOPT_SUPPRESS_CONNECT_HEADERS` (long; 7.54.0): a proxy's CONNECT answer
        /// (`HTTP/1.1 200 Connection established`) is not passed to the header callback.
        static let suppressConnectHeaders: Int32 = 265
        /// `CURLOPT_PROTOCOLS_STR` (string; 7.85.0).
        static let protocolsString: Int32 = 10_318
        /// `CURLOPT_REDIR_PROTOCOLS_STR` (string; 7.85.0).
        static let redirectProtocolsString: Int32 = 10_319

        // MARK: Option values

        /// `CURLPROTO_HTTP | CURLPROTO_HTTPS`.
        static let protoHTTPAndHTTPS = 1 | 2
        /// `CURL_HTTP_VERSION_2TLS`: HTTP/2 over TLS when offered, HTTP/1.1 in clear text.
        static let httpVersion2TLS = 4
        /// `CURL_GLOBAL_ALL` (= `CURL_GLOBAL_DEFAULT`).
        static let globalAll = 3
        /// `CURL_ERROR_SIZE`.
        static let errorSize = 256
        /// `CURLPAUSE_RECV`.
        static let pauseReceive: Int32 = 1
        /// `CURLPAUSE_SEND`.
        static let pauseSend: Int32 = 4
        /// `CURLPAUSE_CONT`.
        static let pauseContinue: Int32 = 0
        /// `CURL_WRITEFUNC_PAUSE`: a write callback's result that pauses the transfer.
        static let writeFunctionPause = 0x1000_0001

        // MARK: Infos (CURLINFO)

        /// `CURLINFO_EFFECTIVE_URL` (string).
        static let infoEffectiveURL: Int32 = 0x10_0000 + 1
        /// `CURLINFO_RESPONSE_CODE` (long).
        static let infoResponseCode: Int32 = 0x20_0000 + 2
        /// `CURLINFO_HEADER_SIZE` (long).
        static let infoHeaderSize: Int32 = 0x20_0000 + 11
        /// `CURLINFO_REDIRECT_URL` (string: the absolute `Location` target, not followed).
        static let infoRedirectURL: Int32 = 0x10_0000 + 31

        // MARK: Multi options (CURLMoption)

        /// `CURLMOPT_PIPELINING` (long).
        static let multiPipelining: Int32 = 3
        /// `CURLMOPT_MAX_HOST_CONNECTIONS` (long).
        static let multiMaxHostConnections: Int32 = 7
        /// `CURLPIPE_MULTIPLEX`.
        static let pipeMultiplex = 2

        // MARK: Result codes (CURLcode, CURLMcode)

        /// `CURLE_OK` / `CURLM_OK`.
        static let ok: Int32 = 0
        /// `CURLE_OPERATION_TIMEDOUT`.
        static let operationTimedOut: Int32 = 28

        // MARK: Version

        /// `CURL_VERSION_SSL` in `curl_version_info_data.features`.
        static let featureSSL: Int32 = 1 << 2
        /// The oldest libcurl Halyard uses: 7.68.0 (`curl_multi_poll` 7.66, `curl_multi_wakeup` 7.68).
        static let minimumVersion: UInt32 = 0x07_44_00
        /// The first libcurl with `CURLOPT_PROTOCOLS_STR` (7.85.0); older ones get `CURLOPT_PROTOCOLS`.
        static let protocolsStringVersion: UInt32 = 0x07_55_00
    }
#endif
