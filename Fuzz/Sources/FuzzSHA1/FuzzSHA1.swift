// libFuzzer harness: Halyard's SHA-1 against libcrypto's, one-shot and incremental.
import CCrypto
@_spi(Fuzzing) import Halyard

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: count)

    var expected = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    let ok = expected.withUnsafeMutableBufferPointer { out in
        EVP_Digest(data, count, out.baseAddress, &length, EVP_sha1(), nil)
    }
    precondition(ok == 1 && length == 20, "EVP_Digest failed")
    expected.removeLast(expected.count - 20)

    let oneShot = SHA1.hash(UnsafeBufferPointer(start: data.assumingMemoryBound(to: UInt8.self), count: count))
    precondition(oneShot == expected, "SHA-1 differs from libcrypto (one-shot, \(count) bytes)")

    // Incremental: split at a point derived from the input itself.
    let split = count == 0 ? 0 : Int(input[0]) % (count + 1)
    var hasher = SHA1()
    hasher.update(UnsafeRawBufferPointer(rebasing: input[0..<split]))
    hasher.update(UnsafeRawBufferPointer(rebasing: input[split...]))
    precondition(hasher.finalize() == expected, "SHA-1 differs from libcrypto (split at \(split) of \(count))")
    return 0
}
