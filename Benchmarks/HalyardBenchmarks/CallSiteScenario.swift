#if os(Linux)
    import BenchmarkSupport
    import Halyard

    // Reads at call sites of their own, in program order (CallSites.swift, generated): the shape
    // of application code, where each `flags.bool("<literal>", default:)` sits at its own place
    // and runs when control reaches it. The designs of the main table reach a key through
    // `read(i)` with `i` from the random sequence; for literal call sites that takes a `switch`
    // (`halyard.bool.literal`), one indirect jump per read that the branch predictor misses,
    // which no application pays. Here the same 1,024 reads of the same sequence run as straight-
    // line code, for the keyed read, the dictionary and handles alike.

    /// `dict[key] ?? false`, out of line as Halyard's keyed read is (its body is in the library).
    @inline(never)
    func callSiteLookup(_ dict: [String: Bool], _ key: String) -> Bool { dict[key] ?? false }

    /// The call sites did not read the workload's values.
    struct CallSiteError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    extension BenchReport {
        /// The call-site scenario: CPU ns per read of each shape and the paired ratios.
        struct CallSites: Codable, Sendable {
            var sites: Int
            var rounds: Int
            var readsPerPass: Int
            var keyedCPUNsPerRead: Double
            var dictionaryCPUNsPerRead: Double
            var handleCPUNsPerRead: Double
            /// Keyed over dictionary, median of the rounds' paired ratios, and its quartiles.
            var keyedToDictionary: Double
            var keyedToDictionaryQ1: Double
            var keyedToDictionaryQ3: Double
            /// Keyed over handles, median of the rounds' paired ratios.
            var keyedToHandle: Double
        }
    }

    extension Bench {
        /// Paired rounds of the three straight-line functions (their order rotates every round),
        /// the reading thread's CPU time. Nil when the generated order is not this run's sequence
        /// (another `--seed`) or a filter leaves out `halyard.bool.literal`.
        func measureCallSites() throws -> BenchReport.CallSites? {
            guard options.selects("halyard.bool.literal") else { return nil }
            guard workload.sequence.prefix(callSiteOrder.count).elementsEqual(callSiteOrder) else {
                progress("call sites: generated for the default --seed; not run")
                return nil
            }
            let flags = try FlagClient(offlineValues: workload.jsonValues(0))
            let dict = workload.dictionary(0)
            let handles = workload.keys.map { flags.handle($0, default: false) }
            let expected = callSiteOrder.filter { workload.values[0][Int($0)] }.count
            let sums = (callSitesKeyed(flags), callSitesDictionary(dict), callSitesHandles(handles))
            guard sums == (expected, expected, expected) else {
                throw CallSiteError(
                    "call sites: keyed \(sums.0), dictionary \(sums.1), handles \(sums.2), expected \(expected)")
            }
            // Passes of about `singlePass` seconds of the slowest shape, the dictionary.
            let c0 = threadCPUNs()
            for _ in 0..<8 { _ = blackHole(callSitesDictionary(dict)) }
            let perCall = max(Double(threadCPUNs() &- c0) / 8, 1)
            let calls = min(max(Int(options.singlePass * 1e9 / perCall), 2), 10_000)
            func pass(_ body: () -> Int) -> Double {
                var sum = 0
                let start = threadCPUNs()
                for _ in 0..<calls { sum &+= body() }
                let cpu = threadCPUNs() &- start
                _ = blackHole(sum)
                return Double(cpu) / Double(calls * callSiteOrder.count)
            }
            var keyed: [Double] = [], dictionary: [Double] = [], handle: [Double] = []
            var toDictionary: [Double] = [], toHandle: [Double] = []
            for round in 0..<options.singleRounds {
                var k = 0.0, d = 0.0, h = 0.0
                for shape in 0..<3 {
                    switch (shape + round) % 3 {
                    case 0: k = pass { callSitesKeyed(flags) }
                    case 1: d = pass { callSitesDictionary(dict) }
                    default: h = pass { callSitesHandles(handles) }
                    }
                }
                keyed.append(k)
                dictionary.append(d)
                handle.append(h)
                toDictionary.append(k / d)
                toHandle.append(k / h)
            }
            let result = BenchReport.CallSites(
                sites: callSiteOrder.count, rounds: options.singleRounds, readsPerPass: calls * callSiteOrder.count,
                keyedCPUNsPerRead: median(keyed), dictionaryCPUNsPerRead: median(dictionary),
                handleCPUNsPerRead: median(handle), keyedToDictionary: median(toDictionary),
                keyedToDictionaryQ1: percentile(toDictionary, 0.25),
                keyedToDictionaryQ3: percentile(toDictionary, 0.75),
                keyedToHandle: median(toHandle))
            progress(
                "call sites: keyed \(fmt(significant: result.keyedCPUNsPerRead)) ns/read, "
                    + "\(fmt(significant: result.keyedToDictionary))x the dictionary, "
                    + "\(fmt(significant: result.keyedToHandle))x handles")
            return result
        }
    }
#endif
