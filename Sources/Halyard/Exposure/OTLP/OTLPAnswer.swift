package import Foundation

/// An OTLP receiver's protobuf answers.
package enum OTLPAnswer {
    /// The `partial_success` (field 1) of an `ExportLogsServiceResponse`: `rejected_log_records`
    /// (field 1, int64) and `error_message` (field 2); nil when the body is empty, malformed or
    /// reports nothing.
    package static func partialSuccess(protobuf body: Data) -> ExposureUploadOutcome? {
        guard !body.isEmpty else { return nil }
        var reader = ProtobufReader(Array(body))
        var rejected: Int64 = 0
        var message: String?
        do {
            while let (field, value) = try reader.next() {
                guard field == 1, case .bytes(let inner) = value else { continue }
                var partial = ProtobufReader(inner)
                while let (f, v) = try partial.next() {
                    switch (f, v) {
                    case (1, .varint(let n)): rejected = Int64(bitPattern: n)
                    case (2, .bytes(let text)):
                        let m = String(decoding: text, as: UTF8.self)
                        message = m.isEmpty ? nil : m
                    default: continue
                    }
                }
            }
        } catch {
            return nil
        }
        let count = Int(clamping: max(0, min(rejected, 1_000_000_000_000_000)))
        if count == 0 && message == nil { return nil }
        return .partiallyDelivered(rejected: count, errorMessage: message)
    }

    /// The `message` (field 2) of a `google.rpc.Status`, cut to 512 characters; nil when the body
    /// is not such a message or has none.
    package static func statusMessage(protobuf body: Data) -> String? {
        guard !body.isEmpty else { return nil }
        var reader = ProtobufReader(Array(body))
        var message: String?
        do {
            while let (field, value) = try reader.next() {
                if field == 2, case .bytes(let text) = value {
                    message = String(decoding: text, as: UTF8.self)
                }
            }
        } catch {
            return nil
        }
        guard let message, !message.isEmpty else { return nil }
        return String(message.prefix(512))
    }
}
