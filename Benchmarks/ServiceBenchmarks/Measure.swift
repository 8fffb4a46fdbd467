import CMallocInfo

#if canImport(Glibc)
    import Glibc
#endif

/// The monotonic clock in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`), for timing requests.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Bytes malloc has handed out and not taken back (all arenas, plus mmapped blocks).
func heapBytes() -> Int {
    Int(halyard_heap_bytes())
}
