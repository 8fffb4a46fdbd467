import CZlib
import Foundation

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

/// Gzip/zlib decompression (`inflateInit2_` with windowBits 15 + 32: auto-detects the wrapper),
/// for tests and tools.
package enum GzipDecompressor {
    /// The decompressed bytes, or `nil` for corrupt or truncated input, or output beyond `limit`.
    package static func decompress(_ input: [UInt8], limit: Int = 64 << 20) -> [UInt8]? {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var rc: Int32 = Z_OK
        input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.avail_in = UInt32(clamping: inBuf.count)
            while true {
                var produced = 0
                chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = UInt32(outBuf.count)
                    rc = inflate(&stream, Z_NO_FLUSH)
                    produced = outBuf.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[0..<produced])
                if rc != Z_OK || output.count > limit { break }
                if stream.avail_in == 0 && produced == 0 { break }
            }
            stream.next_in = nil
            stream.next_out = nil
        }
        guard rc == Z_STREAM_END, output.count <= limit else { return nil }
        return output
    }
}
