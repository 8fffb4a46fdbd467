extension LogicNode {
    /// The most nodes one rule may have once its `$ref`s are expanded.
    static let maxCompiledNodes = 100_000
    /// The deepest one rule may nest once its `$ref`s are expanded (evaluation recurses this
    /// deep, on whatever thread reads).
    static let maxCompiledDepth = 128

    /// Compiles a JsonLogic rule written as JSON. `$ref` objects (`{"$ref": "name"}`) are
    /// replaced by the named shared evaluator (compiled in place; a missing name or a cycle
    /// becomes an ``invalid(_:)`` node). Unknown operators compile to ``invalid(_:)`` too: the
    /// reference reports them only when they are evaluated, so an unused branch never fails.
    /// Nil when the expanded rule exceeds ``maxCompiledNodes`` or ``maxCompiledDepth`` (a
    /// chain of evaluators that doubles at each step would otherwise cost exponential memory
    /// and time).
    static func compile(_ json: JSONValue, evaluators: [String: JSONValue]) -> LogicNode? {
        var compiler = Compiler(evaluators: evaluators)
        let node = compiler.compile(json, depth: 0)
        return compiler.exceeded ? nil : node
    }

    /// One rule's compilation: the `$ref`s being expanded and the budget spent.
    private struct Compiler {
        let evaluators: [String: JSONValue]
        var resolving: [String] = []
        var nodes = 0
        var exceeded = false

        mutating func compile(_ json: JSONValue, depth: Int) -> LogicNode {
            nodes += 1
            guard !exceeded, nodes <= LogicNode.maxCompiledNodes, depth <= LogicNode.maxCompiledDepth else {
                exceeded = true
                return .invalid("the rule is too large")
            }
            switch json {
            case .array(let items):
                var compiled: [LogicNode] = []
                compiled.reserveCapacity(items.count)
                for item in items { compiled.append(compile(item, depth: depth + 1)) }
                let constants = compiled.compactMap(\.constant)
                return constants.count == compiled.count ? .literal(.array(constants)) : .array(compiled)
            case .object(let members) where members.count == 1:
                let (name, rawArguments) = members.first!
                if name == "$ref", case .string(let target) = rawArguments {
                    guard let rule = evaluators[target] else {
                        return .invalid("$ref to an evaluator that does not exist: \(target)")
                    }
                    guard !resolving.contains(target) else {
                        return .invalid("$ref cycle through evaluator \(target)")
                    }
                    resolving.append(target)
                    defer { resolving.removeLast() }
                    return compile(rule, depth: depth + 1)
                }
                let rawList: [JSONValue]
                if case .array(let list) = rawArguments { rawList = list } else { rawList = [rawArguments] }
                var arguments: [LogicNode] = []
                arguments.reserveCapacity(rawList.count)
                for raw in rawList { arguments.append(compile(raw, depth: depth + 1)) }
                return LogicNode.compileOperation(name, arguments: arguments, rawArguments: rawList)
            default:
                return .literal(json)
            }
        }
    }

    /// The operators compiled to ``binary(_:_:_:)`` when written with two arguments.
    static let binaryOperators: Set<LogicOperator> = [
        .equal, .notEqual, .strictEqual, .strictNotEqual, .less, .lessOrEqual, .greater, .greaterOrEqual, .in,
        .startsWith, .endsWith,
    ]

    fileprivate static func compileOperation(_ name: String, arguments: [LogicNode], rawArguments: [JSONValue])
        -> LogicNode
    {
        switch name {
        case "if", "?:": return .conditional(arguments)
        case "and": return .and(arguments)
        case "or": return .or(arguments)
        case "filter", "map", "all", "some", "none":
            let operation = ArrayOperation(rawValue: name)!
            return .arrayOperation(
                operation, items: arguments.first, logic: arguments.count > 1 ? arguments[1] : nil)
        case "reduce":
            return .reduce(
                items: arguments.first, logic: arguments.count > 1 ? arguments[1] : nil,
                initial: rawArguments.count > 2 ? rawArguments[2] : .null)
        case "var":
            let defaultValue = arguments.count > 1 ? arguments[1] : nil
            switch arguments.first?.constant {
            case nil where arguments.isEmpty, .some(.null):
                return .variable(VariablePath(text: ""), defaultValue: defaultValue)
            case .some(.string(let text)):
                return .variable(VariablePath(text: text), defaultValue: defaultValue)
            default:
                return .apply(.var, arguments)
            }
        default:
            guard let op = LogicOperator(rawValue: name) else {
                return .invalid("unknown operator: \(name)")
            }
            if arguments.count == 2, binaryOperators.contains(op) { return .binary(op, arguments[0], arguments[1]) }
            if op == .fractional, let plan = FractionalPlan(arguments) { return .fractional(plan) }
            if op == .semVer, arguments.count == 3, case .string(let text)? = arguments[1].constant,
                let comparison = SemanticVersionOperator(rawValue: text),
                let right = arguments[2].constant.flatMap(CustomOperators.version)
            {
                return .semVer(arguments[0], comparison, SemanticVersionOperand(right))
            }
            return .apply(op, arguments)
        }
    }
}
