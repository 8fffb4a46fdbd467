import Foundation

#if canImport(Darwin)
    import Darwin
#else
    import Glibc
#endif

/// A TCP socket listening on 127.0.0.1 on a port the kernel picks: the piece every hand-made
/// test server starts from (`ScriptedRESPServer`, `SilentListener`).
enum LoopbackListener {
    /// Opens, binds and listens with `backlog`; returns the descriptor (the caller closes it)
    /// and the port. Throws ``RedisServerError`` when a step fails (nothing is left open).
    static func open(backlog: Int32) throws -> (descriptor: Int32, port: Int) {
        #if canImport(Darwin)
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard descriptor >= 0 else { throw RedisServerError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, backlog) == 0 else {
            close(descriptor)
            throw RedisServerError("bind or listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }
}
