/// One compiled JsonLogic expression: rules are compiled once when definitions are loaded
/// (``LogicNode/compile(_:evaluators:)``) and evaluated many times without parsing JSON.
indirect enum LogicNode: Sendable {
    /// A constant (scalars, objects that are not operations, arrays of constants).
    case literal(JSONValue)
    /// An array whose items are evaluated.
    case array([LogicNode])
    /// `var` with a constant path: its segments split once, and a default.
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
    /// An expression that fails when evaluated: an unknown operator or a `$ref` to no evaluator
    /// (the flag's evaluation reports `PARSE_ERROR`).
    case invalid(String)

    /// The array operators that evaluate logic per item.
    enum ArrayOperation: String, Sendable {
        case filter, map, all, some, none
    }

    /// A `var` path split at its dots, once.
    struct VariablePath: Sendable {
        /// The text as written (`"user.name"`).
        let text: String
        /// The segments (`["user", "name"]`); empty for `""` (the whole data).
        let segments: [String]
    }

    /// The constant this node always evaluates to, if it is one.
    var constant: JSONValue? {
        if case .literal(let value) = self { return value }
        return nil
    }
}
