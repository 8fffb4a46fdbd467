import Foundation

extension OnlineSession {
    /// The event streams for these options (up to four, one driver each): only with
    /// ``ChangeDetection/automatic`` and a transport that can stream (else the client polls as
    /// before).
    static func makeStreams(
        options: FlagClientOptions, identity: ClientIdentity, transport: any FlagTransport
    ) -> EventStreamGroup? {
        guard options.changeDetection == .automatic, let streaming = GuardedTransport.streaming(transport) else {
            return nil
        }
        var machine = EventStreamMachine.Configuration()
        machine.pollInterval = max(options.pollInterval, .zero)
        machine.inactivityDelayOverride = options.streamInactivityDelay
        machine.connectTimeout = options.requestTimeout > .zero ? options.requestTimeout : .seconds(10)
        return EventStreamGroup(
            configuration: .init(machine: machine, identity: identity), transport: streaming, clock: options.clock,
            logHandler: options.logSink)
    }
}
