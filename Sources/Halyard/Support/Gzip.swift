import CZlib
package import Foundation

// The package's one zlib codec: gzip compression (exposure uploads) and bounded, streaming
// inflation (HTTP response bodies, tests).

/// Gzip compression through zlib (`deflateInit2_` with windowBits 15 + 16 = gzip wrapper).
///
/// Keeps one `z_stream` and resets it (`deflateReset`) between bodies instead of allocating
/// zlib's ~256 KiB of state per body (see `docs/benchmarks-exposures.md` for the measured
/// difference). Not thread-safe: one compressor per drain (the recorder guards it).
package final class GzipCompressor {
    private var stream = z_stream()
    private var initialized = false
    /// The zlib compression level (0–9, or -1 for zlib's default, 6).
    package let level: Int32
    /// Whether the stream is reset and reused between calls (`false` re-initialises every time,
    /// for the benchmark's comparison).
    package let reusesStream: Bool

    /// Creates a compressor.
    package init(level: Int32 = Z_DEFAULT_COMPRESSION, reusesStream: Bool = true) {
        self.level = level
        self.reusesStream = reusesStream
    }

    deinit {
        if initialized { deflateEnd(&stream) }
    }

    private func prepare() -> Bool {
        if initialized {
            if reusesStream, deflateReset(&stream) == Z_OK { return true }
            deflateEnd(&stream)
            initialized = false
        }
        stream = z_stream()
        let rc = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        initialized = rc == Z_OK
        return initialized
    }

    /// The gzip member for `input`, or `nil` if zlib failed (out of memory) or the input is
    /// larger than 4 GiB.
    package func compress(_ input: [UInt8]) -> [UInt8]? {
        guard input.count < Int(UInt32.max), prepare() else { return nil }
        let bound = Int(deflateBound(&stream, UInt(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var rc: Int32 = Z_OK
        var produced = 0
        input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                rc = deflate(&stream, Z_FINISH)
                produced = outBuf.count - Int(stream.avail_out)
                stream.next_in = nil
                stream.next_out = nil
            }
        }
        guard rc == Z_STREAM_END else {
            deflateEnd(&stream)
            initialized = false
            return nil
        }
        if !reusesStream {
            deflateEnd(&stream)
            initialized = false
        }
        output.removeLast(output.count - produced)
        return output
    }
}

/// Why a gzip body could not be inflated.
package enum GzipError: Error, Sendable, Hashable {
    /// The inflated bytes would pass the limit; inflation stopped at the limit.
    case tooLarge(limit: Int)
    /// The bytes are not a complete, valid gzip (or zlib) stream.
    case invalid
}

/// Streaming, bounded gzip/zlib inflation (`inflateInit2_` with windowBits 15 + 32: auto-detects
/// the wrapper), the one decompressor of the package: HTTP bodies, tests and tools.
///
/// Feed it the compressed bytes as they arrive with ``append(_:)`` and take the result with
/// ``finish()``. It never holds more than `limit` inflated bytes (plus one 64 KiB scratch buffer):
/// the first chunk that would pass the limit fails with ``GzipError/tooLarge(limit:)`` and nothing
/// more is inflated, so a body is never inflated twice to find out why it failed. After the end of
/// the stream, further bytes are ignored (as zlib's own gzip readers do for trailing garbage).
/// Not thread-safe: one inflater per body.
package final class GzipInflater {
    private var stream = z_stream()
    private var initialized = false
    private var ended = false
    private var failure: GzipError?
    private var scratch = [UInt8](repeating: 0, count: 64 << 10)
    /// The most inflated bytes accepted (`Int.max` when created with a limit of 0 or less).
    package let limit: Int
    /// The inflated bytes so far.
    package private(set) var output = Data()
    /// Whether any compressed byte was fed.
    package private(set) var sawInput = false

    /// Creates an inflater that refuses more than `limit` inflated bytes (`limit <= 0`: no limit).
    package init(limit: Int) {
        self.limit = limit > 0 ? limit : Int.max
        initialized = inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        if !initialized { failure = .invalid }
    }

    deinit {
        if initialized { inflateEnd(&stream) }
    }

    /// Whether the end of the compressed stream was reached.
    package var isComplete: Bool { ended }

    /// Inflates the next compressed bytes.
    package func append(_ bytes: UnsafeRawBufferPointer) throws(GzipError) {
        if let failure { throw failure }
        guard !ended, bytes.count > 0 else { return }
        sawInput = true
        var rest = bytes
        while !rest.isEmpty, !ended {
            // avail_in is 32 bits: feed at most 1 GiB at a time.
            let piece = UnsafeRawBufferPointer(rebasing: rest.prefix(1 << 30))
            try inflatePiece(piece)
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(piece.count - Int(stream.avail_in)))
            stream.avail_in = 0
            stream.next_in = nil
        }
    }

    /// Inflates the next compressed bytes.
    package func append(_ data: Data) throws(GzipError) {
        let result: Result<Void, GzipError> = data.withUnsafeBytes { raw in
            do throws(GzipError) { try append(raw) } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }

    private func inflatePiece(_ piece: UnsafeRawBufferPointer) throws(GzipError) {
        guard let base = piece.baseAddress else { return }
        stream.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = UInt32(piece.count)
        while true {
            var produced = 0
            let rc: Int32 = scratch.withUnsafeMutableBufferPointer { out in
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                let rc = inflate(&stream, Z_NO_FLUSH)
                produced = out.count - Int(stream.avail_out)
                stream.next_out = nil
                return rc
            }
            if produced > limit - output.count {
                failure = .tooLarge(limit: limit)
                throw .tooLarge(limit: limit)
            }
            output.append(contentsOf: scratch[0..<produced])
            switch rc {
            case Z_STREAM_END:
                ended = true
                return
            case Z_OK:
                // zlib stops when it runs out of input or of output space; out of input: done.
                if stream.avail_in == 0 && stream.avail_out > 0 { return }
            case Z_BUF_ERROR where stream.avail_in == 0:
                return  // needs more input
            default:
                failure = .invalid
                throw .invalid
            }
        }
    }

    /// The inflated body; ``GzipError/invalid`` when the stream stopped before its end (an empty
    /// input inflates to an empty body).
    package func finish() throws(GzipError) -> Data {
        if let failure { throw failure }
        guard ended || !sawInput else { throw .invalid }
        return output
    }
}

/// One-shot helpers over ``GzipCompressor`` and ``GzipInflater``.
package enum Gzip {
    /// Compresses `data` into one gzip member (tests, tools and the in-memory control plane).
    package static func compress(_ data: Data) -> Data {
        GzipCompressor().compress([UInt8](data)).map { Data($0) } ?? Data()
    }

    /// Inflates a whole gzip (or zlib) body of at most `limit` inflated bytes (`limit <= 0`: no
    /// limit). An empty input is invalid here (a body, unlike a stream, must hold a member).
    package static func inflate(_ data: Data, limit: Int) throws(GzipError) -> Data {
        guard !data.isEmpty else { throw .invalid }
        let inflater = GzipInflater(limit: limit)
        try inflater.append(data)
        return try inflater.finish()
    }

    /// ``inflate(_:limit:)`` for byte arrays.
    package static func inflate(_ bytes: [UInt8], limit: Int = 64 << 20) throws(GzipError) -> [UInt8] {
        [UInt8](try inflate(Data(bytes), limit: limit))
    }
}
