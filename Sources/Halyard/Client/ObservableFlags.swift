#if canImport(Observation)
    public import Observation

    /// A client's flags for SwiftUI and anything else that uses Observation: every read through
    /// it registers with observation tracking for that flag's key only, and the keys a snapshot
    /// changes are reported as mutations of those keys. A view that reads `checkout.new` is
    /// re-rendered when `checkout.new` changes, not when any other flag does.
    ///
    /// ```swift
    /// @State var flags = ObservableFlags(client)
    ///
    /// var body: some View {
    ///     if flags.bool("checkout.new", default: false) { NewCheckout() } else { Checkout() }
    /// }
    /// ```
    ///
    /// It reads like the client (``FlagReading``: `bool`, `int`, …, the details, with the same
    /// exposures and the same defaults) and reads the client's current snapshot each time: it keeps
    /// no copy of any value. Changes come from ``FlagClient/onChange(_:)`` (its own serial queue),
    /// so observers are told on that queue; SwiftUI schedules its update on the main actor itself.
    /// A read costs the client's read plus the registrar's bookkeeping and one key path made for
    /// the key (a few hundred nanoseconds): on hot paths outside a view, read the client.
    ///
    /// The change subscription ends when the view is released (or when the client closes).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public final class ObservableFlags: FlagReading, Observable {
        /// The client whose flags this reads.
        public let client: FlagClient
        private let registrar = ObservationRegistrar()
        private let subscription = Locked<ChangeSubscription?>(nil)

        /// A view of `client`'s flags whose reads are tracked per key.
        public init(_ client: FlagClient) {
            self.client = client
            let changes = client.onChange { [weak self] keys in self?.changed(keys) }
            subscription.withLock { $0 = changes }
        }

        deinit { subscription.withLock { $0?.cancel() } }

        /// The member a key's observation is registered under: one key path per flag key.
        subscript(observedFlag key: String) -> Bool { true }

        private func access(_ key: String) {
            registrar.access(self, keyPath: \.[observedFlag: key])
        }

        /// Tells the observers of each of `keys` that it changed.
        private func changed(_ keys: Set<String>) {
            for key in keys {
                registrar.withMutation(of: self, keyPath: \.[observedFlag: key]) {}
            }
        }

        /// Not API (``FlagReading``): the client's read, tracked for `key`.
        public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
            access(key)
            return client._readScalar(key, as: kind, default: defaultBits)
        }

        /// Not API (``FlagReading``): the client's read, tracked for `key`.
        public func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?)
            -> _FlagRead
        {
            access(key)
            return client._readDetail(key, as: kind, default: servedDefault)
        }
    }
#endif
