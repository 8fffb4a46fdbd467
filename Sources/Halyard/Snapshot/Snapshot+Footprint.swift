extension Snapshot {
    /// An honest estimate of the heap bytes this snapshot keeps alive, for caches bounded by
    /// bytes (the service's context cache; docs/service.md, "How bytes are counted").
    ///
    /// Every heap block is counted with malloc's rounding (16-byte granules, 16 bytes of
    /// header): the object itself, the entries, the details (the flags: a buffer of references
    /// and one object per flag) and exposure slots, the key table's slots and arena, and what
    /// each served flag owns — strings longer than 15 UTF-8 bytes (shorter ones are stored
    /// inline), JSON values (arrays and objects recursively) and metadata dictionaries. A
    /// detail a ``DetailInterner`` shares is counted by the interner, not here. `halyard-bench-service` compares the estimate with the bytes
    /// malloc actually handed out. With `keysShared`, the flag keys are taken as interned
    /// (one copy shared by many snapshots, counted by their owner) and not counted here; a
    /// shared key table (``tableShared``) is counted by its interner, not here.
    package func estimatedBytes(keysShared: Bool = false) -> Int {
        var total = Self.block(192)  // the object: header, fields, the table's words
        total += Self.block(max(count, 1) * MemoryLayout<Entry>.stride)
        total += Self.block(max(count, 1) * MemoryLayout<EvaluationDetail>.stride)
        total += Self.block(max(count, 1) * MemoryLayout<UInt>.stride)
        if !tableShared { total += Self.block(table.allocatedBytes) }
        total += Self.stringBytes(contextFingerprint) + Self.stringBytes(etag)
        // A shared detail (``DetailInterner``) is counted by its interner, not here.
        for index in 0..<count where !details[index].interned {
            total += details[index].estimatedBytes(keyShared: keysShared)
        }
        return total
    }

    /// A malloc block holding `bytes`: 16 bytes of header, rounded up to 16.
    static func block(_ bytes: Int) -> Int { 16 + (bytes + 15) / 16 * 16 }

    /// Heap bytes of a native Swift string: none up to 15 UTF-8 bytes (small strings are inline).
    static func stringBytes(_ string: String?) -> Int {
        guard let string else { return 0 }
        let count = string.utf8.count
        return count <= 15 ? 0 : block(32 + count + 1)
    }

    /// Heap bytes of a JSON value beyond its inline enum payload.
    static func jsonBytes(_ value: JSONValue) -> Int {
        switch value {
        case .null, .bool, .int, .double: return 0
        case .string(let s): return stringBytes(s)
        case .array(let items):
            return block(32 + items.count * MemoryLayout<JSONValue>.stride) + items.reduce(0) { $0 + jsonBytes($1) }
        case .object(let members):
            var total = block(64 + members.count * 4 / 3 * (16 + MemoryLayout<JSONValue>.stride))
            for (name, item) in members { total += stringBytes(name) + jsonBytes(item) }
            return total
        }
    }
}

extension EvaluationDetail {
    /// The heap bytes of this detail: its block and what its fields own (the key's only when
    /// `keyShared` is false), estimated as ``Snapshot/estimatedBytes(keysShared:)`` does.
    func estimatedBytes(keyShared: Bool) -> Int {
        var total = Snapshot.block(Self.instanceBytes)
        if !keyShared { total += Snapshot.stringBytes(key) }
        total += Snapshot.stringBytes(variant) + Snapshot.stringBytes(errorMessage)
        total += Snapshot.stringBytes(reason.rawValue)
        if let value { total += Snapshot.jsonBytes(value) }
        if !metadata.isEmpty {
            // A native dictionary: header plus buckets of (String, value) at ~75 % load.
            total += Snapshot.block(64 + metadata.count * 4 / 3 * 48)
            for (name, value) in metadata {
                total += Snapshot.stringBytes(name)
                if case .string(let s) = value { total += Snapshot.stringBytes(s) }
            }
        }
        return total
    }
}
