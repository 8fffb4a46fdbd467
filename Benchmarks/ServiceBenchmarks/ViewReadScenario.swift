import BenchmarkSupport
import Foundation
import Halyard

// Section 1, continued: reads on a held view against FlagClient's keyed reads, same flags,
// paired passes.

extension ServiceBench {
    /// Times 200,000 keyed Boolean reads on a view of the warm service and on an offline
    /// FlagClient holding the same values, alternating which goes first each round.
    func viewRead(_ set: WarmSet) async throws -> ViewRead {
        let view = await set.service.flags(for: set.contexts[0])
        let client = try FlagClient(offlineValues: flagValues(targetingKey: "user-0"))
        let keys = routes[0]
        let reads = 200_000
        var viewNs: [Double] = []
        var clientNs: [Double] = []
        var sink = 0
        for round in 0..<(quick ? 7 : 21) {
            for pass in 0..<2 {
                let useView = (pass == 0) == (round % 2 == 0)
                let t0 = nowNanoseconds()
                if useView {
                    for i in 0..<reads where view.bool(keys[i % 10], default: false) { sink &+= 1 }
                } else {
                    for i in 0..<reads where client.bool(keys[i % 10], default: false) { sink &+= 1 }
                }
                let ns = Double(nowNanoseconds() - t0) / Double(reads)
                if useView { viewNs.append(ns) } else { clientNs.append(ns) }
            }
        }
        let ratios = zip(viewNs, clientNs).map { $0 / $1 }
        let ratio = median(ratios)
        print(
            "  ContextFlags.bool vs FlagClient.bool (keyed, same 64 flags): \(fmt(median(viewNs))) vs \(fmt(median(clientNs))) ns/read, ratio \(fmt(ratio, 3))x (IQR \(fmt(percentile(ratios, 0.25), 3))-\(fmt(percentile(ratios, 0.75), 3)); sink \(sink % 2))"
        )
        verdict(
            "ContextFlags keyed read at least as fast as FlagClient's (<= 1.10x, noise)", ratio <= 1.10,
            "\(fmt(ratio, 3))x")
        client.close()
        return ViewRead(viewNs: median(viewNs), clientNs: median(clientNs), ratio: ratio)
    }
}
