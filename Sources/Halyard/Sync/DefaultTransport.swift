import Foundation

/// The transport a client uses when ``FlagClientOptions/transport`` is `nil`: ``CurlTransport``
/// where libcurl is linked (Linux), ``URLSessionTransport`` elsewhere (Apple platforms).
/// `options.transport = URLSessionTransport()` selects URLSession on Linux too.
func makeDefaultTransport() -> any FlagTransport {
    #if canImport(CCurl)
        CurlTransport()
    #else
        URLSessionTransport()
    #endif
}
