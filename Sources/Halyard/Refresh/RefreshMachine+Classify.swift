import Foundation

extension RefreshMachine.Outcome {
    /// The status policy of docs/protocol.md applied to one response: 200 with a body that
    /// decodes → `updated` (with the decoded flags), 304, 400, 401/403, 429, other 2xx and
    /// unparseable or oversized bodies → transient (like a 5xx), anything else → transient with
    /// its status. `Retry-After` is parsed against `wallNow`; `controlPlane` (the base URL)
    /// resolves the advertised event streams (``OFREPResponse/decode(_:limit:controlPlane:)``).
    static func classify(_ response: TransportResponse, maxResponseBytes: Int, wallNow: Date, controlPlane: URL? = nil)
        -> (outcome: RefreshMachine.Outcome, decoded: OFREPResponse?)
    {
        let retryAfter = response.header("Retry-After").flatMap { RetryAfter.parse($0, now: wallNow) }
        switch response.status {
        case 200:
            do {
                let decoded = try OFREPResponse.decode(
                    response.body, limit: maxResponseBytes, controlPlane: controlPlane)
                return (.updated(etag: response.header("ETag")), decoded)
            } catch .tooLarge {
                return (.transient(.tooLarge, retryAfter: nil), nil)
            } catch {
                return (.transient(.invalidBody, retryAfter: nil), nil)
            }
        case 304: return (.notModified, nil)
        case 400: return (.badRequest, nil)
        case 401, 403: return (.unauthorized(status: response.status), nil)
        case 429: return (.rateLimited(retryAfter: retryAfter), nil)
        case 200..<300: return (.transient(.invalidBody, retryAfter: nil), nil)
        default: return (.transient(.status(response.status), retryAfter: retryAfter), nil)
        }
    }
}
