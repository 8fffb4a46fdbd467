#if os(Linux)
    import Foundation
    import Halyard

    // Reads with exposure recording on, every flag already exposed in the current window: the
    // common case the exposure fast path is for (at most about 2 ns more than recording off).
    // The client is built with Halyard's package-level initializer (the benchmark is in the same
    // package) so no network is involved: the recorder uploads into a transport that answers 202.

    /// Answers every upload 202 without sending anything.
    struct AcceptingTransport: FlagTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 202) }
    }

    /// A client whose exposure recorder is on, publishing snapshots built like the sync engine's
    /// (variants, a context fingerprint, exposure slots inherited across swaps).
    final class ExposedClient: @unchecked Sendable {
        let flags: FlagClient
        let recorder: ExposureRecorder
        let served: [[ServedFlag]]

        init(_ w: Workload) {
            var options = ExposureOptions()
            options.dedupWindow = .seconds(3600)
            options.flushInterval = .zero
            recorder = ExposureRecorder(
                options: options, clock: SystemClock(), transport: AcceptingTransport(),
                endpoint: URL(string: "http://127.0.0.1:9")!,
                meta: ExposureMeta(sdk: "halyard-bench", version: "1", appId: "bench", installId: "bench"),
                startsTicker: false)
            flags = FlagClient(mode: .online, exposureSink: recorder)
            served = (0..<2).map { set in
                zip(w.keys, w.values[set]).map { key, value in
                    ServedFlag(key: key, value: .bool(value), variant: value ? "on" : "off", reason: .targetingMatch)
                }
            }
            publish(0)
            // Expose every flag once: from here on each read is "already exposed in the window".
            for key in w.keys { _ = flags.bool(key, default: false) }
        }

        func publish(_ generation: Int) {
            let snapshot = Snapshot(
                flags: served[generation & 1], source: .network, contextFingerprint: "bench-context")
            if let previous = flags.store.currentSnapshot { snapshot.inheritExposureSlots(from: previous) }
            flags.store.publish(snapshot)
        }
    }

    /// `flags.bool(key, default:)` with exposures on and already recorded.
    final class HalyardKeyedBoolExposed: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let client: ExposedClient
        let flags: FlagClient
        init(_ w: Workload) {
            keys = w.keys
            client = ExposedClient(w)
            flags = client.flags
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.bool(keys[i], default: false) }
        func publish(_ generation: Int) { client.publish(generation) }
    }

    /// `handles[i].value` with exposures on and already recorded (handles in an array, as in
    /// ``HalyardHandleArray``).
    final class HalyardHandleBoolExposed: ReadDesign, @unchecked Sendable {
        let client: ExposedClient
        let handles: [FlagHandle<Bool>]
        init(_ w: Workload) {
            client = ExposedClient(w)
            let flags = client.flags
            handles = w.keys.map { flags.handle($0, default: false) }
            for handle in handles { _ = handle.value }
        }
        @inline(__always) func read(_ i: Int) -> Bool { handles[i].value }
        func publish(_ generation: Int) { client.publish(generation) }
    }
#endif
