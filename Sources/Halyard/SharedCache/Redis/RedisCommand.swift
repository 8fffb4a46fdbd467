/// One Redis command: its name and arguments as bulk strings (binary-safe), and its RESP2
/// encoding (an array of bulk strings).
///
/// ```swift
/// let set = RedisCommand.set(Array("k".utf8), Array("v".utf8), expiry: .seconds(30), onlyIfAbsent: true)
/// var bytes: [UInt8] = []
/// set.encode(into: &bytes)   // *6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$5\r\n30000\r\n$2\r\nNX\r\n
/// ```
package struct RedisCommand: Sendable, Hashable {
    /// The name first, then the arguments.
    package var arguments: [[UInt8]]

    /// A command from its name and arguments.
    package init(_ name: String, _ arguments: [[UInt8]] = []) {
        self.arguments = [Array(name.utf8)] + arguments
    }

    /// The lease's compare-and-delete: deletes `KEYS[1]` only while it still holds `ARGV[1]`
    /// (the token of the pod that took it), so a lease that lapsed and was taken by another
    /// pod is never released by the first (SPEC §15).
    package static let compareAndDeleteScript =
        "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"

    /// `GET key`.
    package static func get(_ key: [UInt8]) -> RedisCommand { RedisCommand("GET", [key]) }

    /// `SET key value PX ms [NX]`: the expiry in whole milliseconds, rounded up, at least 1.
    package static func set(_ key: [UInt8], _ value: [UInt8], expiry: Duration, onlyIfAbsent: Bool = false)
        -> RedisCommand
    {
        var arguments = [key, value, Array("PX".utf8), Array(String(milliseconds(expiry)).utf8)]
        if onlyIfAbsent { arguments.append(Array("NX".utf8)) }
        return RedisCommand("SET", arguments)
    }

    /// `DEL key…`.
    package static func del(_ keys: [[UInt8]]) -> RedisCommand { RedisCommand("DEL", keys) }

    /// `EVAL script numkeys key… arg…`.
    package static func eval(_ script: String, keys: [[UInt8]], arguments: [[UInt8]]) -> RedisCommand {
        RedisCommand("EVAL", [Array(script.utf8), Array(String(keys.count).utf8)] + keys + arguments)
    }

    /// The lease's compare-and-delete (``compareAndDeleteScript``).
    package static func compareAndDelete(_ key: [UInt8], token: [UInt8]) -> RedisCommand {
        eval(compareAndDeleteScript, keys: [key], arguments: [token])
    }

    /// `AUTH [user] password`.
    package static func auth(user: String?, password: RedisSecret) -> RedisCommand {
        RedisCommand("AUTH", (user.map { [Array($0.utf8)] } ?? []) + [Array(password.value.utf8)])
    }

    /// `SELECT db`.
    package static func select(_ database: Int) -> RedisCommand {
        RedisCommand("SELECT", [Array(String(database).utf8)])
    }

    /// `PING`.
    package static let ping = RedisCommand("PING")

    /// A duration in whole milliseconds, rounded up, at least 1 (`PX 0` is refused by Redis) and
    /// at most `Int64.max / 2` (Redis refuses an expiry that overflows its clock when added).
    package static func milliseconds(_ duration: Duration) -> Int64 {
        min(max(duration.saturatingMillisecondsRoundedUp, 1), Int64.max / 2)
    }

    /// Appends the RESP2 form: `*N`, then `$len` and the bytes of each argument.
    package func encode(into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "*"))
        bytes.append(contentsOf: String(arguments.count).utf8)
        bytes.append(contentsOf: [13, 10])
        for argument in arguments {
            bytes.append(UInt8(ascii: "$"))
            bytes.append(contentsOf: String(argument.count).utf8)
            bytes.append(contentsOf: [13, 10])
            bytes.append(contentsOf: argument)
            bytes.append(contentsOf: [13, 10])
        }
    }

    /// The command's name, for errors and logs (never an argument: a value or a password).
    package var name: String { String(decoding: arguments.first ?? [], as: UTF8.self) }
}
