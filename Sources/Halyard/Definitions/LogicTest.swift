/// A rule's condition compiled to a typed test: what an `if` asks of its condition is only
/// whether it is truthy, so the shapes flagd documents are written with (an attribute compared
/// with a constant, `in` a list of strings, `starts_with`, `sem_ver`, joined by `and` and `or`)
/// are answered without building a `JSONValue` per operator (docs/definitions.md, "Evaluation
/// cost").
///
/// **Contract:** ``holds(_:_:_:)`` is `LogicCoercion.truthy(node.evaluate(.root, env))` of the
/// node the test was compiled from, `env` being
/// ``LogicEnvironment/init(_:flagKey:timestamp:)`` of the same inputs, errors included and
/// thrown in the same order. Each typed case answers only the inputs whose answer it can read
/// off directly (an attribute that is a string, a number, or absent); any other value of the
/// attribute is handed to the compiled node it keeps (`fallback`), so an odd context costs what
/// it cost before, never a different answer. `VariantRuleTests` checks the contract on every
/// typed shape and on generated rules and contexts.
indirect enum LogicTest: Sendable {
    /// A condition that never reads the data (a constant, after JsonLogic's truthiness).
    case constant(Bool)
    /// `and` with at least one argument: every test holds (the first that does not stops).
    case all([LogicTest])
    /// `or`: some test holds (the first that does stops); none for no argument.
    case any([LogicTest])
    /// `!`: the test does not hold.
    case not(LogicTest)
    /// `==`/`===` (or `!=`/`!==` when `negated`) between an attribute and a string constant.
    case stringEquals(Operand, String, negated: Bool, fallback: LogicNode)
    /// `<`, `<=`, `>`, `>=`, `==`, `!=` between an attribute (on the left, the operator flipped
    /// when it was written on the right) and a number constant.
    case numberCompare(Operand, LogicOperator, LogicCoercion.Number, fallback: LogicNode)
    /// `in` with an attribute and a constant list: its string items, and whether null is one.
    case stringIn(Operand, [String], containsNull: Bool, fallback: LogicNode)
    /// `starts_with` (or `ends_with`) with an attribute and a string constant.
    case stringMatch(Operand, String, suffix: Bool, fallback: LogicNode)
    /// `sem_ver` of an attribute against a constant version.
    case semVer(Operand, SemanticVersionOperator, SemanticVersionOperand, fallback: LogicNode)
    /// Any other condition: evaluated, then its truthiness.
    case node(LogicNode)

    /// What a typed test reads: a context attribute named by a one-segment `var` without a
    /// default, or the targeting key.
    enum Operand: Sendable {
        /// The context attribute of this name (byte-exact).
        case attribute(AttributeName)
        /// `targetingKey` (null when empty).
        case targetingKey

        /// The operand's value: nil when absent or null, as a `var` without a default reads
        /// both as null.
        @inline(__always)
        func read(_ context: EvaluationContext) -> JSONValue? {
            switch self {
            case .attribute(let name):
                let value = LogicEnvironment.attribute(name, in: context.attributes)
                if case .null? = value { return nil }
                return value
            case .targetingKey:
                let key = context.targetingKey
                return key.isEmpty ? nil : .string(key)
            }
        }

        /// The operand a node reads, if it is one: `{"var": "name"}` (one segment, no default).
        init?(_ node: LogicNode) {
            guard case .variable(let path, nil) = node, path.restStart == path.segments.count else { return nil }
            switch path.head {
            case .attribute(let name): self = .attribute(AttributeName(name))
            case .targetingKey: self = .targetingKey
            case .whole, .flagd, .flagdFlagKey, .flagdTimestamp: return nil
            }
        }
    }

    /// Whether the condition holds for `context` (the truthiness of the node it was compiled
    /// from). The inputs are passed as they are (``VariantRule/outcome(_:_:_:_:)``).
    func holds(_ context: EvaluationContext, _ flagKey: String, _ timestamp: Int64) throws(LogicError) -> Bool {
        switch self {
        case .constant(let value):
            return value
        case .all(let tests):
            // By index: the element is borrowed in place, where `for in` copies (retains) it.
            for index in tests.indices where !(try tests[index].holds(context, flagKey, timestamp)) { return false }
            return true
        case .any(let tests):
            for index in tests.indices where try tests[index].holds(context, flagKey, timestamp) { return true }
            return false
        case .not(let test):
            return !(try test.holds(context, flagKey, timestamp))
        case .stringEquals(let operand, let constant, let negated, let fallback):
            switch operand.read(context) {
            case .string(let text)?: return LogicCoercion.stringsEqual(text, constant) != negated
            case nil: return negated  // null equals no string, loosely or strictly
            default: return try Self.truthy(fallback, context, flagKey, timestamp)
            }
        case .numberCompare(let operand, let op, let constant, let fallback):
            let value: LogicCoercion.Number
            switch operand.read(context) {
            case .int(let i)?: value = .int(i)
            case .double(let d)?: value = .double(d)
            case nil: value = .int(0)  // null is 0 against a number, for the order and for `==`
            default: return try Self.truthy(fallback, context, flagKey, timestamp)
            }
            return Self.compare(value, op, constant)
        case .stringIn(let operand, let items, let containsNull, let fallback):
            switch operand.read(context) {
            case .string(let text)?: return items.contains { LogicCoercion.stringsEqual(text, $0) }
            case nil: return containsNull
            default: return try Self.truthy(fallback, context, flagKey, timestamp)
            }
        case .stringMatch(let operand, let part, let suffix, let fallback):
            switch operand.read(context) {
            case .string(let text)?: return CustomOperators.matches(text, part, suffix: suffix)
            case nil: return false  // not a string: null, which is falsy
            default: return try Self.truthy(fallback, context, flagKey, timestamp)
            }
        case .semVer(let operand, let op, let right, let fallback):
            if case .string(let text)? = operand.read(context), let core = SemanticVersion.plainCore(text),
                let holds = right.holds(core, op)
            {
                return holds
            }
            return try Self.truthy(fallback, context, flagKey, timestamp)
        case .node(let node):
            return try Self.truthy(node, context, flagKey, timestamp)
        }
    }

    /// The truthiness of `node` evaluated at the top level (the environment built here: the
    /// typed cases never need one).
    @inline(never)
    private static func truthy(_ node: LogicNode, _ context: EvaluationContext, _ flagKey: String, _ timestamp: Int64)
        throws(LogicError) -> Bool
    {
        LogicCoercion.truthy(
            try node.evaluate(.root, LogicEnvironment(context, flagKey: flagKey, timestamp: timestamp)))
    }

    /// `value op constant` as ``LogicCoercion/compare(_:_:_:)`` and
    /// ``LogicCoercion/looseEquals(_:_:)`` answer it for two numbers.
    private static func compare(_ value: LogicCoercion.Number, _ op: LogicOperator, _ constant: LogicCoercion.Number)
        -> Bool
    {
        switch op {
        case .equal: return LogicCoercion.numbersEqual(value, constant)
        case .notEqual: return !LogicCoercion.numbersEqual(value, constant)
        default:
            if value.isNaN || constant.isNaN { return false }
            switch op {
            case .less: return LogicCoercion.numberLess(value, constant)
            case .lessOrEqual:
                return LogicCoercion.numberLess(value, constant) || LogicCoercion.numbersEqual(value, constant)
            case .greater: return LogicCoercion.numberLess(constant, value)
            default: return LogicCoercion.numberLess(constant, value) || LogicCoercion.numbersEqual(value, constant)
            }
        }
    }
}

