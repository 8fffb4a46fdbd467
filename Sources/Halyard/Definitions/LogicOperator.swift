/// The operators a compiled rule applies to its evaluated arguments: JsonLogic's (as the flagd
/// reference evaluator has them) and flagd's custom ones. The lazy ones (`if`, `and`, `or`, the
/// array operators) are nodes of their own in ``LogicNode``.
enum LogicOperator: String, Sendable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case strictEqual = "==="
    case strictNotEqual = "!=="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case not = "!"
    case truthy = "!!"
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
    case min
    case max
    case cat
    case substr
    case `in`
    case merge
    case missing
    case missingSome = "missing_some"
    case log
    case `var`
    case fractional
    case semVer = "sem_ver"
    case startsWith = "starts_with"
    case endsWith = "ends_with"
}
