// One attribute found in a context's dictionary storage by its name's words: what a compiled
// rule's attribute read does (docs/definitions.md, "Evaluation cost").

extension AttributeBuckets {
    /// What ``lookup(_:smallName:_:)`` found.
    enum Lookup {
        /// The attribute's value (a copy).
        case found(JSONValue)
        /// No attribute has the name.
        case absent
        /// The storage does not read as the layout checked: the caller looks up as usual.
        case unreadable
    }

    /// The attribute named `name`, whose small-form words (``StringLayout/smallWords(_:)``) are
    /// `words`, found by walking `attributes`' buckets in place (``walk(_:prefetch:_:)``: its
    /// checks, without the prefetch) and comparing each name's two words with `words`:
    /// - equal words: the same name (equal contents in the small form have equal words);
    /// - a small name with other words: another name, rejected without reading its bytes;
    /// - a name in another form (a heap string, which may hold the same bytes): compared byte
    ///   for byte (code points, not canonical equivalence, as flagd compares names).
    ///
    /// Only when ``available`` and `words` are a small string's (the caller checks both once,
    /// when the rule is compiled).
    @inline(__always)
    static func lookup(_ attributes: [String: JSONValue], smallName words: (UInt64, UInt64), _ name: String)
        -> Lookup
    {
        #if os(Linux)
            if attributes.isEmpty { return .absent }
            return withExtendedLifetime(attributes) { () -> Lookup in
                var found: JSONValue?
                let readable = walk(attributes, prefetch: false) { key, value in
                    let k0 = key.load(as: UInt64.self)
                    let k1 = key.load(fromByteOffset: 8, as: UInt64.self)
                    let same: Bool
                    if k0 == words.0, k1 == words.1 {
                        same = true
                    } else if StringLayout.isSmall(k1) {
                        same = false
                    } else {
                        let other = key.assumingMemoryBound(to: String.self).pointee
                        same = other.utf8.count == name.utf8.count && other.utf8.elementsEqual(name.utf8)
                    }
                    if same { found = value.pointee }
                    return !same
                }
                guard readable else { return .unreadable }
                return found.map(Lookup.found) ?? .absent
            }
        #else
            return .unreadable
        #endif
    }
}
