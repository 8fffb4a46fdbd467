/// The data a node reads with `var`: the evaluation's top level, or an item inside `map`,
/// `filter`, `reduce`, `all`, `some`, `none`.
enum LogicData: Sendable {
    /// The context, the targeting key and `$flagd`.
    case root
    /// One value (an array item; `reduce`'s `{current, accumulator}`).
    case item(JSONValue)
}

extension LogicNode {
    /// Evaluates this node over `data`.
    func evaluate(_ data: LogicData, _ env: LogicEnvironment) throws(LogicError) -> JSONValue {
        switch self {
        case .literal(let value):
            return value
        case .array(let nodes):
            var items: [JSONValue] = []
            items.reserveCapacity(nodes.count)
            for node in nodes { items.append(try node.evaluate(data, env)) }
            return .array(items)
        case .variable(let path, let defaultValue):
            if let found = path.read(data, env) { return found }
            return try defaultValue?.evaluate(data, env) ?? .null
        case .conditional(let arguments):
            var index = 0
            let last = arguments.count - 1
            while index < last {
                if LogicCoercion.truthy(try arguments[index].evaluate(data, env)) {
                    return try arguments[index + 1].evaluate(data, env)
                }
                index += 2
            }
            return index < arguments.count ? try arguments[index].evaluate(data, env) : .null
        case .and(let arguments):
            var current: JSONValue = .null
            for argument in arguments {
                current = try argument.evaluate(data, env)
                if !LogicCoercion.truthy(current) { return current }
            }
            return current
        case .or(let arguments):
            var current: JSONValue = .null
            for argument in arguments {
                current = try argument.evaluate(data, env)
                if LogicCoercion.truthy(current) { return current }
            }
            return current
        case .arrayOperation(let operation, let itemsNode, let logic):
            return try Self.arrayOperation(operation, itemsNode, logic, data, env)
        case .reduce(let itemsNode, let logic, let initial):
            guard let itemsNode else { return .null }
            guard case .array(let items) = try itemsNode.evaluate(data, env) else { return initial }
            var accumulator = initial
            for item in items {
                let scope: JSONValue = .object(["current": item, "accumulator": accumulator])
                accumulator = try logic?.evaluate(.item(scope), env) ?? .null
            }
            return accumulator
        case .apply(let op, let nodes):
            var arguments: [JSONValue] = []
            arguments.reserveCapacity(nodes.count)
            for node in nodes { arguments.append(try node.evaluate(data, env)) }
            return try Self.apply(op, arguments, data, env)
        case .binary(let op, let left, let right):
            let a = try left.evaluate(data, env)
            let b = try right.evaluate(data, env)
            switch op {
            case .equal: return .bool(LogicCoercion.looseEquals(a, b))
            case .notEqual: return .bool(!LogicCoercion.looseEquals(a, b))
            case .strictEqual: return .bool(LogicCoercion.strictEquals(a, b))
            case .strictNotEqual: return .bool(!LogicCoercion.strictEquals(a, b))
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return .bool(LogicCoercion.compare(a, b, op))
            case .startsWith, .endsWith:
                guard case .string(let text) = a, case .string(let part) = b else { return .null }
                return .bool(CustomOperators.matches(text, part, suffix: op == .endsWith))
            case .in:
                // The common `in` of a list: no argument array built.
                guard case .array(let items) = b else { return try Self.apply(op, [a, b], data, env) }
                return .bool(items.contains { LogicCoercion.strictEquals(a, $0) })
            default: return try Self.apply(op, [a, b], data, env)
            }
        case .fractional(let plan):
            return try plan.evaluate(data, env)
        case .semVer(let left, let op, let right):
            let value = try left.evaluate(data, env)
            if case .string(let text) = value, let core = SemanticVersion.plainCore(text),
                let holds = right.holds(core, op)
            {
                return .bool(holds)
            }
            guard let version = CustomOperators.version(value) else { return .null }
            return .bool(op.holds(version, right.version))
        case .invalid(let message):
            throw .invalidRule(message)
        }
    }

    private static func arrayOperation(
        _ operation: ArrayOperation, _ itemsNode: LogicNode?, _ logic: LogicNode?, _ data: LogicData,
        _ env: LogicEnvironment
    ) throws(LogicError) -> JSONValue {
        switch operation {
        case .filter:
            guard let itemsNode, let logic else { return .array([]) }
            guard case .array(let items) = try itemsNode.evaluate(data, env) else { return .array([]) }
            var kept: [JSONValue] = []
            for item in items where LogicCoercion.truthy(try logic.evaluate(.item(item), env)) { kept.append(item) }
            return .array(kept)
        case .map:
            guard let itemsNode else { return .array([]) }
            guard case .array(let items) = try itemsNode.evaluate(data, env) else { return .array([]) }
            var mapped: [JSONValue] = []
            mapped.reserveCapacity(items.count)
            for item in items { mapped.append(try logic?.evaluate(.item(item), env) ?? .null) }
            return .array(mapped)
        case .all:
            guard let itemsNode, let logic else { return .bool(false) }
            guard case .array(let items) = try itemsNode.evaluate(data, env), !items.isEmpty else {
                return .bool(false)
            }
            for item in items where !LogicCoercion.truthy(try logic.evaluate(.item(item), env)) { return .bool(false) }
            return .bool(true)
        case .some, .none:
            let none = operation == .none
            guard let itemsNode, let logic else { return .bool(none) }
            guard case .array(let items) = try itemsNode.evaluate(data, env) else { return .bool(none) }
            for item in items where LogicCoercion.truthy(try logic.evaluate(.item(item), env)) { return .bool(!none) }
            return .bool(none)
        }
    }

    /// A segment that is a canonical non-negative decimal (`"0"`, `"12"`; not `"01"`, `"+1"`).
    static func decimalIndex(_ segment: String) -> Int? {
        guard let value = Int(segment), value >= 0, String(value) == segment else { return nil }
        return value
    }
}
