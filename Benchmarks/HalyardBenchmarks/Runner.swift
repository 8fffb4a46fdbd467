#if os(Linux)
    import CMallocCounter
    import Glibc
    import Synchronization

    /// Keeps a value alive and opaque to the optimizer.
    @inline(never)
    func blackHole(_ x: Int) -> Int { x }

    /// The access sequence in memory that never moves, shared read-only by every thread.
    final class SequenceBuffer: @unchecked Sendable {
        let base: UnsafeMutablePointer<Int32>
        let mask: Int
        init(_ sequence: [Int32]) {
            precondition(sequence.count.nonzeroBitCount == 1)
            base = .allocate(capacity: sequence.count)
            base.initialize(from: sequence, count: sequence.count)
            mask = sequence.count - 1
        }
        deinit { base.deallocate() }
    }

    /// Start/stop signals of one multi-thread pass.
    final class PassControl: Sendable {
        let ready = Atomic<Int>(0)
        let go = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)

        /// Counts the caller as ready, then waits for `go`: yielding, or polling every 20 us
        /// while asleep when `sleeping` (for the real-time publisher).
        func arriveAndWait(sleeping: Bool = false) {
            ready.add(1, ordering: .releasing)
            while !go.load(ordering: .acquiring) {
                if sleeping {
                    halyard_sleep_until_ns(halyard_now_ns() &+ 20_000)
                } else {
                    sched_yield()
                }
            }
        }
    }

    /// What one reader thread reports; written by that thread, read after it is joined.
    final class ReaderSlot: @unchecked Sendable {
        var reads = 0
        var checksum = 0
        var histogram = Histogram()
        /// CPU time this thread spent in the pass (CLOCK_THREAD_CPUTIME_ID), in ns.
        var cpuNs: UInt64 = 0
    }

    /// The calling thread's CPU time in ns: unlike wall time, it does not grow while other
    /// programs on a shared machine hold the core.
    func threadCPUNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// What the publisher reports; written by its thread, read after it is joined.
    final class PublisherSlot: @unchecked Sendable {
        var publishes = 0
        var realtimeError: Int32 = 0
        var lateWakeups = 0  // wake-ups more than one period after their deadline
        var maxLatenessNs: UInt64 = 0
        /// How long each publish call took (ns), to explain what the readers lose to it.
        var publishDurations = Histogram()
    }

    // MARK: - The specialized loops

    /// Times `count` reads on the calling thread from sequence position `start`.
    @inline(never)
    func timedReads<D: ReadDesign>(_ d: D, _ seq: SequenceBuffer, start: Int, count: Int) -> (
        ns: UInt64, cpuNs: UInt64, checksum: Int
    ) {
        let base = seq.base
        let mask = seq.mask
        var sum = 0
        var j = start
        let c0 = threadCPUNs()
        let t0 = halyard_now_ns()
        for _ in 0..<count {
            sum &+= d.read(Int(base[j & mask])) ? 1 : 0
            j &+= 1
        }
        let t1 = halyard_now_ns()
        let c1 = threadCPUNs()
        return (t1 &- t0, c1 &- c0, blackHole(sum))
    }

    /// Reads until `control.stop`, timing batches of `batch` reads into a histogram.
    @inline(never)
    func readerLoop<D: ReadDesign>(
        _ d: D, _ seq: SequenceBuffer, start: Int, batch: Int, control: PassControl, slot: ReaderSlot
    ) {
        let base = seq.base
        let mask = seq.mask
        var histogram = Histogram()
        var sum = 0
        var reads = 0
        var j = start
        control.arriveAndWait()
        let cpu0 = threadCPUNs()
        var t0 = halyard_now_ns()
        while !control.stop.load(ordering: .relaxed) {
            for _ in 0..<batch {
                sum &+= d.read(Int(base[j & mask])) ? 1 : 0
                j &+= 1
            }
            let t1 = halyard_now_ns()
            histogram.record(batchNs: t1 &- t0, reads: batch)
            t0 = t1
            reads &+= batch
        }
        slot.cpuNs = threadCPUNs() &- cpu0
        slot.reads = reads
        slot.checksum = blackHole(sum)
        slot.histogram = histogram
    }

    /// Wakes at absolute deadlines `1/rate` apart (clock_nanosleep TIMER_ABSTIME) on a SCHED_FIFO
    /// thread, and publishes once per wake-up when `swaps` (else only wakes up).
    /// When it does not swap it may instead issue a process-wide membarrier and/or spin `spinNs`
    /// per wake-up (control experiments that mimic parts of a real publish).
    func publisherLoop(
        publish: (Int) -> Void, swaps: Bool, baseline: BaselinePublisher, rate: Int, control: PassControl,
        slot: PublisherSlot
    ) {
        let spinNs = baseline.spinNs
        let membarrier = baseline.membarrier
        // Real-time before the start barrier (so it runs as soon as the pass starts), and
        // waiting there by sleeping: a SCHED_FIFO thread spinning on sched_yield would keep a
        // core from the normal-priority threads it is waiting for.
        slot.realtimeError = halyard_make_current_thread_realtime(20)
        control.arriveAndWait(sleeping: true)
        let period = UInt64(1_000_000_000 / rate)
        var deadline = halyard_now_ns() &+ period
        var generation = 1
        var publishes = 0
        while true {
            halyard_sleep_until_ns(deadline)
            if control.stop.load(ordering: .relaxed) { break }
            let late = halyard_now_ns() &- deadline
            if late > period { slot.lateWakeups += 1 }
            if late > slot.maxLatenessNs { slot.maxLatenessNs = late }
            if swaps {
                let p0 = halyard_now_ns()
                publish(generation)
                slot.publishDurations.record(batchNs: halyard_now_ns() &- p0, reads: 1)
            } else {
                if membarrier { _ = halyard_bench_membarrier() }
                if spinNs > 0 {
                    let end = halyard_now_ns() &+ spinNs
                    while halyard_now_ns() < end {}
                }
            }
            generation &+= 1
            publishes += 1
            deadline &+= period
        }
        slot.publishes = publishes
    }

    // MARK: - Threads

    private final class ThreadBody {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts a joinable pthread running `body`.
    func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { raw in
                let box = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        return thread
    }

    func join(_ thread: pthread_t) { pthread_join(thread, nil) }

    // MARK: - Type erasure (the closures call the specialized loops; nothing dynamic per read)

    /// A design with its loops, erased to closures.
    struct DesignRunner: Sendable {
        let info: DesignInfo
        let timed: @Sendable (_ start: Int, _ count: Int) -> (ns: UInt64, cpuNs: UInt64, checksum: Int)
        let reader: @Sendable (_ start: Int, _ batch: Int, _ control: PassControl, _ slot: ReaderSlot) -> Void
        let publish: @Sendable (Int) -> Void

        init<D: ReadDesign>(_ info: DesignInfo, _ design: D, _ seq: SequenceBuffer) {
            self.info = info
            timed = { start, count in timedReads(design, seq, start: start, count: count) }
            reader = { start, batch, control, slot in
                readerLoop(design, seq, start: start, batch: batch, control: control, slot: slot)
            }
            publish = { generation in design.publish(generation) }
        }
    }

    /// What the unsynchronized baselines' publisher does per wake-up besides waking up.
    struct BaselinePublisher: Sendable {
        var spinNs: UInt64 = 0
        var membarrier = false
    }

    /// The result of one multi-thread pass.
    struct PassResult {
        var readsPerSecond: Double
        var histogram: Histogram
        var publishesPerSecond: Double?
        var lateWakeups: Int
        var maxLatenessNs: UInt64
        var realtimeError: Int32
        var publishDurations: Histogram
        /// Reader CPU time per read (all readers' thread CPU time / all their reads), in ns.
        var cpuNsPerRead: Double = .nan
    }

    /// Runs `threads` readers (and the publisher when `publisher`) for `durationNs`.
    func runPass(
        _ runner: DesignRunner, threads: Int, publisher: Bool, rate: Int, batch: Int, durationNs: UInt64,
        baseline: BaselinePublisher
    ) -> PassResult {
        let control = PassControl()
        let slots = (0..<threads).map { _ in ReaderSlot() }
        var handles: [pthread_t] = []
        for t in 0..<threads {
            let slot = slots[t]
            // Each reader starts at its own place in the shared sequence.
            let start = t &* 977
            handles.append(startThread { runner.reader(start, batch, control, slot) })
        }
        let publisherSlot = PublisherSlot()
        var publisherThread: pthread_t?
        if publisher {
            let swaps = runner.info.publisherSwaps
            let publish = runner.publish
            publisherThread = startThread {
                publisherLoop(
                    publish: publish, swaps: swaps, baseline: baseline, rate: rate, control: control,
                    slot: publisherSlot)
            }
        }
        let expected = threads + (publisher ? 1 : 0)
        while control.ready.load(ordering: .acquiring) < expected { sched_yield() }
        let t0 = halyard_now_ns()
        control.go.store(true, ordering: .releasing)
        halyard_sleep_until_ns(t0 &+ durationNs)
        control.stop.store(true, ordering: .relaxed)
        let t1 = halyard_now_ns()
        for h in handles { join(h) }
        if let p = publisherThread { join(p) }
        let elapsed = t1 &- t0
        var histogram = Histogram()
        var reads = 0
        var cpuNs: UInt64 = 0
        for s in slots {
            histogram.merge(s.histogram)
            reads += s.reads
            cpuNs &+= s.cpuNs
        }
        let seconds = Double(elapsed) / 1e9
        return PassResult(
            readsPerSecond: Double(reads) / seconds,
            histogram: histogram,
            publishesPerSecond: publisher ? Double(publisherSlot.publishes) / seconds : nil,
            lateWakeups: publisherSlot.lateWakeups,
            maxLatenessNs: publisherSlot.maxLatenessNs,
            realtimeError: publisherSlot.realtimeError,
            publishDurations: publisherSlot.publishDurations,
            // nan when no reader got to read (on an overloaded machine a thread may first run
            // after the pass is over); the scaling phase drops such rounds.
            cpuNsPerRead: reads > 0 ? Double(cpuNs) / Double(reads) : .nan
        )
    }
#endif