extension LogicTest {
    /// The test of `node`'s truthiness: typed where the node has one of the shapes above, else
    /// ``node(_:)``.
    init(_ node: LogicNode) {
        switch node {
        case .literal(let value):
            self = .constant(LogicCoercion.truthy(value))
        case .and(let arguments) where !arguments.isEmpty:
            self = .all(arguments.map(LogicTest.init))
        case .or(let arguments):
            self = .any(arguments.map(LogicTest.init))
        case .apply(.not, let arguments) where arguments.count == 1:
            self = .not(LogicTest(arguments[0]))
        case .apply(.truthy, let arguments) where arguments.count == 1:
            self = LogicTest(arguments[0])
        case .binary(let op, let left, let right):
            self = Self.binary(op, left, right, node) ?? .node(node)
        case .semVer(let left, let op, let right):
            if let operand = Operand(left) {
                self = .semVer(operand, op, right, fallback: node)
            } else {
                self = .node(node)
            }
        default:
            self = .node(node)
        }
    }

    /// A typed test of a two-argument operator between an operand and a constant, or nil.
    private static func binary(_ op: LogicOperator, _ left: LogicNode, _ right: LogicNode, _ node: LogicNode)
        -> LogicTest?
    {
        // The operand on either side, the constant on the other (`in` and the string tests
        // only with the operand first).
        let operand: Operand
        let constant: JSONValue
        let flipped: Bool
        if let o = Operand(left), let c = right.constant {
            (operand, constant, flipped) = (o, c, false)
        } else if let o = Operand(right), let c = left.constant {
            (operand, constant, flipped) = (o, c, true)
        } else {
            return nil
        }
        switch (op, constant) {
        case (.equal, .string(let text)), (.strictEqual, .string(let text)):
            return .stringEquals(operand, text, negated: false, fallback: node)
        case (.notEqual, .string(let text)), (.strictNotEqual, .string(let text)):
            return .stringEquals(operand, text, negated: true, fallback: node)
        case (.equal, .int), (.equal, .double), (.notEqual, .int), (.notEqual, .double):
            return .numberCompare(operand, op, LogicCoercion.number(constant), fallback: node)
        case (.less, .int), (.less, .double), (.lessOrEqual, .int), (.lessOrEqual, .double),
            (.greater, .int), (.greater, .double), (.greaterOrEqual, .int), (.greaterOrEqual, .double):
            let written: LogicOperator =
                switch op {
                case .less where flipped: .greater
                case .lessOrEqual where flipped: .greaterOrEqual
                case .greater where flipped: .less
                case .greaterOrEqual where flipped: .lessOrEqual
                default: op
                }
            return .numberCompare(operand, written, LogicCoercion.number(constant), fallback: node)
        case (.in, .array(let items)) where !flipped:
            let strings = items.compactMap { item -> String? in
                if case .string(let text) = item { return text }
                return nil
            }
            let containsNull = items.contains { if case .null = $0 { true } else { false } }
            return .stringIn(operand, strings, containsNull: containsNull, fallback: node)
        case (.startsWith, .string(let part)) where !flipped:
            return .stringMatch(operand, part, suffix: false, fallback: node)
        case (.endsWith, .string(let part)) where !flipped:
            return .stringMatch(operand, part, suffix: true, fallback: node)
        default:
            return nil
        }
    }
}
