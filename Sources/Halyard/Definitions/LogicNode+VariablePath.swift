extension LogicNode {
    /// A `var` path, split at its dots and classified once when the rule is compiled
    /// (docs/definitions.md, "Evaluation cost"): what its first segments name at the top level
    /// (an attribute, `targetingKey`, `$flagd`, `$flagd.flagKey`, `$flagd.timestamp`, the whole
    /// data) is decided here, and each later segment knows whether it is `length` or an index.
    /// A read then compares no name with `$flagd` or `targetingKey`, builds no `$flagd`
    /// object, and parses no index. A computed path (`{"var": {"cat": …}}`) is classified the
    /// same way at each evaluation, so both read alike.
    struct VariablePath: Sendable {
        /// The text as written (`"user.name"`).
        let text: String
        /// The segments (`user`, `name`); empty for `""` (the whole data).
        let segments: [Segment]
        /// What the path starts with at the top level of the data.
        let head: Head
        /// The first of ``segments`` read after ``head`` at the top level.
        let restStart: Int

        /// One segment of a path.
        struct Segment: Sendable {
            /// The name, as written (a member of an object).
            let name: String
            /// The name read as an array or string index: a canonical non-negative decimal
            /// (`"0"`, `"12"`; not `"01"`, `"+1"`).
            let index: Int?
            /// Whether the name is `length` (an array's or string's length).
            let isLength: Bool

            init(_ name: String) {
                self.name = name
                index = LogicNode.decimalIndex(name)
                isLength = LogicCoercion.stringsEqual(name, "length")
            }
        }

        /// What a path's first segments read at the top level of the data (names compared byte
        /// for byte, as flagd does).
        enum Head: Sendable, Equatable {
            /// No segment: the whole data (attributes, `targetingKey`, `$flagd`).
            case whole
            /// The context attribute of this name.
            case attribute(String)
            /// `targetingKey`.
            case targetingKey
            /// `$flagd` (alone, or followed by a name that is neither of the two below).
            case flagd
            /// `$flagd.flagKey`.
            case flagdFlagKey
            /// `$flagd.timestamp`.
            case flagdTimestamp
        }

        /// The path `text`, split at its dots (`""` is the whole data).
        init(text: String) {
            let names =
                text.isEmpty ? [] : text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            self.init(text: text, names: names)
        }

        init(text: String, names: [String]) {
            self.text = text
            segments = names.map(Segment.init)
            switch names.first {
            case nil:
                (head, restStart) = (.whole, 0)
            case let first? where LogicCoercion.stringsEqual(first, "$flagd"):
                if names.count > 1, LogicCoercion.stringsEqual(names[1], "flagKey") {
                    (head, restStart) = (.flagdFlagKey, 2)
                } else if names.count > 1, LogicCoercion.stringsEqual(names[1], "timestamp") {
                    (head, restStart) = (.flagdTimestamp, 2)
                } else {
                    (head, restStart) = (.flagd, 1)
                }
            case let first? where LogicCoercion.stringsEqual(first, "targetingKey"):
                (head, restStart) = (.targetingKey, 1)
            case let first?:
                (head, restStart) = (.attribute(first), 1)
            }
        }

        /// Whether reading this path at the top level may read `$flagd.timestamp`.
        var mayReadTimestamp: Bool {
            switch head {
            case .whole, .flagd, .flagdTimestamp: true
            case .attribute, .targetingKey, .flagdFlagKey: false
            }
        }

        /// The value at this path in `data`: nil when absent or null (the caller then takes the
        /// default). Arrays and strings take decimal indexes and `length`, as in the reference.
        @inline(__always)
        func read(_ data: LogicData, _ env: LogicEnvironment) -> JSONValue? {
            switch data {
            case .root:
                let top: JSONValue?
                switch head {
                case .attribute(let name):
                    // The common case (`{"var": "plan"}`): one attribute read, no walk.
                    top = env.attribute(name)
                    if restStart == segments.count {
                        if case .null? = top { return nil }
                        return top
                    }
                case .targetingKey: top = env.targetingKeyValue
                case .flagdFlagKey: top = .string(env.flagKey)
                case .flagdTimestamp: top = .int(env.timestamp)
                case .flagd: top = env.flagdObject
                case .whole: top = env.rootObject
                }
                guard let top else { return nil }
                return Self.walk(top, segments[restStart...])
            case .item(let value):
                // The item itself (`""`) as it is, null included, as the reference has it.
                if segments.isEmpty { return value }
                return Self.walk(value, segments[...])
            }
        }

        /// `segments` read from `value` one after the other.
        private static func walk(_ value: JSONValue, _ segments: ArraySlice<Segment>) -> JSONValue? {
            var current = value
            for segment in segments {
                switch current {
                case .object(let members):
                    guard let next = LogicCoercion.exactValue(members, segment.name) else { return nil }
                    current = next
                case .array(let items):
                    if segment.isLength { return .int(Int64(items.count)) }
                    guard let index = segment.index, index < items.count else { return nil }
                    current = items[index]
                case .string(let text):
                    if segment.isLength { return .int(Int64(text.unicodeScalars.count)) }
                    guard let index = segment.index else { return nil }
                    var scalars = text.unicodeScalars.makeIterator()
                    for _ in 0..<index where scalars.next() == nil { return nil }
                    guard let scalar = scalars.next() else { return nil }
                    current = .string(String(scalar))
                default:
                    return nil
                }
            }
            if case .null = current { return nil }
            return current
        }
    }
}
