import Foundation

/// The LRU list of one namespace's context slots, most recently written first, stored as an
/// entry of its own (`{"slots":["<12 hex>",…],"version":1}`). Unreadable or foreign content is
/// an empty list: the worst outcome is an entry that outlives its place in the list until its
/// slot is written again or it expires (it is never served past the max age).
struct CacheIndex: Sendable, Hashable {
    /// Slot names, most recently written first.
    var slots: [String] = []

    init(slots: [String] = []) { self.slots = slots }

    /// Parses stored bytes; anything unexpected gives an empty index.
    init(data: Data?) { self = Self.parse(data) ?? CacheIndex() }

    /// Parses stored bytes; `nil` when there are none or they are not an index (then the
    /// index is rebuilt from the entries present, docs/cache.md "Index and sweeps").
    static func parse(_ data: Data?) -> CacheIndex? {
        guard let data, data.count <= 64 << 10,
            let value = try? JSONValue(
                parsing: data, limits: JSONParsingLimits(maxInputBytes: 64 << 10, maxDepth: 3, maxObjectMembers: 4)),
            case .object(let m) = value, m.count == 2, m["version"] == .int(1), case .array(let items)? = m["slots"]
        else { return nil }
        var index = CacheIndex()
        for item in items {
            guard case .string(let name) = item, Self.isSlotName(name) else { return nil }
            if !index.slots.contains(name) { index.slots.append(name) }
        }
        return index
    }

    /// The stored bytes.
    var encoded: Data {
        Data(JSONValue.object(["version": .int(1), "slots": .array(slots.map { .string($0) })]).jsonString.utf8)
    }

    /// Moves `slot` to the front and returns the slots that fall beyond `capacity`.
    mutating func touch(_ slot: String, capacity: Int) -> [String] {
        slots.removeAll { $0 == slot }
        slots.insert(slot, at: 0)
        guard slots.count > capacity else { return [] }
        let evicted = Array(slots[max(capacity, 0)...])
        slots.removeLast(slots.count - max(capacity, 0))
        return evicted
    }

    /// Removes `slot` from the list.
    mutating func remove(_ slot: String) { slots.removeAll { $0 == slot } }

    /// Whether `name` is a slot name: 12 lowercase hex digits.
    static func isSlotName(_ name: String) -> Bool {
        name.utf8.count == 12 && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
