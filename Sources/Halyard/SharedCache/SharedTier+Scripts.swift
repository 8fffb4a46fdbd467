/// The Lua scripts a ``SharedTier`` runs in Redis: the waiter's poll and the ordered write
/// (docs/fleet.md, "Ordered writes").
extension SharedTier {
    /// The waiter's poll: `1` while the lease (`KEYS[1]`) is held, else the entry (`KEYS[2]`,
    /// or nil).
    static let pollScript = "if redis.call('exists',KEYS[1])==1 then return 1 end return redis.call('get',KEYS[2])"

    /// The ordered write (docs/fleet.md, "Ordered writes"): `SET KEYS[1] ARGV[1] PX ARGV[2]`
    /// unless the entry there is newer. `ARGV[3]`: the new entry's stamp (wall milliseconds its
    /// request was sent), `ARGV[4]`: 1 when fetched for a named flag-set version, `ARGV[5]`: the
    /// largest lead of a stamp over Redis's clock. Returns 1 (written), 0 (a newer entry kept)
    /// or -1 (the stamp is too far ahead of Redis's clock). An entry held whose own stamp is
    /// too far ahead never blocks a write.
    static let orderedSetScript = """
        local t = redis.call('time')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local stamp, lead = tonumber(ARGV[3]), tonumber(ARGV[5])
        if stamp > now + lead then return -1 end
        local old = redis.call('get', KEYS[1])
        if old then
          local s, v = string.match(old, '^halyard%-shared 2 (%d+) (%d) ')
          s = tonumber(s)
          if s and s <= now + lead and (s > stamp or (s == stamp and tonumber(v) > tonumber(ARGV[4]))) then
            return 0
          end
        end
        redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """

    /// The ordered write of `bytes` (the encoding of `entry`) at `key`.
    static func orderedSet(_ key: [UInt8], _ bytes: [UInt8], entry: SharedEntry, expiry: Duration) -> RedisCommand {
        .eval(
            orderedSetScript, keys: [key],
            arguments: [
                bytes, Array(String(RedisCommand.milliseconds(expiry)).utf8), Array(String(entry.confirmedAt).utf8),
                Array((entry.flagConfig == nil ? "0" : "1").utf8), Array(String(maxStampLead).utf8),
            ])
    }
}
