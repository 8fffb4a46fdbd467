/// A batch taken for upload, with the idempotency key it keeps across retries.
package struct ExposureBatch: Sendable, Hashable {
    /// The `Idempotency-Key` header value, the same on every attempt.
    package var idempotencyKey: String
    /// The events, oldest first (at most `batchSize`).
    package var events: [ExposureEvent]
    /// How many times it has been sent (counting the attempt in progress).
    package var attempts: Int
}
