/// One compiled JsonLogic expression: rules are compiled once when definitions are loaded
/// (``LogicNode/compile(_:evaluators:)``) and evaluated many times without parsing JSON.
indirect enum LogicNode: Sendable {
    /// A constant (scalars, objects that are not operations, arrays of constants).
    case literal(JSONValue)
    /// An array whose items are evaluated.
    case array([LogicNode])
    /// `var` with a constant path: split and classified once (``VariablePath``), and a default.
    case variable(VariablePath, defaultValue: LogicNode?)
    /// `if` / `?:`: condition, value pairs and an optional else.
    case conditional([LogicNode])
    /// `and`: the first falsy value or the last.
    case and([LogicNode])
    /// `or`: the first truthy value or the last.
    case or([LogicNode])
    /// `filter`, `map`, `all`, `some`, `none`: an array expression and the logic applied to each
    /// item (the item is the data inside it).
    case arrayOperation(ArrayOperation, items: LogicNode?, logic: LogicNode?)
    /// `reduce`: items, logic over `current` and `accumulator`, the initial value (taken as
    /// written, not evaluated, as the reference does).
    case reduce(items: LogicNode?, logic: LogicNode?, initial: JSONValue)
    /// An operator applied to its evaluated arguments.
    case apply(LogicOperator, [LogicNode])
    /// A comparison or string test with exactly two arguments (`==`, `<`, `in`,
    /// `starts_with`, ...): the same result as ``apply(_:_:)`` without an argument array.
    case binary(LogicOperator, LogicNode, LogicNode)
    /// `fractional` with constant buckets, summed once (``FractionalPlan``).
    case fractional(FractionalPlan)
    /// `sem_ver` whose operator and second version are constants: the version parsed once;
    /// the first argument is evaluated and parsed per evaluation (a plain version as three
    /// integers, without allocating: ``SemanticVersion/plainCore(_:)``).
    case semVer(LogicNode, SemanticVersionOperator, SemanticVersionOperand)
    /// An expression that fails when evaluated: an unknown operator or a `$ref` to no evaluator
    /// (the flag's evaluation reports `PARSE_ERROR`).
    case invalid(String)

    /// The array operators that evaluate logic per item.
    enum ArrayOperation: String, Sendable {
        case filter, map, all, some, none
    }

    /// Whether evaluating this node may read `$flagd.timestamp` (a `var` of `$flagd`, of the
    /// whole data, or with a computed path): when no rule of a flag can, its evaluation skips
    /// the clock read.
    var mayReadTimestamp: Bool {
        switch self {
        case .literal, .invalid: false
        case .array(let nodes), .conditional(let nodes), .and(let nodes), .or(let nodes):
            nodes.contains { $0.mayReadTimestamp }
        case .variable(let path, let defaultValue):
            path.mayReadTimestamp || (defaultValue?.mayReadTimestamp ?? false)
        case .arrayOperation(_, let items, let logic), .reduce(let items, let logic, _):
            (items?.mayReadTimestamp ?? false) || (logic?.mayReadTimestamp ?? false)
        case .apply(let op, let nodes):
            op == .var || nodes.contains { $0.mayReadTimestamp }
        case .binary(_, let left, let right):
            left.mayReadTimestamp || right.mayReadTimestamp
        case .fractional(let plan):
            plan.key?.mayReadTimestamp ?? false
        case .semVer(let left, _, _):
            left.mayReadTimestamp
        }
    }

    /// The constant this node always evaluates to, if it is one.
    var constant: JSONValue? {
        if case .literal(let value) = self { return value }
        return nil
    }
}
