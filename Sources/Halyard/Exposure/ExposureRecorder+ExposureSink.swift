package import CHalyardAtomics

extension ExposureRecorder: ExposureSink {
    /// The coarse clock word the read fast path compares exposure slots with.
    package var recordsReads: Bool { isEnabled }
    package var coarseClockWord: UnsafePointer<hal_atomic_word> { UnsafePointer(coarseClock.word) }
}
